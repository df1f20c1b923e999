#pragma once
// A deterministic stand-in for the workers: a KV "cache" of (token, position) codes laid out
// by the block tables, and a "model" whose next token is a hash of everything it reads back
// through the block table. A wrong table, a missed copy-on-write, a lost swap or a stale
// prefix-cache hit changes what is read and so the output, and is also caught directly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "actors/gpu_worker/sequence_mirror.hpp"
#include "common/step_plan.hpp"

namespace actorllm::testing {

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

inline int64_t kv_code(int32_t token, int32_t position) {
  return (int64_t(position) << 32) | uint32_t(token);
}

/// The model's next token after `context` for sample index `sample`.
inline int32_t next_token(uint64_t context_hash, int32_t sample, int32_t vocab_size) {
  return static_cast<int32_t>(mix(context_hash ^ mix(uint64_t(sample) + 1)) % vocab_size);
}

inline uint64_t hash_codes(std::span<const int64_t> codes) {
  uint64_t h = 0x1234;
  for (int64_t c : codes) h = mix(h ^ uint64_t(c)) + 1;
  return h;
}

/// The same hash from tokens alone: what a correct KV cache gives. A windowed model (window
/// > 0) reads only the last `window` positions, as sliding-window attention does.
inline uint64_t hash_tokens(std::span<const int32_t> tokens, int32_t window = 0) {
  std::vector<int64_t> codes;
  const size_t first = window > 0 && tokens.size() > size_t(window) ? tokens.size() - window : 0;
  for (size_t p = first; p < tokens.size(); ++p) codes.push_back(kv_code(tokens[p], int32_t(p)));
  return hash_codes(codes);
}

/// What a request's sample `index` generates without any scheduling at all: the oracle for
/// outputs under chunking, preemption, swapping and prefix caching.
struct reference_output {
  std::vector<int32_t> token_ids;
  finish_reason finish = finish_reason::none;
};

inline reference_output generate_reference(std::vector<int32_t> tokens,
                                           const sampling_params& params, int32_t index,
                                           const std::vector<int32_t>& eos_token_ids,
                                           int32_t max_model_len, int32_t vocab_size,
                                           int32_t window = 0) {
  reference_output out;
  int32_t num_prompt = int32_t(tokens.size());
  int32_t room = max_model_len - num_prompt;
  int32_t max_tokens = params.max_tokens < 0 ? room : std::min(params.max_tokens, room);
  auto contains = [](const std::vector<int32_t>& v, int32_t t) {
    return std::find(v.begin(), v.end(), t) != v.end();
  };
  for (;;) {
    int32_t token = next_token(hash_tokens(tokens, window), index, vocab_size);
    tokens.push_back(token);
    out.token_ids.push_back(token);
    int32_t num_output = int32_t(out.token_ids.size());
    bool may_stop = num_output - 1 >= params.min_tokens;
    if (may_stop && !params.ignore_eos && contains(eos_token_ids, token)) {
      out.finish = finish_reason::stop;
    } else if (may_stop && contains(params.stop_token_ids, token)) {
      out.finish = finish_reason::stop;
    } else if (num_output >= max_tokens || int32_t(tokens.size()) >= max_model_len) {
      out.finish = finish_reason::length;
    }
    if (out.finish != finish_reason::none) return out;
  }
}

class fake_model {
 public:
  /// `window` > 0: a sliding-window model, which reads only the last `window` positions.
  fake_model(int32_t block_size, int32_t num_device_blocks, int32_t num_cpu_blocks,
             int32_t vocab_size, int32_t window = 0)
      : block_size_(block_size),
        vocab_size_(vocab_size),
        window_(window),
        device_(size_t(num_device_blocks) * block_size, -1),
        cpu_(size_t(num_cpu_blocks) * block_size, -1) {}

  /// Executes a plan as a worker would; returns what it sampled.
  step_result run(const step_plan& plan) {
    std::vector<batch_sequence> batch = mirror_.apply(plan);
    for (const block_copy& c : plan.blocks_to_swap_out) copy_block(device_, c.src, cpu_, c.dst);
    for (const block_copy& c : plan.blocks_to_swap_in) copy_block(cpu_, c.src, device_, c.dst);
    for (const block_copy& c : plan.blocks_to_copy) copy_block(device_, c.src, device_, c.dst);
    // Every write of the step before any read, as in a batched forward.
    for (const batch_sequence& b : batch) {
      for (size_t k = 0; k < b.token_ids.size(); ++k) {
        int32_t position = b.start_position + int32_t(k);
        device_[slot(b, position)] = kv_code(b.token_ids[k], position);
      }
      num_computed_tokens_ += int64_t(b.token_ids.size());
    }
    step_result result;
    result.step = plan.step;
    for (const batch_sequence& b : batch) {
      if (b.num_samples == 0) continue;
      sequence_sample sample;
      sample.seq = b.seq;
      if (b.num_drafts > 0) {
        verify(b, sample);
        result.seqs.push_back(std::move(sample));
        continue;
      }
      const uint64_t h = read_context(b, b.start_position + int32_t(b.token_ids.size()));
      for (int32_t j = 0; j < b.num_samples; ++j) {
        int32_t sample_index = b.num_samples == 1 ? b.index : j;
        sample.token_ids.push_back(next_token(h, sample_index, vocab_size_));
        if (b.params->logprobs >= 0) {
          token_logprob lp;
          lp.token_id = sample.token_ids.back();
          lp.logprob = -0.5f;
          sample.logprobs.push_back(lp);
        }
      }
      result.seqs.push_back(std::move(sample));
    }
    mirror_.append_samples(result);
    propose(batch, result);
    return result;
  }

