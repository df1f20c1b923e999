#include "config/vllm_flags.hpp"

#include <algorithm>
#include <cstdio>

namespace actorllm {

namespace {

vllm_flag accepted_switch(std::string name, std::string note = {}) {
  return {std::move(name), false, false, {}, std::move(note)};
}
vllm_flag accepted_value(std::string name, std::vector<std::string> values, std::string note = {}) {
  return {std::move(name), true, false, std::move(values), std::move(note)};
}
vllm_flag refused_switch(std::string name, std::string reason) {
  return {std::move(name), false, true, {}, std::move(reason)};
}
vllm_flag refused_value(std::string name, std::string reason) {
  return {std::move(name), true, true, {}, std::move(reason)};
}

const std::string no_hub =
    "models load from a local folder (--model DIR); nothing is fetched from a hub";
const std::string no_images =
    "the multimodal processor takes no options: images are prepared as the model's "
    "preprocessor_config.json says, and audio and video are not served";
const std::string cluster =
    "one machine serves several replicas (--data-parallel-size, --replicas); other machines "
    "join as workers (--cluster-port, `actorllm worker --connect`)";

std::string joined(const std::vector<std::string>& values, const char* separator) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : separator) + v;
  return out;
}

std::vector<vllm_flag> make_table() {
  return {
      // Frontend.
      accepted_value("--uvicorn-log-level", {}, "--uvicorn-log-level: there is no uvicorn here"),
      accepted_switch("--disable-uvicorn-access-log"),
      accepted_switch("--allow-credentials",
                      "--allow-credentials: CORS answers never allow credentials here"),
      accepted_value("--allowed-methods", {}, "--allowed-methods: CORS allows GET, POST, OPTIONS"),
      accepted_value("--allowed-headers", {},
                     "--allowed-headers: CORS allows Authorization, Content-Type, X-Request-Id"),
      accepted_value("--chat-template-content-format", {"auto", "string"}),
      accepted_value("--root-path", {},
                     "--root-path: routes stay at /, as vLLM's do; a proxy strips the prefix"),
      refused_switch("--enable-ssl-refresh",
                     "certificates are read at start: restart the server to take new ones"),
      refused_value("--middleware", "no Python middleware runs here"),
      refused_switch("--return-tokens-as-token-ids",
                     "logprobs name tokens by their text; token_id:N strings are not written "
                     "yet"),
      accepted_switch("--disable-frontend-multiprocessing"),
      accepted_switch("--enable-request-id-headers",
                      "--enable-request-id-headers: X-Request-Id is always echoed"),
      refused_value("--tool-parser-plugin", "no Python plugins run here: --tool-call-parser"),
      refused_value("--tool-server", "no tool servers are called here"),
      refused_switch("--expand-tools-even-if-tool-choice-none",
                     "tools are rendered into the prompt as the chat template does"),
      refused_value("--log-config-file", "logging goes to stderr, one line an event"),
      accepted_value("--max-log-len", {}, "--max-log-len: prompts are never logged"),
      accepted_switch("--disable-fastapi-docs"),
      refused_switch("--enable-prompt-tokens-details",
                     "usage has no prompt_tokens_details (cached tokens) yet"),
      accepted_switch("--enable-server-load-tracking",
                      "--enable-server-load-tracking: /metrics shows the load"),
      refused_switch("--enable-tokenizer-info-endpoint", "there is no /tokenizer_info endpoint"),
      accepted_switch("--enable-log-outputs", "--enable-log-outputs: outputs are never logged"),
      accepted_switch("--enable-log-requests", "--enable-log-requests: prompts are never logged"),
      accepted_switch("--disable-log-requests"),
      accepted_value("--h11-max-incomplete-event-size", {}),
      accepted_value("--h11-max-header-count", {}),
      accepted_switch("--log-error-stack"),
      // Model.
      accepted_value("--runner", {"auto", "generate"}, "--runner: --task embed serves pooling"),
      accepted_value("--convert", {"auto", "none"}),
      accepted_value("--tokenizer-mode", {"auto", "hf"}),
      accepted_switch("--trust-remote-code",
                      "--trust-remote-code: no remote code runs here; only built-in "
                      "architectures load"),
      refused_value("--hf-config-path", "config.json is read from the model folder"),
      refused_value("--revision", no_hub),
      refused_value("--code-revision", no_hub),
      refused_value("--tokenizer-revision", no_hub),
      refused_value("--hf-token", no_hub),
      refused_value("--rope-scaling", "rope_scaling is read from config.json"),
      refused_value("--rope-theta", "rope_theta is read from config.json"),
      refused_value("--hf-overrides", "config.json is read as it is"),
      accepted_value("--logprobs-mode", {"raw_logprobs"}),
      refused_switch("--disable-sliding-window",
                     "windowed layers attend within their window, as the model was trained"),
      accepted_switch("--disable-cascade-attn"),
      refused_switch("--skip-tokenizer-init", "requests are tokenized here"),
      refused_switch("--enable-prompt-embeds", "prompts are text or token ids"),
      accepted_switch("--disable-async-output-proc"),
      accepted_value("--config-format", {"auto", "hf"}),
      refused_value("--override-neuron-config", "there is no Neuron backend"),
      refused_value("--logits-processor-pattern", "no Python logits processors run here"),
      refused_value("--logits-processors", "no Python logits processors run here"),
      refused_value("--override-generation-config",
                    "generation_config.json is read as it is (--generation-config)"),
      refused_switch("--enable-sleep-mode", "a server holds its weights while it runs"),
      accepted_value("--model-impl", {"auto"}),
      refused_value("--override-attention-dtype", "attention runs in the activations' type"),
      refused_value("--io-processor-plugin", "no Python plugins run here"),
      // Loading.
      accepted_value("--load-format", {"auto", "safetensors"}),
      refused_value("--download-dir", no_hub),
      refused_value("--model-loader-extra-config", "the loader takes no options"),
      refused_value("--ignore-patterns", "only model.safetensors and its index are read"),
      accepted_switch("--use-tqdm-on-load"),
      accepted_value("--pt-load-map-location", {}),
      // Structured output and reasoning.
      accepted_value("--guided-decoding-backend", {},
                     "--guided-decoding-backend: structured outputs use the built-in grammar "
                     "engine"),
      accepted_value("--structured-outputs-config", {},
                     "--structured-outputs-config: structured outputs use the built-in grammar "
                     "engine"),
      // Parallelism.
      accepted_value("--distributed-executor-backend", {"mp", "uni"},
                     "--distributed-executor-backend: ranks and replicas are actors"),
      accepted_value("--pipeline-parallel-size", {"1"}),
      refused_value("--data-parallel-rank", cluster),
      refused_value("--data-parallel-size-local", cluster),
      refused_value("--data-parallel-address", cluster),
      refused_value("--data-parallel-rpc-port", cluster),
      refused_value("--data-parallel-backend", cluster),
      refused_switch("--data-parallel-hybrid-lb", cluster),
      refused_switch("--enable-expert-parallel",
                     "experts are not sharded: a mixture of experts runs on one rank"),
      refused_switch("--enable-eplb",
                     "experts are not sharded: a mixture of experts runs on one "
                     "rank"),
      accepted_value("--max-parallel-loading-workers", {}),
      accepted_switch("--disable-custom-all-reduce"),
      refused_value("--worker-cls", "no Python workers run here"),
      refused_value("--worker-extension-cls", "no Python workers run here"),
      // Cache.
      accepted_value("--prefix-caching-hash-algo", {"builtin", "sha256"}),
      refused_value("--cpu-offload-gb", "weights stay on the device that runs them"),
      refused_switch("--calculate-kv-scales",
                     "float8 KV caches run without scales (k_scale = v_scale = 1)"),
      refused_switch("--kv-sharing-fast-prefill", "KV is never shared across layers"),
      // Multimodal.
      refused_value("--media-io-kwargs", no_images),
      refused_value("--mm-processor-kwargs", no_images),
      refused_value("--mm-processor-cache-gb", no_images),
      refused_switch("--disable-mm-preprocessor-cache", no_images),
      refused_switch("--interleave-mm-strings", no_images),
      refused_switch("--skip-mm-profiling", no_images),
      // LoRA.
      refused_switch("--enable-lora-bias", "adapters with biases are refused at load"),
      accepted_value("--lora-extra-vocab-size", {"0", "256"}),
      accepted_value("--lora-dtype", {"auto"}),
      accepted_value("--max-cpu-loras", {}, "--max-cpu-loras: loaded adapters stay in memory"),
      refused_switch("--fully-sharded-loras", "adapters run on one shard"),
      refused_value("--default-mm-loras", no_images),
      // Observability.
      accepted_value("--show-hidden-metrics-for-version", {}),
      refused_value("--otlp-traces-endpoint",
                    "there is no OpenTelemetry tracing: Prometheus metrics are at /metrics"),
      refused_value("--collect-detailed-traces",
                    "there is no OpenTelemetry tracing: Prometheus metrics are at /metrics"),
      // Scheduler.
      accepted_value("--max-num-partial-prefills", {"1"}),
      accepted_value("--max-long-partial-prefills", {"1"}),
      accepted_value("--long-prefill-token-threshold", {"0"}),
      accepted_value("--num-lookahead-slots", {"0"}),
      accepted_value("--scheduler-delay-factor", {"0", "0.0"}),
      accepted_value("--num-scheduler-steps", {"1"}),
      accepted_switch("--multi-step-stream-outputs"),
      accepted_switch("--enable-chunked-prefill"),
      accepted_switch("--no-enable-chunked-prefill",
                      "--no-enable-chunked-prefill: prefill is always chunked by the token "
                      "budget"),
      accepted_switch("--disable-chunked-mm-input"),
      refused_value("--scheduler-cls", "the scheduler is an actor of its own"),
      accepted_switch("--disable-hybrid-kv-cache-manager"),
      // Other.
      refused_value("--kv-transfer-config", "KV is not transferred between instances"),
      refused_value("--kv-events-config", "KV cache events are not published"),
      accepted_value("--compilation-config", {},
                     "--compilation-config: nothing is compiled at start; CUDA graphs follow "
                     "--enforce-eager"),
      refused_value("--additional-config", "there are no platform plugins"),
  };
}

}  // namespace

const std::vector<vllm_flag>& vllm_flags() {
  static const std::vector<vllm_flag> table = make_table();
  return table;
}

void add_vllm_compatibility_flags(flag_parser& p) {
  for (const vllm_flag& f : vllm_flags()) {
    std::string help = "vLLM's; ";
    if (f.refused) {
      help += "refused: " + f.note;
    } else {
      help += "accepted";
      if (!f.values.empty()) help += " as " + joined(f.values, " or ");
      if (!f.note.empty()) help += " (" + f.note + ")";
    }
    auto check = [&f](std::string_view value) -> std::string {
      if (f.refused) return "not supported: " + f.note;
      if (!f.values.empty() &&
          std::find(f.values.begin(), f.values.end(), value) == f.values.end()) {
        return "only " + joined(f.values, " or ") + " means what actorllm does (got '" +
               std::string(value) + "')";
      }
      if (!f.note.empty()) std::fprintf(stderr, "actorllm: %s\n", f.note.c_str());
      return {};
    };
    if (f.takes_value)
      p.add(f.name, "VALUE", help, check);
    else
      p.add_switch(f.name, help, check);
  }
}

}  // namespace actorllm
