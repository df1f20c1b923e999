#include "actors/engine_setup/engine_setup.hpp"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "actors/engine_setup/chat_loader.hpp"
#include "actors/engine_setup/generation_defaults.hpp"
#include "actors/engine_setup/image_setup.hpp"
#include "actors/gpu_worker/cpu_backend.hpp"
#include "actors/gpu_worker/kv_budget.hpp"
#include "config/served_models.hpp"
#include "kernels/cpu/ops.hpp"

namespace actorllm {

namespace {

/// Every id the tokenizer can produce, and every end-of-sequence id, must name a row of the
/// model's embedding table: a request's tokens index it directly.
void check_token_ids_fit(const tokenizer& tok, const model_config_hf& mc,
                         const std::filesystem::path& tokenizer_path) {
  const auto vocab = static_cast<size_t>(mc.vocab_size);
  if (tok.vocab_size() > vocab)
    throw std::runtime_error("the tokenizer (" + tokenizer_path.string() +
                             ") has token ids up to " + std::to_string(tok.vocab_size() - 1) +
                             ", beyond the model's vocab_size " + std::to_string(vocab) +
                             " (config.json): they would index past its embedding table");
  for (int32_t id : mc.eos_token_ids)
    if (id < 0 || static_cast<size_t>(id) >= vocab)
      throw std::runtime_error("config.json: eos_token_id " + std::to_string(id) +
                               " is outside the model's vocab_size " + std::to_string(vocab));
}

/// A draft model proposes token ids the target verifies: they must mean the same text. A draft
/// folder with a tokenizer of its own must give every id the target's piece (a draft with
/// another vocabulary would never have a draft accepted, or worse).
void check_draft_shares_the_vocabulary(const tokenizer& target,
                                       const std::filesystem::path& draft_dir) {
  if (!std::filesystem::exists(draft_dir / "tokenizer.json")) return;
  const tokenizer draft = tokenizer::load(draft_dir);
  const auto fault = [&](const std::string& what) {
    return std::runtime_error("speculative_config: the draft model's tokenizer (" +
                              draft_dir.string() + ") " + what +
                              "; a draft model must share the target's vocabulary");
  };
  if (draft.vocab_size() != target.vocab_size())
    throw fault("has " + std::to_string(draft.vocab_size()) + " tokens, the target's " +
                std::to_string(target.vocab_size()));
  for (size_t id = 0; id < target.vocab_size(); ++id) {
    const auto i = static_cast<int32_t>(id);
    if (draft.id_to_piece(i) != target.id_to_piece(i))
      throw fault("reads id " + std::to_string(id) + " as '" + draft.id_to_piece(i) +
                  "', the target as '" + target.id_to_piece(i) + "'");
  }
}

}  // namespace

engine_setup engine_setup::load(const engine_config& config,
                                std::shared_ptr<const backend_provider> backend) {
  if (auto errors = config.validate(); !errors.empty()) throw std::runtime_error(errors.front());
  if (config.models.many())
    throw std::runtime_error(
        "--model NAME=PATH, --models-dir: one engine loads one model (`actorllm serve` plans "
        "one engine per model)");
  if (!backend) {
    if (config.parallel.device == "cuda")
      throw std::runtime_error("--device cuda: this engine has only the CPU backend");
    backend = std::make_shared<cpu_backend_provider>();
  }
  const std::filesystem::path model_dir = config.model.model;
  const std::filesystem::path tokenizer_dir =
      config.model.tokenizer.empty() ? model_dir : std::filesystem::path(config.model.tokenizer);
  engine_setup s(tokenizer::load(tokenizer_dir));
  s.config = config;
  cpu::set_num_threads(config.parallel.cpu_threads);
  cpu::set_core_binding(config.parallel.cpu_bind == "cores");
  const int32_t tp = config.parallel.tensor_parallel_size;
  if (tp > 1 && backend)
    if (const std::string why = backend->tensor_parallel_refusal(); !why.empty())
      throw std::runtime_error("--tensor-parallel-size " + std::to_string(tp) + ": " + why);
  for (int32_t rank = 0; rank < tp; ++rank)
    s.shards.push_back(std::make_shared<llama_model>(
        model_dir, tp_shard{rank, tp},
        weight_options{config.model.dtype, config.model.quantization}));
  s.model = s.shards.front();
  check_token_ids_fit(s.tok, s.model->config(), tokenizer_dir);
  s.render_chat = load_chat_renderer(config.model.chat_template, model_dir, s.tok);
  s.sampling = load_generation_defaults(config.model.generation_config, model_dir);
  s.served_model_name = !config.model.served_model_name.empty() ? config.model.served_model_name
                                                                : folder_name(config.model.model);
  if (config.model.served_model_name.empty() && config.model.model != s.served_model_name)
    s.model_aliases.push_back(config.model.model);

  if (config.model.embeds() && backend->device() != "cpu")
    throw std::runtime_error(
        "--task embed: embeddings are computed on the CPU backend only "
        "(use --device cpu)");
  if (config.lora.enable_lora && backend->device() != "cpu")
    throw std::runtime_error(
        "--enable-lora: adapters run on the CPU backend only (use --device cpu)");
  const auto& mc = s.model->config();
  if (mc.vision) {
    if (backend->device() != "cpu")
      throw std::runtime_error(mc.architecture +
                               ": the vision tower runs on the CPU backend only (use --device "
                               "cpu)");
    s.images = make_image_pipeline(*mc.vision, model_dir, config.server.media, s.tok);
  }
  if (config.lora.enable_lora) {
    if (mc.moe.num_experts > 0)
      throw std::runtime_error("--enable-lora: " + mc.architecture +
                               " is a mixture of experts; adapters apply to dense models");
    s.loras = std::make_shared<lora_registry>(mc, config.lora.max_lora_rank);
    for (const auto& m : config.lora.modules) {
      try {
        s.loras->load(m.name, m.path);
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string("--lora-modules: ") + e.what());
      }
    }
  }
  s.max_model_len = config.model.max_model_len > 0 ? config.model.max_model_len
                                                   : static_cast<int32_t>(mc.max_context());
  if (s.max_model_len > mc.max_context())
    throw std::runtime_error("--max-model-len " + std::to_string(s.max_model_len) +
                             " exceeds the model's context (" + std::to_string(mc.max_context()) +
                             ": max_position_embeddings with its rope scaling)");

