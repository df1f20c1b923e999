#pragma once
/// A deterministic engine_port for the network tests and fuzzers (a test double shared by
/// tests/ and fuzz/, so it stands below both): choice c of a request produces tokens
/// "w0 ", "w1 ", ... (ids 100, 101, ...) up to max_tokens, one every `token_delay`, from its
/// own thread. A text prompt containing "too long" is rejected with 400, like a prompt over
/// max_model_len; the text "throw" makes submit throw. Records submits and aborts for the tests to
/// check.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/engine_port.hpp"

namespace actorllm::testing {

class fake_engine : public engine_port {
 public:
  std::chrono::milliseconds token_delay{0};
  std::atomic<bool> alive{true};
  std::atomic<std::size_t> waiting{0};
  int32_t max_model_len = 4096;
  std::atomic<bool> lora_updates{false};  ///< load/unload answer as --enable-lora-runtime-updates
  /// A load of the path "/slow" waits (as a slow adapter file would) until release_lora_load().
  void release_lora_load() {
    std::lock_guard lock(mutex_);
    lora_load_released_ = true;
    cv_.notify_all();
  }
  /// Waits until a load of "/slow" has begun; false on timeout.
  bool wait_for_lora_load(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [this] { return lora_load_started_; });
  }
  /// Serves /v1/embeddings (as --task embed): each input answers a 3-float vector after 50
  /// token delays, unless aborted first.
  std::atomic<bool> embeddings{false};

