// WebSocket at /v1/ws: several completion or chat calls at once on one connection, each
// tagged by a client-chosen id. Protocol (see net/README.md):
//   client -> {"id": "a", "prompt": ...} | {"id": "b", "messages": [...]}  (any OpenAI fields)
//             {"type": "cancel", "id": "a"}
//   server -> the streaming chunk objects of each call, with "id" set to the client's id;
//             then exactly one of {"type": "done", "id"}, {"type": "cancelled", "id"},
//             {"type": "error", "id", "error": {...}}.
#include <chrono>
#include <deque>
#include <exception>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "api/access.hpp"
#include "api/admission.hpp"
#include "api/openai_call.hpp"
#include "api/openai_protocol.hpp"
#include "net/access_log.hpp"
#include "net/beast.hpp"

namespace actorllm::net {
namespace {

using json = nlohmann::json;

class websocket_session : public std::enable_shared_from_this<websocket_session> {
 public:
  websocket_session(server_context& context, connection_stream stream, http_request upgrade,
                    std::string peer)
      : context_(context),
        ws_(std::move(stream)),
        executor_(ws_.get_executor()),
        upgrade_(std::move(upgrade)),
        peer_(std::move(peer)) {}

  ~websocket_session() { context_.sessions->remove(registry_key_); }

  void start() {
    registry_key_ = context_.sessions->add([weak = weak_from_this(), executor = executor_] {
      asio::post(executor, [weak] {
        if (auto self = weak.lock()) self->on_server_stopping();
      });
    });
    ws_.next_layer().tcp().expires_never();
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    // A browser that offered "actorllm" (to carry its key, see websocket_authorization) fails
    // the connection unless the answer names the protocol.
    const bool named = api::offers_actorllm_protocol(upgrade_[http::field::sec_websocket_protocol]);
    ws_.set_option(websocket::stream_base::decorator([named](websocket::response_type& res) {
      res.set(http::field::server, "actorllm");
      if (named) res.set(http::field::sec_websocket_protocol, "actorllm");
    }));
    ws_.read_message_max(
        static_cast<uint64_t>(std::max<int64_t>(1, context_.api.config.max_body_bytes)));
    ws_.text(true);
    outputs_ =
        std::make_shared<mailbox<request_output>>([weak = weak_from_this(), gate = context_.gate] {
          gate->run_if_open([&] {
            if (auto self = weak.lock()) {
              asio::post(self->executor_, [self] { self->on_outputs(); });
            }
          });
        });
    ws_.async_accept(upgrade_, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->on_closed();
      self->do_read();
    });
  }

 private:
  struct active_call {
    std::string client_id;
    std::unique_ptr<api::openai_call> call;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  };

  /// The access-log line of one call, written when it ends.
  void log_call(const active_call& active, int status) {
    context_.api.engine.on_http_request("/v1/ws", status);
    if (!context_.options.access_log) return;
    const double millis =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - active.start)
            .count();
    log_access(peer_, "WS", "/v1/ws", status, millis, active.client_id);
  }

