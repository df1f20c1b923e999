// Paged attention on the device against the CPU reference: decode through v1, v2 and the
// automatic choice; prefill with varlen, chunked-prefill and decode rows mixed; grouped-query
// heads (group sizes 1 to 16), head_dim 8 to 256, block sizes 16 and 32, contexts of 1 to 2000
// tokens, blocks scattered over the cache.
#include "kernels/cuda/paged_attention.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "kernels/cpu/ops.hpp"
#include "kernels/cuda/paged_attention_decode.cuh"
#include "kernels/cuda/paged_attention_prefill.cuh"
#include "tests/cuda/cuda_test_util.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

struct attention_case {
  int num_heads, num_kv_heads, head_dim, block_size;
  std::vector<std::pair<int, int>> seqs;  // (query length, context length incl. the query)
  int window = 0;                         // sliding window (0: none)
  float softcap = 0.0f;                   // score soft-capping (0: none)
};

enum class mode { prefill, prefill_tc, decode_v1, decode_v2, decode_auto, dispatch, split };

const char* mode_name(mode m) {
  switch (m) {
    case mode::prefill:
      return "prefill";
    case mode::prefill_tc:
      return "prefill_tc";
    case mode::decode_v1:
      return "decode_v1";
    case mode::decode_v2:
      return "decode_v2";
    case mode::decode_auto:
      return "decode_auto";
    case mode::dispatch:
      return "dispatch";
    case mode::split:
      return "split";
  }
  return "?";
}

