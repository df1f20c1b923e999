#pragma once
/// The engine's configuration: passive data with defaults and one validate().
/// Nothing outside config/ reads the environment or the command line.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/media_policy.hpp"
#include "config/routing_policy.hpp"

namespace actorllm {

enum class preemption_mode { recompute, swap };
enum class scheduling_policy { fcfs, priority };

struct model_config {
  std::string model;      ///< Hugging Face folder (config.json, *.safetensors, tokenizer.json)
  std::string tokenizer;  ///< folder or tokenizer.json; empty: same as model
  std::string served_model_name;  ///< name in the API; empty: the folder's (--model also accepted)
  /// auto | float32 | float16 | bfloat16: the weights' type on the CPU (auto: the
  /// checkpoint's, as vLLM), the compute type on CUDA (auto: a 16-bit checkpoint's type,
  /// else float32).
  std::string dtype = "auto";
  /// none | int8: quantize a 16/32-bit checkpoint's matrices at load (per output channel).
  std::string quantization = "none";
  int32_t max_model_len = 0;  ///< 0: max_position_embeddings of the model
  uint64_t seed = 0;
  std::string chat_template;  ///< a .jinja file or tokenizer_config.json; empty: the model's own
  int32_t max_logprobs = 20;  ///< the most logprobs / top_logprobs a request may ask
  /// Where sampling defaults come from: auto (the model folder's generation_config.json),
  /// vllm (none: OpenAI's), or a folder holding a generation_config.json.
  std::string generation_config = "auto";
  /// generate, or embed: /v1/embeddings serves the model's pooled final hidden states
  /// (prefix caching off, as vLLM does for pooling models).
  std::string task = "generate";
  std::string pooling_type = "LAST";  ///< embed: LAST (the last token's state) or MEAN
  bool normalize_embeddings = true;   ///< embed: unit L2 norm
  bool embeds() const { return task == "embed"; }
  /// CUDA: every step launches its kernels one by one (no CUDA graphs), as vLLM's flag.
  bool enforce_eager = false;
  /// CUDA: decode steps whose longest context passes this many tokens run eagerly.
  int32_t max_seq_len_to_capture = 8192;
};

/// Reads vLLM's --override-pooler-config JSON ({"pooling_type": "MEAN", "normalize": false});
/// an error line, or empty.
std::string parse_pooler_config(std::string_view json, model_config& out);

struct cache_config {
  int32_t block_size = 16;               ///< tokens per KV block
  double swap_space_gib = 4.0;           ///< CPU swap pool size, GiB
  int64_t num_gpu_blocks_override = -1;  ///< >= 0: exact device-pool size (CPU backend too)
  int64_t num_cpu_blocks_override = -1;  ///< >= 0: exact CPU swap-pool size (wins over swap space)
  /// The second KV tier: bytes of each worker's store of prefix blocks evicted from the device
  /// pool (0: none), and the folder of its file (empty: anonymous memory). CPU backend.
  int64_t kv_offload_bytes = 0;
  std::string kv_offload_dir;
  /// >= 0: bytes of each worker's device KV pool (vLLM's --kv-cache-memory-bytes), instead of
  /// a share of free memory; --num-gpu-blocks-override wins over it.
  int64_t kv_cache_memory_bytes = -1;
  double gpu_memory_utilization =
      0.9;  ///< share of device (or free host) memory the engine may use
  bool enable_prefix_caching = true;
  /// KV cache element type: auto (the model's compute type, float32 on the CPU), float32,
  /// float16 (CPU backend: half the memory per block, half the bytes decode attention reads),
  /// or fp8 / fp8_e4m3 (a quarter of float32's bytes, values saturating at ±448; on CUDA
  /// beside any activation type).
  std::string cache_dtype = "auto";
};

struct scheduler_config {
  int32_t max_num_seqs = 256;             ///< sequences per step
  int32_t max_num_batched_tokens = 2048;  ///< token budget per step (chunked prefill)
  int32_t max_waiting_requests = 4096;    ///< backpressure: beyond this, new requests get 503
  preemption_mode preemption = preemption_mode::recompute;
  scheduling_policy policy = scheduling_policy::fcfs;
  int32_t stream_interval = 1;  ///< tokens gathered per streamed delta (first and last at once)
  /// Plan each step while the one before runs, so the workers never wait for the scheduler's
  /// round trip (vLLM's --async-scheduling). Outputs are the same either way.
  bool async_scheduling = true;
  /// Seconds a step may go unanswered before its workers count as lost (a frozen or stopped
  /// worker in another process never fails by itself); their requests then move on.
  double worker_timeout_s = 300.0;
};

enum class speculative_method { none, ngram, draft_model };

/// Speculative decoding, as vLLM's --speculative-config JSON gives it (parse_speculative_config).
struct speculative_config {
  speculative_method method = speculative_method::none;
  int32_t num_speculative_tokens = 0;  ///< drafts proposed per sequence and step
  int32_t prompt_lookup_min = 5;       ///< ngram: shortest suffix looked up
  int32_t prompt_lookup_max = 5;       ///< ngram: longest suffix looked up
  std::string draft_model;             ///< draft_model: its folder (same tokenizer)
  /// Running sequences from which no sequence speculates (the step is compute-bound and
  /// verifying drafts costs more than it saves); 0: no limit.
  int32_t disable_by_batch_size = 0;
  /// A sequence whose recent drafts are accepted less often than this pauses speculating for
  /// a while (the pause doubles while it keeps failing).
  double min_acceptance_rate = 0.1;
  bool enabled() const { return method != speculative_method::none; }
};

/// Reads vLLM's --speculative-config JSON ({"method":"ngram","num_speculative_tokens":k,
/// "prompt_lookup_max":…,"prompt_lookup_min":…} or {"model":DIR,"num_speculative_tokens":k},
/// with "disable_by_batch_size" and "min_acceptance_rate"); an error line, or empty.
std::string parse_speculative_config(std::string_view json, speculative_config& out);

/// One adapter of --lora-modules: the name requests give as `model`, and its PEFT folder.
struct lora_module {
  std::string name;
  std::string path;
  bool operator==(const lora_module&) const = default;
};

/// Multi-LoRA serving, with vLLM's flags: PEFT adapters over the base model, chosen per request
/// by `model`, several in one batch.
struct lora_config {
  bool enable_lora = false;
  std::vector<lora_module> modules;  ///< loaded at start
  int32_t max_loras = 1;             ///< distinct adapters in one batch
  int32_t max_lora_rank = 16;        ///< adapters of a higher rank are refused
  /// POST /v1/load_lora_adapter and /v1/unload_lora_adapter (vLLM's
  /// VLLM_ALLOW_RUNTIME_LORA_UPDATING): adapters come and go while the server runs.
  bool runtime_updates = false;
};

/// Reads one --lora-modules value: name=path, or vLLM's JSON {"name":…,"path":…,
/// "base_model_name":…}; an error line, or empty.
std::string parse_lora_module(std::string_view text, lora_config& out);

struct parallel_config {
  int32_t tensor_parallel_size = 1;
  int32_t replicas = 1;           ///< engine replicas behind one router
  int32_t cpu_threads = 0;        ///< threads for the CPU math; 0: all cores
  std::string cpu_bind = "none";  ///< none | cores: bind the CPU math's threads to cores
  std::string device = "auto";    ///< auto | cpu | cuda
  routing_policy routing = routing_policy::cache_aware;  ///< how the router picks a replica
  int64_t routing_balance_tokens = 16384;  ///< cache_aware: the load margin a prefix may win by
};

/// --autoscale MIN:MAX: replicas follow the load. A replica is added when the waiting queue
/// or the KV use stays high for up_window_s, one is drained when the load stays low for
/// down_window_s, and after any change nothing changes for cooldown_s.
struct autoscale_config {
  int32_t min_replicas = 0;  ///< 0: autoscaling off
  int32_t max_replicas = 0;
  double up_window_s = 10.0;
  double down_window_s = 30.0;
  double cooldown_s = 30.0;
  double interval_s = 0.5;         ///< how often the load is sampled
  double waiting_per_replica = 1;  ///< waiting requests per serving replica that count as high
  double kv_usage_high = 0.9;      ///< mean KV use that counts as high
  double kv_usage_low = 0.3;       ///< mean KV use below which (with nothing waiting) load is low
  bool enabled() const { return max_replicas > 0; }
};

struct server_config {
  std::string host = "0.0.0.0";
  uint16_t port = 8000;
  std::string api_key;  ///< empty: no authentication
  /// The key of /admin (replicas added, drained, stopped); empty: no admin API at all.
  std::string admin_api_key;
  std::vector<std::string> allowed_origins;  ///< CORS; "*" allows any
  /// Host header names served besides IP literals and localhost (DNS rebinding); "*": any.
  std::vector<std::string> allowed_hosts;
  /// TLS (vLLM's flags): the certificate chain and its key (PEM; both empty: plain HTTP), the
  /// CAs that client certificates are checked against, and whether clients must send one (0:
  /// none asked, 1: checked when sent, 2: required).
  std::string ssl_certfile, ssl_keyfile, ssl_ca_certs;
  int32_t ssl_cert_reqs = 0;
  int64_t max_body_bytes = 16 << 20;  ///< larger requests get 413
  int32_t io_threads = 1;             ///< Beast I/O threads
  double log_stats_interval = 5.0;    ///< seconds between stats log lines; 0: off
  uint16_t metrics_port = 0;          ///< 0: /metrics on the API port only
  bool enable_web_ui = true;          ///< GET / serves the playground (web/)
  /// Chat output parsing, with vLLM's flags: tool_choice "auto" needs both of the first two.
  bool enable_auto_tool_choice = false;
  std::string tool_call_parser;             ///< hermes, llama3_json, mistral, pythonic; empty: none
  std::string reasoning_parser;             ///< deepseek_r1, qwen3; empty: none
  std::string response_role = "assistant";  ///< the chat answer's role (--response-role)
  bool force_include_usage =
      false;  ///< every stream ends with usage (--enable-force-include-usage)
  /// The Responses API's store (store: true, previous_response_id, GET /v1/responses/{id}):
  /// at most this many responses (least recently used evicted first; 0: none kept) ...
  int64_t responses_store_max_items = 1000;
  /// ... and this many bytes of their JSON (a response and the input items that led to it).
  int64_t responses_store_max_bytes = int64_t{256} << 20;
  /// A folder that keeps the stored responses across restarts (one file each); empty: memory.
  std::string responses_store_path;
  /// --limit-mm-per-prompt '{"image": N}': the most images one prompt may carry (vLLM's
  /// default, 999); more is a 400.
  int32_t max_images_per_prompt = 999;
  /// Where images may come from and how much of them is read: --allowed-media-domains,
  /// --allowed-local-media-path, --media-fetch-timeout, --max-image-bytes.
  media_policy media;
};

/// Reads vLLM's --limit-mm-per-prompt JSON ({"image": 4}, or {"image": {"count": 4, "width":
/// W, "height": H}}; other modalities accepted, their parts refused by the API) into
/// max_images_per_prompt; an error line, or empty.
std::string parse_limit_mm_per_prompt(std::string_view json, server_config& out);

/// Remote workers joining a server (`serve --cluster-port`, `worker --connect`). The join
/// point accepts a worker only when it proves the shared secret; without one, only with
/// insecure_loopback and on a loopback address (anyone who can reach the port could
/// otherwise attach a worker and answer requests).
struct cluster_config {
  int32_t port = -1;               ///< serve: the join port (-1: none, 0: any free port)
  std::string host;                ///< serve: address the join port listens on; empty: --host's
  std::string secret;              ///< shared by a server and its workers; never logged
  bool insecure_loopback = false;  ///< join without a secret, on a loopback address only