  // A sequence of a windowed model holds its window plus one step's chunk, not its history:
  // the pool must fit that much of one sequence, not max_model_len.
  int32_t resident_tokens = s.max_model_len;
  if (const int32_t window = mc.max_sliding_window(); window > 0)
    resident_tokens = static_cast<int32_t>(std::min<int64_t>(
        s.max_model_len, int64_t{window} + 1 + config.scheduler.max_num_batched_tokens +
                             2 * int64_t{config.cache.block_size}));
  const auto budget = backend->plan_kv(*s.model, config, resident_tokens);
  if (!budget.error.empty()) throw std::runtime_error(budget.error);
  if (config.cache.kv_offload_bytes > 0 && budget.num_tier_blocks == 0)
    throw std::runtime_error(
        backend->device() != "cpu"
            ? "--kv-offload-bytes: the second KV tier runs on the CPU backend only for now"
            : "--kv-offload-bytes " + std::to_string(config.cache.kv_offload_bytes) +
                  " holds no KV block of " + std::to_string(budget.block_bytes) + " bytes");
  // After the budget: plan_kv already keeps the weights' bytes aside once more, which is
  // what the CPU's packed copy takes.
  for (const auto& shard : s.shards) backend->prepare(*shard);
  s.backend = std::move(backend);