/// Builds a random cache and batch for `c`, runs the CPU reference and the device op in mode
/// `m`, and compares. A float8 cache holds values on E4M3's grid, which the reference reads as
/// floats: the device must widen each byte to exactly that value.
void check_case(const attention_case& c, dtype t, mode m, uint32_t seed,
                kv_format cache = kv_format::activations) {
  std::mt19937 rng(seed);
  const int num_seqs = static_cast<int>(c.seqs.size());
  std::vector<int32_t> query_start_loc{0}, seq_lens;
  int max_blocks = 1, total_blocks = 3, max_query_len = 0, max_seq_len = 0;
  for (auto [q_len, seq_len] : c.seqs) {
    query_start_loc.push_back(query_start_loc.back() + q_len);
    seq_lens.push_back(seq_len);
    const int blocks = (seq_len + c.block_size - 1) / c.block_size;
    max_blocks = std::max(max_blocks, blocks);
    total_blocks += blocks;
    max_query_len = std::max(max_query_len, q_len);
    max_seq_len = std::max(max_seq_len, seq_len);
  }
  const int num_tokens = query_start_loc.back();
  // Blocks scattered over the cache in random order; unused table entries point at block 0.
  std::vector<int32_t> ids(total_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<int32_t> block_tables(size_t(num_seqs) * max_blocks, 0);
  size_t next = 0;
  for (int s = 0; s < num_seqs; ++s)
    for (int b = 0; b < (seq_lens[s] + c.block_size - 1) / c.block_size; ++b)
      block_tables[size_t(s) * max_blocks + b] = ids[next++];
  std::vector<int32_t> device_tables = block_tables;
  if (c.window > 0) {
    // Blocks wholly before the first query's window may have been freed: the device table
    // names a block far past the cache there, so that a kernel reading one faults.
    for (int s = 0; s < num_seqs; ++s) {
      const int first_query = seq_lens[s] - (query_start_loc[s + 1] - query_start_loc[s]);
      const int first_key = std::max(0, first_query - c.window + 1);
      for (int b = 0; b < first_key / c.block_size; ++b)
        device_tables[size_t(s) * max_blocks + b] = 1 << 28;
    }
  }

  const size_t cache_elems = size_t(total_blocks) * c.num_kv_heads * c.block_size * c.head_dim;
  auto k_cache = random_floats(cache_elems, rng), v_cache = random_floats(cache_elems, rng);
  auto q = random_floats(size_t(num_tokens) * c.num_heads * c.head_dim, rng);
  for (auto* v : {&k_cache, &v_cache, &q}) round_to(*v, t);
  if (cache == kv_format::fp8_e4m3)
    for (auto* v : {&k_cache, &v_cache}) round_to_e4m3(*v);
  const float scale = 1.0f / std::sqrt(float(c.head_dim));

  std::vector<float> expected(q.size());
  const cpu::paged_batch cpu_batch{query_start_loc.data(), seq_lens.data(), block_tables.data(),
                                   num_seqs, max_blocks};
  cpu::attention_options options;
  options.scale = scale;
  options.sliding_window = c.window;
  options.softcap = c.softcap;
  cpu::paged_attention(q.data(), k_cache.data(), v_cache.data(), cpu_batch, c.num_heads,
                       c.num_kv_heads, c.head_dim, c.block_size, options, expected.data());

  const auto cache_bytes = [&](const std::vector<float>& values) {
    return cache == kv_format::fp8_e4m3 ? to_e4m3(values) : to_storage(values, t);
  };
  device_tensor d_q(q, t), d_out(q.size(), t);
  const device_buffer d_k = upload(cache_bytes(k_cache)), d_v = upload(cache_bytes(v_cache));
  auto d_qsl = upload(query_start_loc), d_seq_lens = upload(seq_lens),
       d_tables = upload(device_tables);
  paged_batch batch;
  batch.query_start_loc = d_qsl.as<int32_t>();
  batch.seq_lens = d_seq_lens.as<int32_t>();
  batch.block_tables = d_tables.as<int32_t>();
  batch.num_seqs = num_seqs;
  batch.max_blocks_per_seq = max_blocks;
  batch.num_tokens = num_tokens;
  batch.max_query_len = max_query_len;
  batch.max_seq_len = max_seq_len;
  batch.sliding_window = c.window;
  batch.softcap = c.softcap;
  batch.cache = cache;
  d_out.poison();
  const auto decode = [&](decode_path path) {
    paged_attention_decode(d_q.get(), d_k.get(), d_v.get(), batch, c.num_heads, c.num_kv_heads,
                           c.head_dim, c.block_size, scale, d_out.get(), t, nullptr, path);
  };
  switch (m) {
    case mode::prefill:
      paged_attention_prefill(d_q.get(), d_k.get(), d_v.get(), batch, c.num_heads, c.num_kv_heads,
                              c.head_dim, c.block_size, scale, d_out.get(), t, nullptr,
                              prefill_path::cuda_cores);
      break;
    case mode::prefill_tc:
      paged_attention_prefill(d_q.get(), d_k.get(), d_v.get(), batch, c.num_heads, c.num_kv_heads,
                              c.head_dim, c.block_size, scale, d_out.get(), t, nullptr,
                              prefill_path::tensor_cores);
      break;
    case mode::decode_v1:
      decode(decode_path::v1);
      break;
    case mode::decode_v2:
      decode(decode_path::v2);
      break;
    case mode::decode_auto:
      decode(decode_path::automatic);
      break;
    case mode::dispatch:
      paged_attention(d_q.get(), d_k.get(), d_v.get(), batch, c.num_heads, c.num_kv_heads,
                      c.head_dim, c.block_size, scale, d_out.get(), t, nullptr);
      break;
    case mode::split:
      paged_attention(
          d_q.get(), d_k.get(), d_v.get(), batch,
          split_decode_prefix(batch, query_start_loc.data(), seq_lens.data(), c.head_dim),
          c.num_heads, c.num_kv_heads, c.head_dim, c.block_size, scale, d_out.get(), t, nullptr);
      break;
  }
  sync_device();
  const tolerance tol = t == dtype::f32 ? tolerance{2e-5f, 1e-4f} : default_tolerance(t);
  const std::vector<float> got = d_out.download();
  if (m == mode::prefill_tc) {
    // Relative to the output's RMS as well: an output of zeros (or of any one row) fails,
    // even where the outputs are smaller than the absolute tolerance.
    EXPECT_LT(rms_relative_error(got, expected), t == dtype::f16 ? 2e-2 : 1e-1)
        << dtype_name(t) << " heads " << c.num_heads << "/" << c.num_kv_heads << " head_dim "
        << c.head_dim;
  }
  EXPECT_TRUE(all_close(got, expected, tol))
      << dtype_name(t) << " " << mode_name(m) << " heads " << c.num_heads << "/" << c.num_kv_heads
      << " head_dim " << c.head_dim << " block_size " << c.block_size << " window " << c.window
      << " softcap " << c.softcap << (cache == kv_format::fp8_e4m3 ? " fp8 cache" : "");
}

std::vector<attention_case> decode_cases() {
  auto decode_seqs = [](std::vector<int> lens) {
    std::vector<std::pair<int, int>> seqs;
    for (int len : lens) seqs.emplace_back(1, len);
    return seqs;
  };
  return {
      {32, 8, 128, 16, decode_seqs({1, 17, 500, 513, 1024, 2000, 1999, 64})},
      {8, 4, 8, 32, decode_seqs({1, 5, 300, 1100})},
      {12, 2, 64, 16, decode_seqs({33, 1500, 2})},
      {16, 1, 80, 32, decode_seqs({700, 9})},
      {4, 4, 256, 16, decode_seqs({1000, 31})},
  };
}

std::vector<attention_case> prefill_cases() {
  return {
      {8, 2, 128, 16, {{1, 1}, {17, 17}, {300, 300}, {64, 1500}, {1, 2000}, {33, 33}, {700, 700}}},
      {8, 4, 8, 32, {{5, 5}, {100, 100}, {1, 37}, {40, 90}}},
      {12, 2, 64, 16, {{129, 129}, {2, 2000}}},
      {4, 1, 256, 32, {{70, 70}, {10, 500}}},
      {6, 3, 40, 16, {{50, 50}, {31, 64}}},
  };
}

TEST(CudaPagedAttention, DecodeV1MatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  uint32_t seed = 100;
  for (dtype t : all_dtypes())
    for (const auto& c : decode_cases()) check_case(c, t, mode::decode_v1, seed++);
}

TEST(CudaPagedAttention, DecodeV2MatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  uint32_t seed = 200;
  for (dtype t : all_dtypes())
    for (const auto& c : decode_cases()) check_case(c, t, mode::decode_v2, seed++);
}

TEST(CudaPagedAttention, DecodeAutomaticAndDispatchMatchCpu) {
  REQUIRE_CUDA_DEVICE();
  uint32_t seed = 300;
  for (const auto& c : decode_cases()) {
    check_case(c, dtype::bf16, mode::decode_auto, seed++);
    check_case(c, dtype::bf16, mode::dispatch, seed++);
  }
}

TEST(CudaPagedAttention, PrefillVarlenMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  uint32_t seed = 400;
  for (dtype t : all_dtypes())
    for (const auto& c : prefill_cases()) check_case(c, t, mode::prefill, seed++);
}

TEST(CudaPagedAttention, PrefillTakesDecodeBatchesToo) {
  REQUIRE_CUDA_DEVICE();
  uint32_t seed = 500;
  for (const auto& c : decode_cases()) check_case(c, dtype::f32, mode::prefill, seed++);
  for (const auto& c : prefill_cases()) check_case(c, dtype::bf16, mode::dispatch, seed++);
}

// The tensor-core prefill (f16 and bf16, head_dim 64 and 128): varlen and chunked queries,
// query tiles cut mid-sequence, GQA, windows (with freed blocks before them), soft-capping,
// float8 caches, and the automatic choice taking it.
TEST(CudaPagedAttention, TensorCorePrefillMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  if (!tensor_core_prefill_takes(dtype::bf16, 128)) GTEST_SKIP() << "needs sm_80 or newer";
  const std::vector<attention_case> cases = {
      {8, 2, 128, 16, {{1, 1}, {17, 17}, {300, 300}, {64, 1500}, {1, 2000}, {65, 65}}},
      {12, 2, 64, 16, {{129, 129}, {2, 2000}, {63, 100}}},
      {4, 4, 128, 32, {{70, 70}, {10, 500}}},
      {8, 2, 128, 16, {{200, 700}, {90, 90}}, 100},
      {8, 4, 64, 16, {{150, 150}, {33, 300}}, 0, 30.0f},
  };
  uint32_t seed = 1100;
  for (dtype t : {dtype::f16, dtype::bf16}) {
    for (const auto& c : cases) {
      check_case(c, t, mode::prefill_tc, seed++);
      check_case(c, t, mode::prefill_tc, seed++, kv_format::fp8_e4m3);
    }
    check_case(cases[0], t, mode::dispatch, seed++);
  }
  EXPECT_FALSE(tensor_core_prefill_takes(dtype::f32, 128));
  EXPECT_FALSE(tensor_core_prefill_takes(dtype::bf16, 80));
}

// Mistral's and Gemma's windows: decode (both paths: v2 partitions wholly before the window
// are skipped, in the kernel and in the merge) and prefill, with windows shorter and longer
// than a block, a partition and the context.
// Mixed batches, decodes first as the scheduler orders them: the decode rows run the decode
// kernels and the rest the prefill kernel, and together they equal the CPU op; also a batch
// of decodes only, one of prefills only, and a window.
TEST(CudaPagedAttention, MixedBatchesSplitDecodesFromPrefills) {
  REQUIRE_CUDA_DEVICE();
  const std::vector<attention_case> cases = {
      {8, 2, 128, 16, {{1, 300}, {1, 17}, {1, 2000}, {64, 1500}, {33, 33}}},
      {8, 4, 8, 32, {{1, 37}, {1, 5}, {40, 90}, {1, 7}}},
      {12, 2, 64, 16, {{1, 1500}, {129, 129}}, 256},
      {4, 4, 256, 16, {{1, 1000}, {1, 31}}},
      {6, 3, 40, 16, {{50, 50}, {1, 64}}},
  };
  uint32_t seed = 900;
  for (dtype t : all_dtypes())
    for (const auto& c : cases) check_case(c, t, mode::split, seed++);
}

// --kv-cache-dtype fp8: every kernel reads E4M3 caches beside each activation type.
TEST(CudaPagedAttention, Float8CachesMatchCpu) {
  REQUIRE_CUDA_DEVICE();
  uint32_t seed = 1000;
  const auto fp8 = kv_format::fp8_e4m3;
  for (dtype t : all_dtypes()) {
    for (const auto& c : decode_cases()) {
      check_case(c, t, mode::decode_v1, seed++, fp8);
      check_case(c, t, mode::decode_v2, seed++, fp8);
    }
    for (const auto& c : prefill_cases()) check_case(c, t, mode::prefill, seed++, fp8);
    check_case({8, 2, 128, 16, {{1, 300}, {1, 2000}, {64, 1500}}, 256}, t, mode::split, seed++,
               fp8);
  }
}

// Where the cut falls, and what each part holds: host arithmetic, run without a device.
TEST(CudaPagedAttention, SplitCutsWhereTheLeadingDecodesEnd) {
  const std::vector<int32_t> qsl{0, 1, 2, 3, 67, 100}, seq_lens{300, 17, 2000, 1500, 33};
  paged_batch whole;
  whole.query_start_loc = qsl.data();  // any pointers do: the split never reads them
  whole.seq_lens = seq_lens.data();
  const std::vector<int32_t> tables(5 * 4);
  whole.block_tables = tables.data();
  whole.num_seqs = 5;
  whole.max_blocks_per_seq = 4;
  whole.num_tokens = 100;
  whole.max_query_len = 64;
  whole.max_seq_len = 2000;
  whole.softcap = 30.0f;
  const paged_split split = split_decode_prefix(whole, qsl.data(), seq_lens.data(), 128);
  EXPECT_EQ(split.decode.num_seqs, 3);
  EXPECT_EQ(split.decode.num_tokens, 3);
  EXPECT_EQ(split.decode.max_query_len, 1);
  EXPECT_EQ(split.decode.max_seq_len, 2000);
  EXPECT_EQ(split.decode.query_start_loc, qsl.data());
  EXPECT_EQ(split.decode.softcap, 30.0f);
  EXPECT_EQ(split.prefill.num_seqs, 2);
  EXPECT_EQ(split.prefill.num_tokens, 97);
  EXPECT_EQ(split.prefill.max_query_len, 64);
  EXPECT_EQ(split.prefill.max_seq_len, 1500);
  EXPECT_EQ(split.prefill.query_start_loc, qsl.data() + 3);  // token offsets stay the batch's
  EXPECT_EQ(split.prefill.seq_lens, seq_lens.data() + 3);
  EXPECT_EQ(split.prefill.block_tables, tables.data() + 12);
  // A head_dim the decode kernels cannot take: nothing is cut.
  EXPECT_EQ(split_decode_prefix(whole, qsl.data(), seq_lens.data(), 12).decode.num_seqs, 0);
  // Decodes only: the prefill part is empty.
  const std::vector<int32_t> decodes{0, 1, 2};
  whole.num_seqs = 2;
  whole.num_tokens = 2;
  EXPECT_EQ(split_decode_prefix(whole, decodes.data(), seq_lens.data(), 128).prefill.num_seqs, 0);
}

TEST(CudaPagedAttention, SlidingWindowMatchesCpuAndReadsNoBlockBeforeIt) {
  REQUIRE_CUDA_DEVICE();
  const std::vector<attention_case> decode = {
      {32, 8, 128, 16, {{1, 1}, {1, 17}, {1, 600}, {1, 1300}, {1, 2000}}, 512},
      {8, 4, 64, 16, {{1, 5}, {1, 300}, {1, 1100}}, 100},
      {4, 4, 128, 32, {{1, 40}, {1, 1000}}, 7},
      {8, 2, 128, 16, {{1, 3000}}, 4096},
  };
  const std::vector<attention_case> prefill = {
      {8, 2, 128, 16, {{300, 300}, {64, 1500}, {1, 2000}, {33, 33}}, 100},
      {8, 4, 64, 16, {{129, 129}, {40, 90}, {5, 700}}, 17},
      {4, 1, 128, 32, {{70, 70}, {10, 500}}, 512},
  };
  uint32_t seed = 600;
  for (dtype t : {dtype::f32, dtype::bf16}) {
    for (const auto& c : decode)
      for (mode m : {mode::decode_v1, mode::decode_v2, mode::dispatch, mode::prefill})
        check_case(c, t, m, seed++);
    for (const auto& c : prefill)
      for (mode m : {mode::prefill, mode::dispatch}) check_case(c, t, m, seed++);
  }
}

// Gemma 2's soft-capped scores, alone and with a window; a cap of 0.5 bends every score of
// these inputs, so a kernel that skipped it would differ.
TEST(CudaPagedAttention, SoftcappedScoresMatchCpu) {
  REQUIRE_CUDA_DEVICE();
  const std::vector<attention_case> cases = {
      {8, 4, 128, 16, {{1, 17}, {1, 700}, {1, 1300}}, 0, 0.5f},
      {8, 4, 128, 16, {{1, 40}, {1, 1300}}, 100, 0.5f},
      {8, 2, 64, 16, {{300, 300}, {5, 700}}, 0, 0.5f},
      {8, 2, 64, 16, {{129, 129}, {40, 90}}, 17, 0.5f},
  };
  uint32_t seed = 700;
  for (dtype t : {dtype::f32, dtype::bf16})
    for (const auto& c : cases)
      for (mode m : {mode::decode_v1, mode::decode_v2, mode::prefill, mode::dispatch}) {
        if (m != mode::prefill && m != mode::dispatch && c.seqs[0].first != 1) continue;
        check_case(c, t, m, seed++);
      }
}

TEST(CudaPagedAttention, DecodeRejectsUnsupportedHeadDim) {
  REQUIRE_CUDA_DEVICE();
  paged_batch batch;
  batch.num_seqs = 1;
  EXPECT_THROW(paged_attention_decode(nullptr, nullptr, nullptr, batch, 4, 4, 12, 16, 1.0f, nullptr,
                                      dtype::f32, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace actorllm::cuda
