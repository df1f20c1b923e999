#include "actors/gpu_worker/model_runner.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "actors/gpu_worker/cpu_backend.hpp"
#include "grammar/token_mask.hpp"

namespace actorllm {

namespace {

/// Rows of an embedding request's chunk whose final hidden states are pooled: all of them for
/// mean pooling, the prompt's last one (in the chunk that ends it) for last pooling.
size_t num_pooled_rows(const batch_sequence& s) {
  if (s.params->pooling == pooling_type::mean) return s.token_ids.size();
  return s.num_samples > 0 ? 1 : 0;
}

/// Logits rows of the chunk that score prompt tokens (row of position p: prompt token p + 1),
/// the chunk's first rows. Only while the sequence holds just its prompt: a recompute after
/// sampling has sent its prompt logprobs already.
int32_t num_prompt_logprob_rows(const batch_sequence& s) {
  if (s.params->prompt_logprobs < 0 || s.params->pooling != pooling_type::none ||
      s.all_token_ids.size() != static_cast<size_t>(s.num_prompt_tokens))
    return 0;
  const int32_t end = std::min(s.start_position + static_cast<int32_t>(s.token_ids.size()),
                               s.num_prompt_tokens - 1);
  return std::max(0, end - s.start_position);
}

}  // namespace

model_runner::model_runner(std::shared_ptr<llama_model> model, const model_runner_config& config)
    : model_runner(model, config, std::make_unique<cpu_backend>(model, config)) {}

model_runner::model_runner(std::shared_ptr<llama_model> model, const model_runner_config& config,
                           std::unique_ptr<forward_backend> backend)
    : model_(std::move(model)),
      config_(config),
      backend_(std::move(backend)),
      constraints_(config.grammars, config.eos_token_ids, config.reasoning_end_token),
      proposer_(make_ngram_proposer(config.speculative)) {
  if (const vision_tower* tower = model_->vision()) {
    const vision_config& vision = tower->config();
    image_inputs::options o;
    o.hidden = model_->config().hidden_size;
    // The cache holds at least four images' rows, and 256 MiB where that is more.
    o.cache_bytes =
        std::max<int64_t>(int64_t{256} << 20, 4 * vision.tokens_per_image() * o.hidden * 4);
    o.bidirectional = vision.bidirectional_image_attention;
    if (model_->config().mrope_section != std::array<int32_t, 3>{})
      o.mrope_token_side = static_cast<int32_t>(vision.patch_size * vision.merge_size);
    images_ = std::make_unique<image_inputs>(o);
  }
}

sampler_state& model_runner::state_for(const batch_sequence& seq, int32_t index) {
  const sampler_key key{*seq.request_id, index};
  auto it = samplers_.find(key);
  if (it == samplers_.end()) {
    // A seeded request draws the same tokens every time; others derive from the global seed.
    const uint64_t base =
        seq.params->seed ? *seq.params->seed : config_.seed ^ std::hash<std::string>{}(key.first);
    it = samplers_.emplace(key, sampler_state(base + 0x9e3779b97f4a7c15ULL * index)).first;
  }
  return it->second;
}

const lora_adapter* model_runner::adapter_for(const batch_sequence& seq) {
  const int32_t id = seq.params->lora_id;
  if (id == 0) return nullptr;
  auto& held = adapters_[seq.seq];
  if (!held) {
    held = config_.loras ? config_.loras->get(id) : nullptr;
    if (!held)
      throw std::runtime_error("step plan for sequence " + std::to_string(seq.seq) +
                               " names LoRA adapter " + std::to_string(id) +
                               ", which this worker has not loaded");
  }
  return held.get();
}

step_result model_runner::execute(const step_plan& plan) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<batch_sequence> work;
  step_result result = run_plan(plan, work);
  mirror_.append_samples(result);
  if (proposer_) proposer_->propose(plan, work, mirror_, result);
  result.worker_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

void model_runner::pack_masks(const std::vector<batch_sequence>& work) {
  const auto words = static_cast<int64_t>((model_->config().vocab_size + 31) / 32);
  row_masks_.rows.clear();
  row_masks_.words.clear();
  row_masks_.words_per_row = words;
  int32_t row = 0;
  for (size_t i = 0; i < work.size(); ++i) {
    if (work[i].num_samples <= 0) continue;
    // One row per verified position (1 + its drafts).
    for (int32_t j = 0; j <= work[i].num_drafts; ++j, ++row) {
      const std::span<const uint32_t> mask = constraints_.mask(i, static_cast<size_t>(j));
      if (mask.empty()) continue;
      row_masks_.rows.push_back(row);
      const size_t from = row_masks_.words.size();
      row_masks_.words.resize(from + static_cast<size_t>(words), 0u);  // ids past it: blocked
      std::copy_n(mask.begin(), std::min<size_t>(mask.size(), static_cast<size_t>(words)),
                  row_masks_.words.begin() + static_cast<std::ptrdiff_t>(from));
    }
  }
}

std::function<const row_token_masks&()> model_runner::deferred_masks(
    const std::vector<batch_sequence>& work, step_result& result) {
  if (!constraints_.any_masks()) return {};
  return [this, &work, &result]() -> const row_token_masks& {
    result.mask_seconds = constraints_.wait();
    pack_masks(work);
    return row_masks_;
  };
}

bool model_runner::try_sample_on_device(const std::vector<batch_sequence>& work,
                                        step_result& result) {
  const bool all_drawable = std::all_of(work.begin(), work.end(), [](const batch_sequence& s) {
    return s.num_samples <= 0 ||
           (s.num_samples == 1 && s.num_drafts == 0 && can_draw_on_device(*s.params));
  });
  if (!all_drawable) return false;
  // Called only by a backend that takes the shortcut: a generator advances only then.
  auto draws = [&]() -> const device_draws& {
    draws_.clear();
    const int32_t vocab = model_->config().vocab_size;
    for (const auto& s : work) {
      if (s.num_samples <= 0) continue;
      sampler_state& state = state_for(s, s.index);
      const float uniform = s.params->greedy() ? 0.0f : device_draw_uniform(state.rng);
      draws_.add(*s.params, s.all_token_ids.first(s.num_prompt_tokens), state.output_counts,
                 uniform, vocab);
    }
    return draws_;
  };
  if (!backend_->try_forward_sample(batch_, draws, device_tokens_, deferred_masks(work, result)))
    return false;
  size_t row = 0;
  for (const auto& s : work) {
    if (s.num_samples <= 0) continue;
    const int32_t token = device_tokens_.at(row++);
    ++state_for(s, s.index).output_counts[token];  // as sampler::sample counts every draw
    constraints_.accept(s, s.index, token);
    sequence_sample out;
    out.seq = s.seq;
    out.token_ids.push_back(token);
    result.seqs.push_back(std::move(out));
  }
  return true;
}

void model_runner::recompute_failed_loads(const std::vector<block_copy>& failed,
                                          std::vector<batch_sequence>& work) const {
  for (batch_sequence& s : work) {
    // The first position of a failed block in this sequence's table before its start.
    int32_t start = s.start_position;
    for (const block_copy& load : failed) {
      const int32_t blocks_before = s.start_position / config_.block_size;
      for (int32_t i = 0; i < blocks_before && i < static_cast<int32_t>(s.block_table.size()); ++i)
        if (s.block_table[i] == load.dst) start = std::min(start, i * config_.block_size);
    }
    if (start == s.start_position) continue;
    // The tokens from there on are in the mirror, before the ones this step computes.
    const auto end = s.start_position + static_cast<int32_t>(s.token_ids.size());
    s.token_ids =
        std::span<const int32_t>(s.all_token_ids.data() + start, static_cast<size_t>(end - start));
    s.start_position = start;
  }
}

step_result model_runner::run_plan(const step_plan& plan, std::vector<batch_sequence>& work) {
  for (seq_id id : plan.finished_seq_ids) {
    pooler_.forget(id);
    adapters_.erase(id);
    if (auto it = sampler_of_seq_.find(id); it != sampler_of_seq_.end()) {
      samplers_.erase(it->second);
      constraints_.forget(it->second);
      sampler_of_seq_.erase(it);
    }
  }
  for (const auto& n : plan.new_seqs) sampler_of_seq_[n.seq] = {n.request_id, n.index};
  work = mirror_.apply(plan);

  std::vector<block_copy> failed_loads = backend_->move_blocks(plan);
  if (!failed_loads.empty()) recompute_failed_loads(failed_loads, work);

  step_result result;
  result.step = plan.step;
  result.failed_loads = std::move(failed_loads);
  if (work.empty()) return result;

  if (images_) {
    const auto started = std::chrono::steady_clock::now();
    result.num_encoded_images = images_->prepare(
        work, plan.step, [&](std::span<const image_pixels> images, std::vector<float>& rows) {
          backend_->encode_images(images, rows);
        });
    if (result.num_encoded_images > 0)
      result.encoder_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  batch_.clear();
  for (const auto& s : work) {
    const int64_t end = s.start_position + static_cast<int64_t>(s.token_ids.size());
    if ((end + config_.block_size - 1) / config_.block_size >
        static_cast<int64_t>(s.block_table.size()))
      throw std::runtime_error("step plan for sequence " + std::to_string(s.seq) +
                               " runs past its block table");
    for (int32_t id : s.token_ids)  // each id indexes the embedding table
      if (id < 0 || id >= model_->config().vocab_size)
        throw std::runtime_error("step plan for sequence " + std::to_string(s.seq) +
                                 " carries token id " + std::to_string(id) +
                                 ", outside the vocabulary (" +
                                 std::to_string(model_->config().vocab_size) + ")");
    const auto first_row = static_cast<int32_t>(batch_.num_tokens());
    if (images_) images_->add_rows(s, first_row, plan.step, batch_);
    if (s.params->pooling != pooling_type::none) {
      // An embedding: no logits, the final hidden states of the chunk (mean) or of the
      // prompt's last token (last).
      batch_.add_sequence(s.token_ids, s.start_position, s.block_table, config_.block_size, 0);
      const auto end_row = static_cast<int32_t>(batch_.num_tokens());
      for (auto r = end_row - static_cast<int32_t>(num_pooled_rows(s)); r < end_row; ++r)
        batch_.hidden_indices.push_back(r);
      continue;
    }
    // The prompt-logprob rows come first, the sampled rows last: together the chunk's last rows.
    batch_.add_sequence(s.token_ids, s.start_position, s.block_table, config_.block_size,
                        num_prompt_logprob_rows(s) + (s.num_samples > 0 ? 1 + s.num_drafts : 0));
    batch_.use_adapter(adapter_for(s));
  }
  batch_.finalize();
  // Rows after the last one that attends past itself are causal too.
  if (!batch_.visible_spans.empty())
    batch_.visible_spans.resize(2 * static_cast<size_t>(batch_.num_tokens()), 0);
  const bool any_pooled = std::any_of(work.begin(), work.end(), [](const batch_sequence& s) {
    return s.params->pooling != pooling_type::none;
  });
  // The device shortcuts hand back one token per sampling row, no logits.
  const bool any_prompt_logprobs =
      std::any_of(work.begin(), work.end(),
                  [](const batch_sequence& s) { return num_prompt_logprob_rows(s) > 0; });

  constraints_.prepare(work);  // masks computed while the forward runs

  // Where every draw is one greedy argmax (after at most a structured-output mask), a device
  // backend picks the tokens itself and no logits cross to the host. The sampler state is
  // left alone: its output counts feed only penalties, which such a request never has.
  const bool all_masked_greedy = std::all_of(work.begin(), work.end(), [](const batch_sequence& s) {
    return s.num_samples <= 0 || (s.num_samples == 1 && is_masked_greedy(*s.params));
  });
  if (all_masked_greedy && !any_pooled && !any_prompt_logprobs) {
    if (backend_->try_forward_greedy(batch_, device_tokens_, deferred_masks(work, result))) {
      size_t row = 0;
      for (const auto& s : work) {
        if (s.num_samples <= 0) continue;
        sequence_sample out;
        out.seq = s.seq;
        // Greedy verification: each draft stands while it is the argmax before it.
        const auto drafts = s.token_ids.last(static_cast<size_t>(s.num_drafts));
        for (size_t i = 0; i <= drafts.size(); ++i) {
          out.token_ids.push_back(device_tokens_.at(row + i));
          if (i == drafts.size() || out.token_ids.back() != drafts[i]) break;
        }
        constraints_.accept(s, s.index, out.token_ids);
        row += 1 + drafts.size();
        result.seqs.push_back(std::move(out));
      }
      return result;
    }
  }

  if (!any_pooled && !any_prompt_logprobs && try_sample_on_device(work, result)) return result;

  if (any_pooled) {
    backend_->forward_hidden(batch_, logits_, hidden_);
  } else {
    backend_->forward(batch_, logits_);
  }
  result.mask_seconds = constraints_.wait();

  const int64_t vocab = model_->config().vocab_size;
  const int64_t dim = model_->config().hidden_size;
  size_t row = 0, hidden_row = 0;
  for (const auto& s : work) {
    if (s.params->pooling != pooling_type::none) {
      const size_t num_rows = num_pooled_rows(s);
      pooler_.add(s.seq, s.params->pooling, s.start_position,
                  std::span<const float>(hidden_).subspan(hidden_row * dim, num_rows * dim), dim);
      hidden_row += num_rows;
      if (s.num_samples > 0) {
        sequence_sample out;
        out.seq = s.seq;
        out.embedding = pooler_.finish(s.seq, s.params->normalize);
        result.seqs.push_back(std::move(out));
      }
      continue;
    }
    sequence_sample out;
    out.seq = s.seq;
    if (const int32_t num_rows = num_prompt_logprob_rows(s); num_rows > 0) {
      // Raw rows, before any mask or penalty: the model's own distribution over the prompt.
      out.prompt_logprobs_from = s.start_position + 1;
      for (int32_t i = 0; i < num_rows; ++i, ++row)
        out.prompt_logprobs.push_back(sampler_.logprob_of(
            std::span<const float>(logits_).subspan(row * vocab, vocab),
            s.all_token_ids[s.start_position + i + 1], s.params->prompt_logprobs));
      if (s.num_samples <= 0) result.seqs.push_back(std::move(out));
    }
    if (s.num_samples <= 0) continue;
    if (s.params->beam.enabled) {
      // The scheduler picks the beams from every beam's candidates: no token is drawn here.
      const std::span<const float> raw(logits_.data() + row * vocab, vocab);
      out.beam_candidates = sampler_.logprob_of(raw, argmax(raw), 2 * s.params->n);
      result.seqs.push_back(std::move(out));
      ++row;
      continue;
    }
    const auto prompt = s.all_token_ids.first(s.num_prompt_tokens);
    if (s.num_drafts > 0) {
      const auto rows = std::span<float>(logits_).subspan(row * vocab, (1 + s.num_drafts) * vocab);
      const auto item = static_cast<size_t>(&s - work.data());
      for (int32_t j = 0; j <= s.num_drafts; ++j)
        if (const auto mask = constraints_.mask(item, static_cast<size_t>(j)); !mask.empty())
          grammar::apply_token_mask(rows.subspan(j * vocab, vocab), mask);
      for (auto& sample : sampler_.verify(rows, vocab, s.token_ids.last(s.num_drafts), *s.params,
                                          prompt, state_for(s, s.index))) {
        out.token_ids.push_back(sample.token_id);
        if (s.params->logprobs >= 0) out.logprobs.push_back(std::move(sample.logprob));
      }
      constraints_.accept(s, s.index, out.token_ids);
      result.seqs.push_back(std::move(out));
      row += 1 + s.num_drafts;
      continue;
    }
    for (int32_t k = 0; k < s.num_samples; ++k) {
      // Each draw gets a fresh copy: penalties and temperature modify the row in place.
      // A plain greedy draw reads the row where it is.
      std::span<float> logits_row(logits_.data() + row * vocab, vocab);
      if (!is_plain_greedy(*s.params) || s.num_samples > 1) {
        row_.assign(logits_row.begin(), logits_row.end());
        logits_row = row_;
      }
      const int32_t index = s.num_samples > 1 ? k : s.index;
      if (const auto mask = constraints_.mask(&s - work.data()); !mask.empty())
        grammar::apply_token_mask(logits_row, mask);
      auto sample = sampler_.sample(logits_row, *s.params, prompt, state_for(s, index));
      constraints_.accept(s, index, sample.token_id);
      out.token_ids.push_back(sample.token_id);
      if (s.params->logprobs >= 0) out.logprobs.push_back(std::move(sample.logprob));
    }
    result.seqs.push_back(std::move(out));
    ++row;
  }
  return result;
}

}  // namespace actorllm