  s.scheduler.scheduler = config.scheduler;
  s.scheduler.block_size = config.cache.block_size;
  s.scheduler.num_device_blocks = budget.num_device_blocks;
  s.kv_block_bytes = budget.block_bytes;
  s.scheduler.num_cpu_blocks = budget.num_cpu_blocks;
  s.scheduler.num_tier_blocks = budget.num_tier_blocks;
  // Mean pooling needs every prompt token's hidden state, so none may come from the cache.
  s.scheduler.enable_prefix_caching = config.cache.enable_prefix_caching && !config.model.embeds();
  s.scheduler.sliding_window = mc.max_sliding_window();
  s.scheduler.whole_images = mc.vision && mc.vision->bidirectional_image_attention;
  s.scheduler.max_model_len = s.max_model_len;
  s.scheduler.eos_token_ids = mc.eos_token_ids;
  if (s.scheduler.eos_token_ids.empty()) s.scheduler.eos_token_ids = s.tok.eos_ids();
  s.scheduler.speculative = config.speculative;
  s.scheduler.max_loras = config.lora.enable_lora ? config.lora.max_loras : 0;

  s.runner.block_size = config.cache.block_size;
  s.runner.num_device_blocks = budget.num_device_blocks;
  s.runner.num_cpu_blocks = budget.num_cpu_blocks;
  s.runner.num_tier_blocks = budget.num_tier_blocks;
  s.runner.tier_folder = config.cache.kv_offload_dir;
  s.runner.seed = config.model.seed;
  s.runner.cache_dtype = cpu_cache_dtype(config.cache);
  // vLLM captures decode batches of up to 512 sequences.
  s.runner.cuda_graph_max_batch =
      config.model.enforce_eager ? 0 : std::min(config.scheduler.max_num_seqs, 512);
  s.runner.cuda_graph_max_context = config.model.max_seq_len_to_capture;
  s.runner.eos_token_ids = s.scheduler.eos_token_ids;
  // Shared by the router (which refuses what does not compile) and this process's workers.
  const int64_t mask_size = s.model->config().vocab_size;
  s.grammars = std::make_shared<grammar::grammar_compiler>(
      [tok = s.tok, mask_size] { return grammar::vocabulary::from_tokenizer(tok, mask_size); });
  s.runner.grammars = s.grammars;
  s.runner.reasoning_end_token = s.tok.piece_to_id("</think>").value_or(-1);
  s.runner.speculative = config.speculative;
  s.runner.loras = s.loras;
  if (config.speculative.method == speculative_method::draft_model) {
    // Whole on every rank, in the target's dtype; its own pool: the target's blocks plus room
    // for every running sequence's drafts.
    const std::filesystem::path draft_dir = config.speculative.draft_model;
    auto draft = std::make_shared<llama_model>(
        draft_dir, tp_shard{}, weight_options{config.model.dtype, config.model.quantization});
    check_token_ids_fit(s.tok, draft->config(), tokenizer_dir);
    check_draft_shares_the_vocabulary(s.tok, draft_dir);
    s.runner.draft_model = std::move(draft);
    const int32_t bs = config.cache.block_size;
    s.runner.num_draft_blocks = budget.num_device_blocks +
                                config.scheduler.max_num_seqs *
                                    ((config.speculative.num_speculative_tokens + bs - 1) / bs + 1);
  }
  return s;
}

prompt_builder engine_setup::make_prompt_builder() const {
  return prompt_builder(tok, render_chat, served_model_name, max_model_len,
                        config.model.max_logprobs, grammars, loras, images);
}

namespace {

/// The startup log's line for a vision-language model's image side.
std::string describe_vision(const vision_tower& tower) {
  const vision_config& v = tower.config();
  std::ostringstream out;
  out << "images " << v.tower << " tower of " << v.num_layers << " layers ("
      << tower.weights().num_parameters() / 1e6 << "M float32 parameters), ";
  if (v.dynamic_resolution())
    out << "each image at its own size, one prompt position per " << v.patch_size * v.merge_size
        << "x" << v.patch_size * v.merge_size << " pixels, windows of " << v.window_size
        << " pixels, M-RoPE";
  else
    out << v.image_size << "x" << v.image_size << " pixels in patches of " << v.patch_size << ", "
        << v.tokens_per_image() << " prompt positions an image"
        << (v.bidirectional_image_attention ? ", attended both ways" : "");
  out << "\n";
  return out.str();
}

}  // namespace

