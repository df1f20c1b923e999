// The plan of CUDA graphs for decode steps (kernels/cuda/decode_graphs.hpp): which steps
// replay a graph, of what shape, and the padded batch the graph reads. Host arithmetic: runs
// without a device.
#include "kernels/cuda/decode_graphs.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace actorllm::cuda {
namespace {

/// A decode step over `seq_lens`, each sequence with its own blocks (table width `width`).
struct decode_step {
  std::vector<int32_t> tokens, positions, query_start_loc{0}, seq_lens, tables, logits;
  std::vector<int64_t> slots;
  step_rows view;

  decode_step(std::vector<int32_t> lens, int64_t width, int64_t block_size = 16) : seq_lens(lens) {
    int32_t next_block = 1;
    for (size_t s = 0; s < lens.size(); ++s) {
      tokens.push_back(100 + static_cast<int32_t>(s));
      positions.push_back(lens[s] - 1);
      query_start_loc.push_back(static_cast<int32_t>(s + 1));
      logits.push_back(static_cast<int32_t>(s));
      for (int64_t b = 0; b < width; ++b)
        tables.push_back(b < (lens[s] + block_size - 1) / block_size ? next_block++ : 0);
      slots.push_back(int64_t(tables[s * width + (lens[s] - 1) / block_size]) * block_size +
                      (lens[s] - 1) % block_size);
    }
    view.token_ids = tokens.data();
    view.positions = positions.data();
    view.slot_mapping = slots.data();
    view.query_start_loc = query_start_loc.data();
    view.seq_lens = seq_lens.data();
    view.block_tables = tables.data();
    view.logits_indices = logits.data();
    view.num_tokens = view.num_seqs = view.num_logits = static_cast<int64_t>(lens.size());
    view.max_blocks_per_seq = width;
  }
};

TEST(decode_graphs, batch_sizes_are_vllms_capture_list) {
  const std::vector<std::pair<int64_t, int64_t>> sizes = {
      {1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {8, 8}, {9, 16}, {17, 24}, {250, 256}, {256, 256}};
  for (auto [n, want] : sizes) EXPECT_EQ(graph_batch_size(n, 256), want) << n;
  EXPECT_EQ(graph_batch_size(257, 256), 0);
  EXPECT_EQ(graph_batch_size(1, 0), 0);     // --enforce-eager
  EXPECT_EQ(graph_batch_size(19, 20), 20);  // past the last multiple of 8: the limit itself
  EXPECT_EQ(graph_batch_size(0, 256), 0);
  EXPECT_EQ(graph_table_width(1), 16);
  EXPECT_EQ(graph_table_width(16), 16);
  EXPECT_EQ(graph_table_width(17), 32);
  EXPECT_EQ(graph_table_width(500), 512);
}

TEST(decode_graphs, only_plain_decode_steps_within_the_limits_replay) {
  const decode_graph_limits limits{64, 4096};
  decode_step step({5, 300, 17}, 32);
  const decode_graph_shape shape = decode_graph_shape_of(step.view, 16, limits);
  EXPECT_EQ(shape.num_seqs, 4);
  EXPECT_EQ(shape.blocks_per_seq, 32);                                     // 300 tokens: 19 blocks
  EXPECT_EQ(decode_graph_shape_of(step.view, 16, {0, 4096}).num_seqs, 0);  // eager
  EXPECT_EQ(decode_graph_shape_of(step.view, 16, {64, 299}).num_seqs, 0);  // context too long
  EXPECT_EQ(decode_graph_shape_of(step.view, 16, {2, 4096}).num_seqs, 0);  // batch too large

  decode_step prefill({5, 300, 17}, 32);
  prefill.query_start_loc = {0, 1, 3, 4};  // a two-token query
  prefill.view.num_tokens = 4;
  EXPECT_EQ(decode_graph_shape_of(prefill.view, 16, limits).num_seqs, 0);
  decode_step unsampled({5, 300, 17}, 32);
  unsampled.view.num_logits = 2;  // a row that does not sample
  EXPECT_EQ(decode_graph_shape_of(unsampled.view, 16, limits).num_seqs, 0);
  decode_step embedding({5, 300, 17}, 32);
  const std::vector<int32_t> hidden_rows = {0};
  embedding.view.hidden_indices = hidden_rows.data();  // final hidden states are wanted
  embedding.view.num_hidden = 1;
  EXPECT_EQ(decode_graph_shape_of(embedding.view, 16, limits).num_seqs, 0);
  decode_step reordered({5, 300, 17}, 32);
  reordered.logits = {0, 2, 1};
  EXPECT_EQ(decode_graph_shape_of(reordered.view, 16, limits).num_seqs, 0);
}

TEST(decode_graphs, padding_rows_have_no_context_and_write_no_slot) {
  decode_step step({5, 300, 17}, 40);
  const decode_graph_shape shape{8, 32};
  const padded_decode_batch padded(step.view, shape, 16);
  const step_rows& p = padded.view();
  ASSERT_EQ(p.num_seqs, 8);
  EXPECT_EQ(p.num_tokens, 8);
  EXPECT_EQ(p.num_logits, 8);
  EXPECT_EQ(p.max_blocks_per_seq, 32);
  for (int64_t s = 0; s < 8; ++s) {
    EXPECT_EQ(p.query_start_loc[s], s);
    EXPECT_EQ(p.logits_indices[s], s);
  }
  EXPECT_EQ(p.query_start_loc[8], 8);
  for (int64_t s = 0; s < 3; ++s) {
    EXPECT_EQ(p.token_ids[s], step.tokens[s]);
    EXPECT_EQ(p.positions[s], step.positions[s]);
    EXPECT_EQ(p.seq_lens[s], step.seq_lens[s]);
    EXPECT_EQ(p.slot_mapping[s], step.slots[s]);
    const int64_t used = (step.seq_lens[s] + 15) / 16;
    for (int64_t b = 0; b < 32; ++b)
      EXPECT_EQ(p.block_tables[s * 32 + b], b < used ? step.tables[s * 40 + b] : 0)
          << s << " " << b;
  }
  for (int64_t s = 3; s < 8; ++s) {
    EXPECT_EQ(p.token_ids[s], 0);
    EXPECT_EQ(p.positions[s], 0);
    EXPECT_EQ(p.seq_lens[s], 0);
    EXPECT_EQ(p.slot_mapping[s], -1);
    for (int64_t b = 0; b < 32; ++b) EXPECT_EQ(p.block_tables[s * 32 + b], 0);
  }
  EXPECT_THROW(padded_decode_batch(step.view, {2, 32}, 16), std::invalid_argument);
  EXPECT_THROW(padded_decode_batch(step.view, {8, 16}, 16), std::invalid_argument);  // 19 blocks
}

}  // namespace
}  // namespace actorllm::cuda