  ~fake_engine() override {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

  void submit(generate_request request, output_callback on_output) override {
    {
      std::lock_guard lock(mutex_);
      submitted_.push_back(request);
    }
    if (request.kind == prompt_kind::text && request.text == "throw") {
      throw std::runtime_error("fake engine fault");  // an internal fault: must become 500
    }
    if (request.kind == prompt_kind::text && request.text.find("too long") != std::string::npos) {
      request_output out;
      out.request_id = request.request_id;
      out.finish = finish_reason::error;
      out.error =
          "This model's maximum context length is 4096 tokens. However, your prompt "
          "has 5000 tokens.";
      out.error_status = 400;
      on_output(std::move(out));
      return;
    }
    std::lock_guard lock(mutex_);
    threads_.emplace_back(
        [this, request = std::move(request), on_output] { generate(request, on_output); });
  }

  void abort(const std::string& request_id) override {
    std::lock_guard lock(mutex_);
    aborted_.insert(request_id);
    cv_.notify_all();
  }

  void tokenize(generate_request request, std::function<void(tokenize_result)> done) override {
    tokenize_result result;
    if (!request.model.empty() && !model().answers_to(request.model)) {  // as the router's check
      result.error = "The model `" + request.model + "` does not exist.";
      result.error_status = 404;
      return done(std::move(result));
    }
    result.max_model_len = max_model_len;
    const std::string& text = request.kind == prompt_kind::chat ? request.chat_json : request.text;
    if (request.add_special_tokens) result.tokens.push_back(1);
    for (unsigned char c : text) result.tokens.push_back(c);
    done(std::move(result));
  }

  void detokenize(detokenize_request request,
                  std::function<void(detokenize_result)> done) override {
    detokenize_result result;
    for (int32_t t : request.tokens) {
      if (t < 0 || t > 255) {
        result.error = "token id " + std::to_string(t) + " is out of range";
        result.error_status = 400;
        break;
      }
      result.text.push_back(static_cast<char>(t));
    }
    std::lock_guard lock(mutex_);
    threads_.emplace_back([done, result] { done(result); });  // answers from another thread
  }

  /// The model's own output parsers (a server of several models); nullopt: the server's.
  std::optional<output_parsers> parsers;

  bool healthy() const override { return alive; }
  model_info model() const override {
    // Served as if started with --model /models/fake and no --served-model-name.
    model_info info{"fake-model", "/models/fake", max_model_len, 1700000000, {"/models/fake"}, {}};
    std::lock_guard lock(mutex_);
    info.adapters = adapters_;
    info.parsers = parsers;
    if (embeddings) {
      info.embeddings = true;
      info.embedding_size = 3;
      info.pooling = pooling_type::last;
    }
    return info;
  }
  /// Adapters load from any path but "/bad"; names are unique.
  lora_update_result load_lora_adapter(const lora_update_request& r) override {
    if (!lora_updates) return engine_port::load_lora_adapter(r);
    const std::string& name = r.name;
    const std::string& path = r.path;
    if (path == "/bad") return {"adapter_config.json: no such file", 400};
    std::unique_lock lock(mutex_);
    if (path == "/slow") {
      lora_load_started_ = true;
      cv_.notify_all();
      cv_.wait(lock, [this] { return lora_load_released_ || stopping_; });
    }
    for (const auto& a : adapters_)
      if (a.name == name) return {"adapter '" + name + "' is already loaded", 400};
    adapters_.push_back({name, path});
    return {};
  }
  lora_update_result unload_lora_adapter(const std::string& name) override {
    if (!lora_updates) return engine_port::unload_lora_adapter(name);
    std::lock_guard lock(mutex_);
    const auto gone =
        std::erase_if(adapters_, [&](const adapter_info& a) { return a.name == name; });
    if (gone == 0) return {"no LoRA adapter is loaded as '" + name + "'", 404};
    return {};
  }
  std::string metrics_text() override { return "# TYPE actorllm:fake gauge\nactorllm:fake 1\n"; }
  std::string engine_stats_json() override { return R"({"object":"engine.stats","fake":true})"; }
  std::size_t num_waiting() const override { return waiting; }
  void on_http_request(std::string_view path, int status) override {
    std::lock_guard lock(mutex_);
    http_requests_.push_back(std::string(path) + " " + std::to_string(status));
    cv_.notify_all();
  }

  bool was_aborted(const std::string& id) {
    std::lock_guard lock(mutex_);
    return aborted_.count(id) > 0;
  }
  std::size_t num_aborted() {
    std::lock_guard lock(mutex_);
    return aborted_.size();
  }
  std::vector<generate_request> submitted() {
    std::lock_guard lock(mutex_);
    return submitted_;
  }
  /// "path status" of each request counted, in order; waits (up to a second) until there are
  /// `at_least`, since a request is counted just after its answer is written.
  std::vector<std::string> http_requests(std::size_t at_least = 0) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::seconds(1), [&] { return http_requests_.size() >= at_least; });
    return http_requests_;
  }
  /// Waits until some request was aborted; false on timeout.
  bool wait_for_abort(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [this] { return !aborted_.empty(); });
  }

 private:
  bool stopped(const std::string& id) {
    std::lock_guard lock(mutex_);
    return stopping_ || aborted_.count(id) > 0;
  }

  void generate(const generate_request& request, const output_callback& on_output) {
    const int32_t num_prompt = request.kind == prompt_kind::token_ids
                                   ? static_cast<int32_t>(request.token_ids.size())
                                   : static_cast<int32_t>(request.text.size() + 1);
    if (request.params.pooling != pooling_type::none) {
      for (int step = 0; step < 50; ++step) {
        if (token_delay.count() > 0) std::this_thread::sleep_for(token_delay);
        if (stopped(request.request_id)) return;
      }
      request_output out;
      out.request_id = request.request_id;
      out.finish = finish_reason::stop;
      out.embedding = {0.25f, 0.5f, 0.75f};
      out.num_prompt_tokens = num_prompt;
      on_output(std::move(out));
      return;
    }
    const int32_t max_tokens = request.params.max_tokens < 0 ? 8 : request.params.max_tokens;
    for (int32_t j = 0; j < max_tokens; ++j) {
      if (token_delay.count() > 0) std::this_thread::sleep_for(token_delay);
      if (stopped(request.request_id)) return;
      for (int32_t c = 0; c < request.params.n; ++c) {
        request_output out;
        out.request_id = request.request_id;
        out.index = c;
        // A char before to_string(j), not the literal "w": GCC 12 warns falsely (-Wrestrict)
        // on "w" + std::to_string(j).
        out.text = 'w' + std::to_string(j) + ' ';
        out.token_ids = {100 + j};
        out.num_prompt_tokens = num_prompt;
        out.num_generated_tokens = j + 1;
        if (request.params.logprobs >= 0) {
          out.token_texts = {out.text};
          token_logprob lp;
          lp.token_id = 100 + j;
          lp.logprob = -0.5f;
          for (int32_t k = 0; k < request.params.logprobs; ++k) {
            lp.top_ids.push_back(100 + k);
            lp.top_logprobs.push_back(-0.5f - k);
            lp.top_texts.push_back('a' + std::to_string(k));
          }
          out.logprobs = {lp};
        }
        if (j + 1 == max_tokens) out.finish = finish_reason::length;
        on_output(std::move(out));
      }
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  std::vector<generate_request> submitted_;
  std::vector<adapter_info> adapters_;
  std::set<std::string> aborted_;
  bool lora_load_started_ = false, lora_load_released_ = false;
  std::vector<std::string> http_requests_;
};

}  // namespace actorllm::testing
