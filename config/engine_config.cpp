#include "config/engine_config.hpp"

#include <filesystem>
#include <system_error>

namespace actorllm {

const char* to_string(preemption_mode mode) {
  return mode == preemption_mode::swap ? "swap" : "recompute";
}

const char* to_string(scheduling_policy policy) {
  return policy == scheduling_policy::priority ? "priority" : "fcfs";
}

std::vector<std::string> engine_config::validate() const {
  std::vector<std::string> errors;
  auto require = [&](bool ok, std::string message) {
    if (!ok) errors.push_back(std::move(message));
  };
  require(!model.model.empty() || models.many(), "--model: a model folder is required");
  require(models.model_config_file.empty() || models.many(),
          "--model-config: gives flags to the models of --model NAME=PATH or --models-dir");
  require(model.dtype == "auto" || model.dtype == "float32" || model.dtype == "float16" ||
              model.dtype == "bfloat16" || model.dtype == "half" || model.dtype == "float",
          "--dtype: must be one of auto, float32, float16, bfloat16 (got '" + model.dtype + "')");
  require(
      model.quantization == "none" || model.quantization == "int8" || model.quantization == "int4",
      "--quantization: must be none, int8 or int4 (got '" + model.quantization +
          "'; quantized checkpoints are recognised from config.json)");
  require(model.max_model_len >= 0, "--max-model-len: must be positive");
  require(model.max_seq_len_to_capture >= 1, "--max-seq-len-to-capture: must be >= 1");
  require(model.max_logprobs >= 0 && model.max_logprobs <= 1024,
          "--max-logprobs: must be in [0, 1024]");
  const int32_t bs = cache.block_size;
  require(bs == 1 || bs == 8 || bs == 16 || bs == 32 || bs == 64 || bs == 128,
          "--block-size: must be one of 1, 8, 16, 32, 64, 128 (got " + std::to_string(bs) + ")");
  require(cache.swap_space_gib >= 0, "--swap-space: must be >= 0 GiB");
  require(cache.kv_cache_memory_bytes >= -1, "--kv-cache-memory-bytes: must be >= 0");
  require(cache.kv_offload_bytes >= 0 && cache.kv_offload_bytes <= (int64_t{1} << 46),
          "--kv-offload-bytes: must be in [0, 64 TiB]");
  require(cache.kv_offload_dir.empty() || cache.kv_offload_bytes > 0,
          "--kv-offload-dir: needs --kv-offload-bytes, the size of the tier");
  require(cache.kv_offload_bytes == 0 || cache.enable_prefix_caching,
          "--kv-offload-bytes: the second KV tier holds prefix-cache blocks; it needs prefix "
          "caching (drop --no-enable-prefix-caching)");
  require(cache.kv_offload_bytes == 0 || parallel.tensor_parallel_size == 1,
          "--kv-offload-bytes: the second KV tier serves engines of one worker "
          "(--tensor-parallel-size 1)");
  require(models.kv_budget_bytes >= 0, "--models-kv-budget: must be >= 0 bytes");
  require(models.max_loaded >= 0 && models.max_loaded <= 64,
          "--max-loaded-models: must be in [0, 64] (0: no limit)");
  require(models.memory_budget_bytes >= 0, "--models-memory-budget: must be >= 0 bytes");
  require(models.keep_alive_s >= 0 && models.keep_alive_s <= 1e7,
          "--keep-alive: must be in [0, 1e7] seconds (0: kept loaded)");
  require(models.load_timeout_s > 0 && models.load_timeout_s <= 86400,
          "--model-load-timeout: must be in (0, 86400] seconds");
  require(cache.cache_dtype == "auto" || cache.cache_dtype == "float32" ||
              cache.cache_dtype == "float16" || cache.cache_dtype == "fp8" ||
              cache.cache_dtype == "fp8_e4m3",
          "--kv-cache-dtype: must be auto, float32, float16 or fp8 (fp8_e4m3)");
  require(cache.gpu_memory_utilization > 0 && cache.gpu_memory_utilization <= 1,
          "--gpu-memory-utilization: must be in (0, 1]");
  require(scheduler.max_num_seqs >= 1, "--max-num-seqs: must be >= 1");
  require(scheduler.max_num_batched_tokens >= 1, "--max-num-batched-tokens: must be >= 1");
  require(scheduler.stream_interval >= 1, "--stream-interval: must be >= 1");
  require(scheduler.max_waiting_requests >= 1, "--max-waiting-requests: must be >= 1");
  require(parallel.tensor_parallel_size >= 1, "--tensor-parallel-size: must be >= 1");
  require(parallel.replicas >= 1, "--replicas: must be >= 1");
  require(parallel.routing_balance_tokens >= 0, "--routing-balance-tokens: must be >= 0");
  if (autoscale.enabled()) {
    require(autoscale.min_replicas >= 1 && autoscale.min_replicas <= autoscale.max_replicas,
            "--autoscale: must have 1 <= MIN <= MAX");
    require(autoscale.up_window_s >= 0 && autoscale.down_window_s >= 0 && autoscale.cooldown_s >= 0,
            "--autoscale-up-window, --autoscale-down-window, --autoscale-cooldown: must be >= 0");
    require(autoscale.interval_s > 0, "the autoscaler's sampling interval must be > 0");
  }
  if (lora.enable_lora) {
    require(lora.max_loras >= 1 && lora.max_loras <= 64, "--max-loras: must be in [1, 64]");
    require(lora.max_lora_rank >= 1 && lora.max_lora_rank <= 512,
            "--max-lora-rank: must be in [1, 512]");
    require(parallel.tensor_parallel_size == 1,
            "--enable-lora: adapters run on one shard (--tensor-parallel-size 1)");
    require(!model.embeds(), "--enable-lora: adapters serve --task generate only");
    for (const auto& m : lora.modules)
      require(m.name != model.served_model_name,
              "--lora-modules: '" + m.name + "' is the base model's served name");
  } else {
    require(lora.modules.empty() && !lora.runtime_updates,
            "--lora-modules and --enable-lora-runtime-updates need --enable-lora");
  }
  require(parallel.cpu_threads >= 0, "--cpu-threads: must be >= 0");
  require(parallel.cpu_bind == "none" || parallel.cpu_bind == "cores",
          "--cpu-bind: must be none or cores (got '" + parallel.cpu_bind + "')");
  require(parallel.device == "auto" || parallel.device == "cpu" || parallel.device == "cuda",
          "--device: must be auto, cpu or cuda (got '" + parallel.device + "')");
  require(server.port != 0, "--port: must be in 1..65535");
  require(server.max_body_bytes > 0, "--max-body-bytes: must be positive");
  require(server.io_threads >= 1, "--io-threads: must be >= 1");
  require(server.log_stats_interval >= 0, "--log-stats-interval: must be >= 0");
  require(server.responses_store_max_items >= 0, "--responses-store-max-items: must be >= 0");
  require(server.responses_store_max_bytes > 0, "--responses-store-max-bytes: must be positive");
  require(server.max_images_per_prompt >= 0, "--limit-mm-per-prompt: the image count must be >= 0");
  require(server.media.timeout.count() > 0 && server.media.timeout.count() <= 3600 * 1000,
          "--media-fetch-timeout: must be in (0, 3600] seconds");
  require(server.media.max_bytes >= 1 && server.media.max_bytes <= (size_t{1} << 30),
          "--max-image-bytes: must be in [1, 1073741824] (1 GiB)");
  require(server.media.max_redirects >= 0 && server.media.max_redirects <= 20,
          "the media fetcher's redirects must be in [0, 20]");
  if (!server.media.allowed_local_path.empty()) {
    std::error_code error;
    const auto& path = server.media.allowed_local_path;
    require(path.is_absolute() && std::filesystem::is_directory(path, error),
            "--allowed-local-media-path: '" + path.string() +
                "' must be an absolute path to a "
                "folder that exists");
  }
  for (const auto& domain : server.media.allowed_domains)
    require(!domain.empty() && domain.find_first_of("/:@ ") == std::string::npos,
            "--allowed-media-domains: '" + domain + "' is not a host name");
  require(cluster.port >= -1 && cluster.port <= 65535, "--cluster-port: must be in -1..65535");
  return errors;
}

bool is_loopback_address(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

std::string cluster_config::refusal(const std::string& address) const {
  if (!secret.empty()) return {};
  if (!insecure_loopback)
    return "joining workers must prove a shared secret: give --cluster-secret-file PATH (or "
           "--cluster-secret) on the server and its workers, or --cluster-insecure-loopback on "
           "a loopback address";
  if (!is_loopback_address(address))
    return "--cluster-insecure-loopback: '" + address +
           "' is not a loopback address; anyone who reaches it could join without a secret "
           "(use 127.0.0.1, or give --cluster-secret-file)";
  return {};
}

}  // namespace actorllm