  /// Why joining through `address` (the server's listen address, or the host a worker
  /// connects to) is refused, as one line naming the flags to give; empty when allowed.
  std::string refusal(const std::string& address) const;
};

/// 127.0.0.0/8, ::1 and localhost.
bool is_loopback_address(const std::string& host);

/// One model of a server that serves several: its name in the API and its folder.
struct named_model {
  std::string name;
  std::string path;
  bool operator==(const named_model&) const = default;
};

/// Several models behind one server (config/served_models.hpp turns them into one
/// engine_config each); none given: the server serves model.model alone, as it always did.
struct models_config {
  std::vector<named_model> named;  ///< --model NAME=PATH, in the order given
  std::string models_dir;          ///< --models-dir: each sub-folder with a config.json
  std::string model_config_file;   ///< --model-config: JSON map model name -> its flags
  /// --models-kv-budget: bytes of device KV cache all models share (0: the single-model
  /// default, min(free memory x --gpu-memory-utilization, 4 GiB) on the CPU).
  int64_t kv_budget_bytes = 0;
  /// --max-loaded-models: at most this many models are loaded at once; loading one more
  /// unloads the least recently used idle one first (0: no limit).
  int32_t max_loaded = 0;
  /// --models-memory-budget: bytes the loaded models' weights and KV pools may take together;
  /// loading past it unloads least recently used idle models first (0: no limit).
  int64_t memory_budget_bytes = 0;
  /// --keep-alive: a model idle this many seconds is unloaded (0: kept loaded).
  double keep_alive_s = 0;
  /// --model-load-timeout: how long a request for a model that is not loaded waits for its
  /// load before a 503.
  double load_timeout_s = 300;
  bool many() const { return !named.empty() || !models_dir.empty(); }
};

struct engine_config {
  model_config model;
  models_config models;
  cache_config cache;
  scheduler_config scheduler;
  parallel_config parallel;
  autoscale_config autoscale;
  speculative_config speculative;
  lora_config lora;
  server_config server;
  cluster_config cluster;

  /// Every problem found, one clear line each; empty when the config is usable.
  std::vector<std::string> validate() const;
};

const char* to_string(preemption_mode mode);
const char* to_string(scheduling_policy policy);

}  // namespace actorllm