std::string engine_setup::describe() const {
  const auto& mc = model->config();
  std::ostringstream out;
  out << "model " << config.model.model << " (" << mc.architecture << ", "
      << mc.num_parameters() / 1e6 << "M parameters) served as '" << served_model_name << "'\n"
      << "weights " << backend->describe_weights(*model) << "\n"
      << "attention " << mc.describe_attention() << "\n"
      << (model->vision() ? describe_vision(*model->vision()) : std::string())
      << (sampling.empty() ? std::string()
                           : "sampling defaults from generation_config.json: " +
                                 sampling.describe() + " (--generation-config vllm: none)\n")
      << "device " << backend->device()
      << (backend->num_devices() > 0
              ? " (" + std::to_string(backend->num_devices()) + " visible, one worker on each)"
              : std::string())
      << (backend->device() == "cuda"
              ? runner.cuda_graph_max_batch > 0
                    ? ", CUDA graphs for decode steps of up to " +
                          std::to_string(runner.cuda_graph_max_batch) + " sequences and " +
                          std::to_string(runner.cuda_graph_max_context) + " tokens"
                    : std::string(", eager (--enforce-eager)")
              : std::string())
      << ", max_model_len " << max_model_len << ", block_size " << runner.block_size
      << ", KV cache " << backend->describe_kv_cache(*model, config) << ", device KV blocks "
      << runner.num_device_blocks << " (" << int64_t(runner.num_device_blocks) * runner.block_size
      << " tokens), CPU swap blocks " << runner.num_cpu_blocks
      << (runner.num_tier_blocks > 0
              ? ", KV offload tier " + std::to_string(runner.num_tier_blocks) + " blocks (" +
                    std::to_string(int64_t(runner.num_tier_blocks) * runner.block_size) +
                    " tokens) in " +
                    (runner.tier_folder.empty() ? std::string("memory")
                                                : "a file under " + runner.tier_folder)
              : std::string())
      << "\n"
      << "max_num_seqs " << config.scheduler.max_num_seqs << ", max_num_batched_tokens "
      << config.scheduler.max_num_batched_tokens << ", preemption "
      << to_string(config.scheduler.preemption) << ", prefix caching "
      << (config.cache.enable_prefix_caching ? "on" : "off") << ", CPU threads "
      << cpu::num_threads();
  const speculative_config& spec = config.speculative;
  if (spec.method == speculative_method::ngram)
    out << "\nspeculative decoding: ngram, " << spec.num_speculative_tokens
        << " drafts per step, lookup of " << spec.prompt_lookup_min << " to "
        << spec.prompt_lookup_max << " tokens";
  if (spec.method == speculative_method::draft_model)
    out << "\nspeculative decoding: draft model " << spec.draft_model << " ("
        << runner.draft_model->config().architecture << ", "
        << runner.draft_model->config().num_parameters() / 1e6 << "M parameters), "
        << spec.num_speculative_tokens << " drafts per step, " << runner.num_draft_blocks
        << " KV blocks of its own";
  if (spec.enabled() && spec.disable_by_batch_size > 0)
    out << ", off from " << spec.disable_by_batch_size << " running sequences";
  if (loras) {
    out << "\nLoRA: up to " << config.lora.max_loras
        << " adapters per batch, rank <= " << config.lora.max_lora_rank
        << (config.lora.runtime_updates ? ", runtime updates on" : "");
    for (const auto& a : loras->list()) out << "\n  adapter '" << a.name << "' from " << a.path;
  }
  return out.str();
}

}  // namespace actorllm