  void do_read() {
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->on_closed();
      std::string message = beast::buffers_to_string(self->buffer_.data());
      self->buffer_.consume(self->buffer_.size());
      try {
        self->on_message(message);
      } catch (const std::exception& e) {
        self->send_terminal("error", {}, api::error_object(api::internal_error(e.what())));
      }
      self->do_read();
    });
  }

  void on_message(const std::string& message) {
    json body;
    if (auto error = api::parse_json_object(message, body)) {
      return send_terminal("error", {}, api::error_object(*error));
    }
    std::string id;
    if (auto it = body.find("id"); it != body.end() && it->is_string()) {
      id = it->get<std::string>();
    } else if (it != body.end() && it->is_number_integer()) {
      id = std::to_string(it->get<int64_t>());
    }
    if (id.empty()) {
      return send_terminal("error", {},
                           api::error_object(api::bad_request("id is required", "id")));
    }
    if (id.size() > max_id_bytes) {
      return send_terminal(
          "error", {},
          api::error_object(api::bad_request(
              "id must be at most " + std::to_string(max_id_bytes) + " bytes", "id")));
    }
    const std::string type = body.value("type", std::string());
    if (type == "cancel") return cancel(id);
    if (!type.empty() && type != "completion" && type != "completions" && type != "chat" &&
        type != "chat.completions") {
      return send_terminal(
          "error", id,
          api::error_object(api::bad_request(
              "unknown message type '" + type + "' (completion, chat or cancel)", "type")));
    }
    if (calls_.count(id)) {
      return send_terminal(
          "error", id,
          api::error_object(api::bad_request("id " + id + " is already running", "id")));
    }
    if (calls_.size() >= max_calls_per_connection) {
      return send_terminal("error", id,
                           api::error_object(api::engine_error(
                               "at most " + std::to_string(max_calls_per_connection) +
                                   " calls may run at once on one "
                                   "connection; open another or wait",
                               429)));
    }
    const bool chat =
        type == "chat" || type == "chat.completions" || (type.empty() && body.contains("messages"));
    body["stream"] = true;  // a WebSocket call always streams
    api::openai_request parsed;
    if (auto error = api::parse_openai_json(
            body, chat ? api::api_kind::chat : api::api_kind::completion, parsed,
            api::sampling_defaults_for(context_.api,
                                       body.contains("model") && body["model"].is_string()
                                           ? body["model"].get<std::string>()
                                           : std::string()),
            message,
            context_.api.tools_of(api::model_for_name(
                context_.api, body.contains("model") && body["model"].is_string()
                                  ? body["model"].get<std::string>()
                                  : std::string())))) {
      return send_terminal("error", id, api::error_object(*error));
    }
    // A model that is not loaded starts loading (on demand), and this call is refused as
    // loading: a WebSocket call does not hold its connection's other calls back to wait.
    if (context_.api.engine.num_models() > 1)
      if (const auto found = context_.api.engine.find_model(parsed.model);
          found && found->state == model_state::unloaded)
        context_.api.engine.await_model(parsed.model, [] {});
    model_info model;
    if (auto error = api::admit(context_.api, parsed, model)) {
      return send_terminal("error", id, api::error_object(*error));
    }
    auto active = std::make_shared<active_call>();
    active->client_id = id;
    auto box = outputs_;
    active->call = api::start_call(
        context_.api, std::move(parsed), model, id,
        [box](request_output out) { box->push(std::move(out)); },
        /*error_chunk=*/false);
    // Only a call that started is kept: start_call throws on an engine fault, and an entry
    // without a call would be dereferenced by a cancel or the close.
    calls_[id] = active;
    for (const auto& engine_id : active->call->engine_ids()) by_engine_id_[engine_id] = active;
  }

  void cancel(const std::string& id) {
    auto it = calls_.find(id);
    if (it == calls_.end()) {
      return send_terminal("error", id,
                           api::error_object(api::not_found("no running request with id " + id)));
    }
    api::abort_call(context_.api, *it->second->call);
    log_call(*it->second, 499);
    forget(id);
    send_terminal("cancelled", id, {});
  }

  void on_outputs() {
    if (closed_) return;
    std::vector<request_output> outs = outputs_->take();
    api::merge_deltas(outs);
    std::vector<std::string> chunks;
    for (const auto& out : outs) {
      auto it = by_engine_id_.find(out.request_id);
      if (it == by_engine_id_.end()) continue;  // cancelled or already over
      const std::shared_ptr<active_call> active = it->second;
      api::openai_call& call = *active->call;
      chunks.clear();
      call.add(out, chunks);
      for (auto& chunk : chunks) enqueue(std::move(chunk));
      if (!call.done()) continue;
      if (call.failed()) {
        api::abort_call(context_.api, call);
        send_terminal("error", active->client_id, api::error_object(*call.error()));
        log_call(*active, call.error()->status);
      } else {
        if (call.options().include_usage) enqueue(call.usage_chunk());
        send_terminal("done", active->client_id, {});
        log_call(*active, 200);
      }
      forget(active->client_id);
    }
  }

  void forget(const std::string& id) {
    auto it = calls_.find(id);
    if (it == calls_.end()) return;
    for (const auto& engine_id : it->second->call->engine_ids()) by_engine_id_.erase(engine_id);
    calls_.erase(it);
  }

  /// The last message of a call (or a message about no call when `id` is empty).
  void send_terminal(const char* type, const std::string& id, json error) {
    json message = {{"type", type}, {"id", id.empty() ? json() : json(id)}};
    if (!error.is_null()) message["error"] = std::move(error["error"]);
    enqueue(api::to_wire(message));
  }

  void enqueue(std::string message) {
    if (closed_) return;
    queued_bytes_ += message.size();
    queue_.push_back(std::move(message));
    if (queued_bytes_ > context_.options.max_queued_output_bytes) {
      return on_closed();  // the client does not read: stop rather than buffer without bound
    }
    if (!writing_) write_next();
  }

  /// The server is stopping: every call ends with an error message, then the socket closes.
  void on_server_stopping() {
    if (closed_ || stopping_) return;
    stopping_ = true;
    for (const auto& [id, active] : calls_) {
      api::abort_call(context_.api, *active->call);
      send_terminal("error", id,
                    api::error_object(api::engine_error("the server is shutting down", 503)));
      log_call(*active, 503);
    }
    calls_.clear();
    by_engine_id_.clear();
    if (!writing_) write_next();
  }

  void write_next() {
    if (stopping_ && queue_.empty()) return on_closed();
    if (queue_.empty() || closed_) return;
    writing_ = true;
    ws_.async_write(asio::buffer(queue_.front()),
                    [self = shared_from_this()](beast::error_code ec, std::size_t) {
                      self->writing_ = false;
                      self->queued_bytes_ -= self->queue_.front().size();
                      self->queue_.pop_front();
                      if (ec) return self->on_closed();
                      self->write_next();
                    });
  }

  /// The client went away (or broke the protocol): abort whatever it still had running.
  void on_closed() {
    if (closed_) return;
    closed_ = true;
    for (const auto& [id, active] : calls_) {
      api::abort_call(context_.api, *active->call);
      log_call(*active, 499);
    }
    calls_.clear();
    by_engine_id_.clear();
    // The message being written stays until its write completes: asio reads from it until then.
    while (queue_.size() > (writing_ ? 1u : 0u)) queue_.pop_back();
    queued_bytes_ = queue_.empty() ? 0 : queue_.front().size();
    beast::error_code ignored;
    ws_.next_layer().tcp().socket().close(ignored);
  }

  server_context& context_;
  websocket::stream<connection_stream> ws_;
  const asio::any_io_executor executor_;
  http_request upgrade_;
  std::string peer_;
  beast::flat_buffer buffer_;
  std::shared_ptr<mailbox<request_output>> outputs_;
  std::unordered_map<std::string, std::shared_ptr<active_call>> calls_;         // by client id
  std::unordered_map<std::string, std::shared_ptr<active_call>> by_engine_id_;  // by engine id
  std::deque<std::string> queue_;
  size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool closed_ = false;
  bool stopping_ = false;
  uint64_t registry_key_ = 0;

  static constexpr size_t max_id_bytes = 256;
  static constexpr size_t max_calls_per_connection = 64;
};

}  // namespace

void run_websocket_session(server_context& context, connection_stream stream, http_request upgrade,
                           std::string peer) {
  std::make_shared<websocket_session>(context, std::move(stream), std::move(upgrade),
                                      std::move(peer))
      ->start();
}

}  // namespace actorllm::net