  int64_t num_computed_tokens() const { return num_computed_tokens_; }
  int64_t num_drafts_proposed() const { return num_drafts_proposed_; }
  int64_t num_kv_errors() const { return num_kv_errors_; }
  const sequence_mirror& mirror() const { return mirror_; }

 private:
  /// The hash of the KV a query at position end - 1 reads, each code checked against the
  /// sequence's tokens (its drafts past them).
  uint64_t read_context(const batch_sequence& b, int32_t end) {
    const int32_t first = window_ > 0 ? std::max(0, end - window_) : 0;
    const auto num_known = int32_t(b.all_token_ids.size());
    std::vector<int64_t> codes;
    for (int32_t p = first; p < end; ++p) {
      codes.push_back(device_[slot(b, p)]);
      const int32_t token =
          p < num_known ? b.all_token_ids[p] : b.token_ids[size_t(p - b.start_position)];
      if (codes.back() != kv_code(token, p)) {
        ADD_FAILURE() << "seq " << b.seq << " reads wrong KV at position " << p;
        ++num_kv_errors_;
      }
    }
    return hash_codes(codes);
  }

  /// Speculative decoding: a draft stands while it is the token the model draws there.
  void verify(const batch_sequence& b, sequence_sample& sample) {
    const auto drafts = b.token_ids.last(size_t(b.num_drafts));
    const int32_t first_row_end = b.start_position + int32_t(b.token_ids.size()) - b.num_drafts;
    for (int32_t i = 0; i <= b.num_drafts; ++i) {
      sample.token_ids.push_back(
          next_token(read_context(b, first_row_end + i), b.index, vocab_size_));
      if (b.params->logprobs >= 0)
        sample.logprobs.push_back({sample.token_ids.back(), -0.5f, 0, {}, {}, {}});
      if (i == b.num_drafts || sample.token_ids.back() != drafts[size_t(i)]) break;
    }
  }

  /// Proposals that are right for a while, then wrong: the first m of k drafts are the model's
  /// own continuation (m from a hash of the sequence and its length), the rest are not.
  void propose(const std::vector<batch_sequence>& batch, step_result& result) {
    for (sequence_sample& sample : result.seqs) {
      auto b = std::find_if(batch.begin(), batch.end(),
                            [&](const batch_sequence& x) { return x.seq == sample.seq; });
      if (b == batch.end() || b->num_lookahead <= 0) continue;
      std::vector<int32_t> tokens(mirror_.tokens(sample.seq).begin(),
                                  mirror_.tokens(sample.seq).end());
      const auto num_right =
          int32_t(mix(uint64_t(sample.seq) * 31 + tokens.size()) % uint64_t(b->num_lookahead + 1));
      for (int32_t j = 0; j < b->num_lookahead; ++j) {
        int32_t token = next_token(hash_tokens(tokens, window_), b->index, vocab_size_);
        if (j >= num_right) token = (token + 1) % vocab_size_;
        sample.draft_token_ids.push_back(token);
        tokens.push_back(token);
      }
      num_drafts_proposed_ += b->num_lookahead;
    }
  }

  size_t slot(const batch_sequence& b, int32_t position) {
    size_t index = size_t(position / block_size_);
    if (index >= b.block_table.size()) {
      ADD_FAILURE() << "seq " << b.seq << " has no block for position " << position;
      ++num_kv_errors_;
      return 0;
    }
    if (b.block_table[index] == no_block) {
      ADD_FAILURE() << "seq " << b.seq << " reads released block " << index;
      ++num_kv_errors_;
      return 0;
    }
    return size_t(b.block_table[index]) * block_size_ + position % block_size_;
  }
  void copy_block(const std::vector<int64_t>& from, block_id src, std::vector<int64_t>& to,
                  block_id dst) {
    for (int32_t k = 0; k < block_size_; ++k) {
      to[size_t(dst) * block_size_ + k] = from[size_t(src) * block_size_ + k];
    }
  }

  int32_t block_size_;
  int32_t vocab_size_;
  int32_t window_;
  std::vector<int64_t> device_;  // (num_device_blocks * block_size) KV codes
  std::vector<int64_t> cpu_;     // (num_cpu_blocks * block_size)
  sequence_mirror mirror_;
  int64_t num_computed_tokens_ = 0;
  int64_t num_kv_errors_ = 0;
  int64_t num_drafts_proposed_ = 0;
};

}  // namespace actorllm::testing
