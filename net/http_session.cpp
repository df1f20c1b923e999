// One HTTP/1.1 connection: reads requests one after the other (keep-alive), asks
// api::plan_request what each one gets, and carries the plan out: sends its answer, or starts
// its work (a completion call as one JSON body or as SSE, embeddings, tokenize, a LoRA update,
// an admin call (replicas or models), the WebSocket upgrade, a file of the playground).
// Every handler runs on the connection's strand; engine threads reach it only through a
// mailbox and the server's post_gate.
#include <chrono>
#include <cstdio>
#include <exception>

#include "api/admin_api.hpp"
#include "api/admin_models_api.hpp"
#include "api/admission.hpp"
#include "api/endpoint_bodies.hpp"
#include "api/ids.hpp"
#include "api/lora_api.hpp"
#include "api/request_plan.hpp"
#include "api/responses_api.hpp"
#include "common/output_merge.hpp"
#include "net/access_log.hpp"
#include "net/beast.hpp"
#include "net/sse.hpp"
#include "net/web_assets.hpp"

namespace actorllm::net {
namespace {

using clock_type = std::chrono::steady_clock;

bool is_parse_error(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_target).category();
}

/// Chunked transfer encoding of one piece of an SSE stream.
void append_chunk(std::string& out, std::string_view data) {
  char size[24];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  out.append(size, n).append(data).append("\r\n");
}

/// The parts of `request`'s head that api::plan_request reads (views into `request`).
api::request_head head_of(const http_request& request) {
  api::request_head head;
  head.method = request.method_string();
  head.target = request.target();
  head.http_1_1 = request.version() >= 11;
  if (const auto host = request.find(http::field::host); host != request.end())
    head.host = std::string_view(host->value());
  head.origin = request[http::field::origin];
  head.authorization = request[http::field::authorization];
  head.api_key = request["x-api-key"];
  head.websocket_protocols = request[http::field::sec_websocket_protocol];
  head.content_type = request[http::field::content_type];
  head.requested_headers = request[http::field::access_control_request_headers];
  head.has_body = !request.body().empty();
  head.websocket_upgrade = websocket::is_upgrade(request);
  return head;
}

class http_session : public std::enable_shared_from_this<http_session> {
 public:
  http_session(server_context& context, tcp::socket socket, asio::ssl::context* tls)
      : context_(context),
        stream_(tls ? connection_stream(beast::tcp_stream(std::move(socket)), *tls)
                    : connection_stream(beast::tcp_stream(std::move(socket)))),
        executor_(stream_.get_executor()) {
    beast::error_code ec;
    const auto remote = stream_.tcp().socket().remote_endpoint(ec);
    peer_ = ec ? "?" : remote.address().to_string() + ":" + std::to_string(remote.port());
  }

  ~http_session() { context_.sessions->remove(registry_key_); }

  void start() {
    registry_key_ = context_.sessions->add([weak = weak_from_this(), executor = executor_] {
      asio::post(executor, [weak] {
        if (auto self = weak.lock()) self->on_server_stopping();
      });
    });
    asio::dispatch(executor_, [self = shared_from_this()] { self->handshake(); });
  }

 private:
  // ---- reading requests -------------------------------------------------------------
  /// The TLS handshake (nothing on a plain connection), bounded by the idle timeout: a client
  /// that connects and says nothing holds no session.
  void handshake() {
    stream_.tcp().expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(context_.options.idle_timeout_s)));
    stream_.async_handshake([self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->close();
      self->do_read();
    });
  }

  void do_read() {
    if (closed_) return;
    request_ = {};
    parser_.emplace();
    parser_->body_limit(
        static_cast<uint64_t>(std::max<int64_t>(0, context_.api.config.max_body_bytes)));
    stream_.tcp().expires_after(
        std::chrono::milliseconds(static_cast<int64_t>(context_.options.idle_timeout_s * 1000.0)));
    skip_blank_lines();
  }

  /// Empty lines before a request line are ignored (RFC 9112 2.2: a client may send a CRLF
  /// after a request body); the parser would call them a malformed request.
  void skip_blank_lines() {
    const auto data = buffer_.cdata();
    const char* bytes = static_cast<const char*>(data.data());
    std::size_t blank = 0;
    while (blank < data.size() && (bytes[blank] == '\r' || bytes[blank] == '\n')) ++blank;
    buffer_.consume(blank);
    if (buffer_.size() > 0) return read_header();
    stream_.async_read_some(buffer_.prepare(16384),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              if (ec) return self->on_read(ec);
                              self->buffer_.commit(n);
                              self->skip_blank_lines();
                            });
  }

  /// The header first, so that a client waiting on `Expect: 100-continue` is told to go on
  /// (curl waits a second otherwise, and sends the header itself for bodies over 1 MiB).
  void read_header() {
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->on_read(ec);
                              self->read_body();
                            });
  }

  void read_body() {
    const auto& header = parser_->get();
    const bool expects_continue = beast::iequals(header[http::field::expect], "100-continue");
    const bool too_large = header.has_content_length() &&
                           parser_->content_length() > static_cast<uint64_t>(std::max<int64_t>(
                                                           0, context_.api.config.max_body_bytes));
    if (expects_continue && !too_large && !parser_->is_done()) {
      static const std::string continue_line = "HTTP/1.1 100 Continue\r\n\r\n";
      return asio::async_write(stream_, asio::buffer(continue_line),
                               [self = shared_from_this()](beast::error_code ec, std::size_t) {
                                 if (ec) return self->close();
                                 self->read_rest();
                               });
    }
    read_rest();
  }

  void read_rest() {
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (closed_) return;
    start_ = clock_type::now();
    if (ec == http::error::body_limit) {
      request_id_ = api::request_id_for(parser_->get()["X-Request-Id"]);
      keep_alive_ = false;  // the rest of the body is still on the wire
      method_ = std::string(parser_->get().method_string());
      target_ = std::string(parser_->get().target());
      errors_ = api::error_style_of(target_);
      api::api_error error{413,
                           "the request body is larger than " +
                               std::to_string(context_.api.config.max_body_bytes) + " bytes",
                           "invalid_request_error",
                           {},
                           "request_too_large"};
      return send_error(error);
    }
    if (ec && is_parse_error(ec) && ec != http::error::end_of_stream) {
      keep_alive_ = false;
      method_ = "?";
      target_ = "?";
      errors_ = api::error_style::openai;
      request_id_ = api::random_id("");
      return send_error(api::bad_request("malformed HTTP request: " + ec.message()));
    }
    if (ec) return close();  // end of stream, timeout, reset
    request_ = parser_->release();
    try {
      handle_request();
    } catch (const std::exception& e) {
      fail(e);
    }
  }

  /// A request whose handling threw: its engine requests are aborted, and the client gets a
  /// 500 (or, once the answer started, the connection ends).
  void fail(const std::exception& e) {
    if (call_) api::abort_call(context_.api, *call_);
    call_.reset();
    outputs_.reset();
    if (!headers_sent_)
      send_error(api::internal_error(e.what()));
    else
      close();
  }

  void handle_request() {
    stream_.tcp().expires_never();  // generation may take long; disconnects are watched instead
    answering_ = true;
    keep_alive_ = request_.keep_alive();
    method_ = std::string(request_.method_string());
    target_ = std::string(request_.target());
    request_id_ = api::request_id_for(request_["X-Request-Id"]);
    const api::request_plan plan = api::plan_request(context_.api, head_of(request_));
    cors_origin_ = plan.cors_origin;
    pattern_ = plan.route.pattern;
    errors_ = plan.errors;
    if (waits_for_model(plan)) return;
    run(plan);
  }

  /// A call for a model that is listed but not loaded waits for it to load (where the server
  /// loads models on demand), reading nothing meanwhile, then runs as any other: admission
  /// answers for a model that failed or did not load in time.
  bool waits_for_model(const api::request_plan& plan) {
    const bool names_model =
        plan.kind == api::work::completion || plan.kind == api::work::embeddings ||
        plan.kind == api::work::tokenize || plan.kind == api::work::count_tokens;
    if (!names_model || !api::waits_for_model(context_.api, request_.body())) return false;
    context_.api.engine.await_model(
        api::model_named_in(request_.body()),
        // The session is held while it waits: no read or write of its own keeps it alive.
        [self = shared_from_this(), gate = context_.gate, plan] {
          gate->run_if_open([&] {
            asio::post(self->executor_, [self, plan] {
              if (self->closed_) return;
              try {
                self->run(plan);
              } catch (const std::exception& e) {
                self->fail(e);
              }
            });
          });
        });
    return true;
  }

  void run(const api::request_plan& plan) {
    switch (plan.kind) {
      case api::work::none:
        return send(plan.reply);
      case api::work::completion:
        return start_completion(plan.call_kind);
      case api::work::embeddings:
        return start_embeddings();
      case api::work::tokenize:
        return start_tokenize(false);
      case api::work::count_tokens:
        return start_tokenize(true);
      case api::work::detokenize:
        return start_detokenize();
      case api::work::lora_update:
        return start_lora_update(plan.route.target == api::endpoint::load_lora_adapter);
      case api::work::admin:
        return start_admin(plan.route);
      case api::work::model_admin:
        return start_model_admin(plan.route);
      case api::work::websocket:
        return upgrade();
      case api::work::web_asset:
        return send_web_asset(plan.route.asset);
    }
  }

  // ---- completions ------------------------------------------------------------------
  void start_completion(api::api_kind kind) {
    api::openai_request parsed;
    model_info model;
    if (auto error = api::admit_call(context_.api, kind, request_.body(), parsed, model))
      return send_error(*error);
    if (parsed.responses.background)  // runs on without this connection
      return send(api::start_background_response(context_.api, std::move(parsed), model));
    auto box = std::make_shared<mailbox<request_output>>(wake_on_outputs());
    outputs_ = box;
    headers_sent_ = false;
    finished_ = false;
    call_ = api::start_call(context_.api, std::move(parsed), model, {},
                            [box](request_output out) { box->push(std::move(out)); });
    watch_for_disconnect();
  }

  /// The wake of a mailbox: posts a drain to this strand while the server still runs. A
  /// wake from the mailbox of an earlier call only drains the current one, which is harmless.
  std::function<void()> wake_on_outputs() {
    return [weak = weak_from_this(), gate = context_.gate] {
      gate->run_if_open([&] {
        if (auto self = weak.lock()) {
          asio::post(self->executor_, [self] { self->on_outputs(); });
        }
      });
    };
  }

  void on_outputs() {
    if (closed_ || !call_ || !outputs_) return;
    render(outputs_->take());
  }

  /// The server is stopping: an answer in flight ends as a failure the client can read (a
  /// stream with an error event and [DONE], else a 503), an idle connection is closed, and
  /// nothing further is read.
  void on_server_stopping() {
    if (closed_ || stopping_) return;
    stopping_ = true;
    keep_alive_ = false;
    if (!call_) {
      if (!answering_) close();
      return;
    }
    api::abort_call(context_.api, *call_);
    std::vector<request_output> failures;
    for (const auto& id : call_->engine_ids())
      failures.push_back(error_output(id, "the server is shutting down", 503));
    render(std::move(failures));
  }

  void render(std::vector<request_output> outs) {
    try {
      render_outputs(std::move(outs));
    } catch (const std::exception& e) {
      api::abort_call(context_.api, *call_);
      end_call();
      if (!headers_sent_)
        send_error(api::internal_error(e.what()));
      else
        close();
    }
  }

  void render_outputs(std::vector<request_output> outs) {
    api::merge_deltas(outs);
    std::vector<std::string> chunks;
    for (const auto& out : outs) {
      call_->add(out, chunks);
      if (call_->done()) break;
    }
    if (call_->failed()) api::abort_call(context_.api, *call_);
    if (call_->failed() && !call_->started()) {
      const api::api_error error = *call_->error();
      end_call();
      return send_error(error);
    }
    if (!call_->options().stream) {
      if (!call_->done()) return;
      std::string body = call_->response();
      api::keep_response(context_.api, *call_);
      end_call();
      return send({200, std::move(body)});
    }
    for (const auto& chunk : chunks) append_sse_event(pending_, chunk);
    if (pending_.size() > context_.options.max_queued_output_bytes) {
      // The client reads slower than we generate, or not at all: stop rather than buffer.
      return on_client_gone();
    }
    if (call_->done()) {
      api::keep_response(context_.api, *call_);
      // The Responses and Messages APIs end with their own last event, not a [DONE].
      if (call_->ends_with_done()) {
        if (call_->options().include_usage && !call_->failed()) {
          append_sse_event(pending_, call_->usage_chunk());
        }
        append_sse_done(pending_);
      }
      finished_ = true;
    }
    flush_stream();
  }

  /// Writes what is pending as one chunk (headers first on the first write, the last chunk
  /// with the final data): one syscall for however many deltas arrived meanwhile.
  void flush_stream() {
    if (writing_ || closed_ || (pending_.empty() && !finished_)) return;
    writing_buffer_.clear();
    // HTTP/1.0 has no chunked encoding: its stream is the raw body, ended by closing.
    const bool chunked = request_.version() >= 11;
    if (!chunked) keep_alive_ = false;
    if (!headers_sent_) {
      headers_sent_ = true;
      writing_buffer_ = std::string(chunked ? "HTTP/1.1" : "HTTP/1.0") +
                        " 200 OK\r\nServer: actorllm\r\nContent-Type: text/event-stream\r\n"
                        "Cache-Control: no-cache\r\n" +
                        (chunked ? "Transfer-Encoding: chunked\r\n" : "") +
                        "X-Request-Id: " + request_id_ + "\r\n";
      if (!cors_origin_.empty()) {
        writing_buffer_ += "Access-Control-Allow-Origin: " + cors_origin_ + "\r\nVary: Origin\r\n";
      }
      if (!keep_alive_) writing_buffer_ += "Connection: close\r\n";
      writing_buffer_ += "\r\n";
    }
    if (!pending_.empty()) {
      if (chunked)
        append_chunk(writing_buffer_, pending_);
      else
        writing_buffer_ += pending_;
    }
    pending_.clear();
    const bool last = finished_;
    if (last && chunked) writing_buffer_ += "0\r\n\r\n";
    writing_ = true;
    expire_writes();
    asio::async_write(stream_, asio::buffer(writing_buffer_),
                      [self = shared_from_this(), last](beast::error_code ec, std::size_t) {
                        self->writing_ = false;
                        self->stream_.tcp().expires_never();
                        if (self->closed_) return;
                        if (ec) return self->on_client_gone();
                        if (!last) return self->flush_stream();
                        self->status_ = 200;
                        self->end_call();
                        self->end_request();
                      });
  }

  void end_call() {
    call_.reset();
    outputs_.reset();
    pending_.clear();
    finished_ = false;
  }

  /// Reads while an answer is being made, so that a client that goes away is noticed at once
  /// rather than at the next write. What the client sends meanwhile is kept: bytes (a
  /// pipelined request, a stray CRLF) are committed to buffer_ and parsed once this answer is
  /// written, and the watch reads on. A half-close (EOF) means no more requests: a stream
  /// goes on, since a client that closed entirely makes the next write fail within one step;
  /// a non-streamed answer has no bytes to write until the end, so its EOF aborts it, as vLLM
  /// aborts on EOF (a half-close and a full close look the same from here).
  /// A pending watch holds the session (engine callbacks keep only weak references); when it
  /// stops reading (EOF, or more than max_pipelined_bytes queued), hold_ does instead.
  void watch_for_disconnect() {
    if (watching_ || closed_ || read_side_done_) return;
    if (buffer_.size() > max_pipelined_bytes()) {
      hold_ = shared_from_this();  // enough queued: stop reading, answer, then parse it
      return;
    }
    watching_ = true;
    stream_.tcp().expires_never();
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->on_watch(ec, n);
                            });
  }

  void on_watch(beast::error_code ec, std::size_t n) {
    watching_ = false;
    if (closed_) return;
    if (!ec) buffer_.commit(n);
    if (draining_) return drain_and_close();
    if (resume_reading_) {
      resume_reading_ = false;
      return do_read();
    }
    if (ec == asio::error::eof) {
      read_side_done_ = true;
      keep_alive_ = false;  // nothing can follow a half-close
      const bool whole_answer = (call_ && !call_->options().stream) || !embedding_ids_.empty();
      if (whole_answer) return on_client_gone();
      hold_ = shared_from_this();
      return;
    }
    if (ec && ec != asio::error::operation_aborted) {
      if (call_ || !embedding_ids_.empty()) return on_client_gone();
      return close();
    }
    watch_for_disconnect();  // bytes arrived: keep them and keep watching
  }

  /// Bytes a client may queue behind the request being answered before we stop reading them.
  size_t max_pipelined_bytes() const {
    return static_cast<size_t>(std::max<int64_t>(0, context_.api.config.max_body_bytes)) + 65536;
  }

  void on_client_gone() {
    if (call_) api::abort_call(context_.api, *call_);
    for (const auto& id : embedding_ids_) context_.api.engine.abort(id);  // their blocks come back
    embedding_ids_.clear();
    status_ = 499;  // nginx's "client closed request", for the access log
    end_call();
    log();
    close();
  }

  // ---- tokenizer endpoints ----------------------------------------------------------
  /// /tokenize, or (`count_tokens`) /v1/messages/count_tokens.
  void start_tokenize(bool count_tokens) {
    generate_request parsed;
    if (auto error = api::admit_tokenize(context_.api, request_.body(), parsed, count_tokens))
      return send_error(*error);
    context_.api.engine.tokenize(
        std::move(parsed),
        on_strand<tokenize_result>([count_tokens](http_session& s, tokenize_result r) {
          if (!r.error.empty()) return s.send_error(api::engine_error(r.error, r.error_status));
          s.send({200, count_tokens ? api::count_tokens_json(r) : api::tokenize_json(r)});
        }));
    watch_for_disconnect();  // also keeps this session alive until the answer comes
  }

  void start_embeddings() {
    api::embeddings_request parsed;
    model_info model;
    if (auto error = api::admit_embeddings(context_.api, request_.body(), parsed, model))
      return send_error(*error);
    using answer = std::pair<std::optional<api::api_error>, std::string>;
    auto reply = on_strand<answer>([](http_session& s, answer r) {
      s.embedding_ids_.clear();  // answered: nothing left to abort
      if (r.first) return s.send_error(*r.first);
      s.send({200, std::move(r.second)});
    });
    embedding_ids_ =
        api::run_embeddings(context_.api.engine, std::move(parsed), model, api::random_id("embd-"),
                            [reply](std::optional<api::api_error> error, std::string body) {
                              reply({std::move(error), std::move(body)});
                            });
    watch_for_disconnect();  // also keeps this session alive until the answer comes
  }

  void start_detokenize() {
    detokenize_request parsed;
    if (auto error = api::admit_detokenize(context_.api, request_.body(), parsed))
      return send_error(*error);
    context_.api.engine.detokenize(
        std::move(parsed), on_strand<detokenize_result>([](http_session& s, detokenize_result r) {
          if (!r.error.empty()) return s.send_error(api::engine_error(r.error, r.error_status));
          s.send({200, api::detokenize_json(r)});
        }));
    watch_for_disconnect();
  }

  // ---- LoRA updates -------------------------------------------------------------------
  void start_lora_update(bool load) {
    lora_update_request update;
    if (auto error = api::parse_lora_update(request_.body(), load, update))
      return send_error(*error);
    // Reading an adapter's files may take long (a large or slow file): off the I/O threads,
    // the answer back on this session's strand.
    using answer = std::pair<std::optional<api::api_error>, std::string>;
    auto reply = on_strand<answer>([](http_session& s, answer a) {
      if (a.first) return s.send_error(*a.first);
      s.send({200, std::move(a.second), "text/plain; charset=utf-8"});
    });
    auto work = [&engine = context_.api.engine, update = std::move(update), load, reply] {
      reply(api::apply_lora_update(engine, update, load));
    };
    if (context_.run_blocking)
      context_.run_blocking(std::move(work));
    else
      work();
    watch_for_disconnect();  // also keeps this session alive until the answer comes
  }

  // ---- admin API ----------------------------------------------------------------------
  void start_admin(const api::route& r) {
    api::run_admin_call(*context_.api.admin, r, method_, request_.body(),
                        on_strand<api::admin_answer>([](http_session& s, api::admin_answer a) {
                          s.send({a.status, std::move(a.body)});
                        }));
    watch_for_disconnect();  // also keeps this session alive until the answer comes
  }

  void start_model_admin(const api::route& r) {
    api::run_model_admin_call(
        *context_.api.models_admin, r, method_, request_.body(),
        on_strand<api::admin_answer>([](http_session& s, api::admin_answer a) {
          s.send({a.status, std::move(a.body)});
        }));
    watch_for_disconnect();  // also keeps this session alive until the answer comes
  }

  /// A callback for the engine that runs `fn` on this session's strand.
  template <class T, class F>
  std::function<void(T)> on_strand(F fn) {
    return [weak = weak_from_this(), gate = context_.gate, fn](T result) mutable {
      gate->run_if_open([&] {
        if (auto self = weak.lock()) {
          asio::post(self->executor_, [self, fn, result = std::move(result)]() mutable {
            if (!self->closed_) fn(*self, std::move(result));
          });
        }
      });
    };
  }

  // ---- WebSocket ----------------------------------------------------------------------
  /// The plan vetted the upgrade (its key, Origin and headers).
  void upgrade() {
    status_ = 101;
    log();
    closed_ = true;  // this session is done; the stream now belongs to the WebSocket
    run_websocket_session(context_, std::move(stream_), std::move(request_), peer_);
  }

  // ---- plain responses ----------------------------------------------------------------
  void send_error(const api::api_error& error) { send(api::error_answer(error, errors_)); }

  /// A file of the playground, with its ETag (304 when the browser has it) and, for the page,
  /// a policy that lets it load and call nothing but this server.
  void send_web_asset(const std::string& name) {
    const web_asset* asset = find_web_asset(name);
    if (!asset) return send_error(api::not_found("no such file: /ui/" + name));
    const bool fresh = request_[http::field::if_none_match] == asset->etag;
    auto res = std::make_shared<http::response<http::string_body>>(
        fresh ? http::status::not_modified : http::status::ok, 11);
    res->set(http::field::content_type, asset->content_type);
    res->set(http::field::etag, asset->etag);
    res->set(http::field::cache_control, "no-cache");
    res->set("X-Content-Type-Options", "nosniff");
    if (name == "index.html")
      res->set("Content-Security-Policy",
               "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; "
               "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
    if (!fresh && request_.method() != http::verb::head) res->body() = std::string(asset->body);
    write(std::move(res));
  }

  void send(api::answer answer) {
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(answer.status), 11);
    if (!answer.content_type.empty()) res->set(http::field::content_type, answer.content_type);
    if (request_.method() != http::verb::head) res->body() = std::move(answer.body);
    for (const auto& [name, value] : answer.headers) res->set(name, value);
    if (answer.status == 529) res->reason("Overloaded");  // Anthropic's; no standard reason
    if (answer.status == 503 || answer.status == 529) res->set(http::field::retry_after, "1");
    if (answer.status == 401) res->set(http::field::www_authenticate, "Bearer");
    if (answer.close) keep_alive_ = false;
    write(std::move(res));
  }

  void write(std::shared_ptr<http::response<http::string_body>> res) {
    status_ = res->result_int();
    res->set(http::field::server, "actorllm");
    res->set("X-Request-Id", request_id_);
    if (!cors_origin_.empty()) {
      res->set(http::field::access_control_allow_origin, cors_origin_);
      res->set(http::field::vary, "Origin");
    }
    res->keep_alive(keep_alive_);
    res->prepare_payload();
    headers_sent_ = true;
    expire_writes();
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code ec, std::size_t) {
                        self->stream_.tcp().expires_never();
                        if (self->closed_) return;
                        if (ec) return self->close();
                        self->end_request();
                      });
  }

  /// A write (and the disconnect watch beside it) must finish within write_timeout_s: a
  /// client that stopped reading is closed, which fails both and aborts its request.
  void expire_writes() {
    stream_.tcp().expires_after(
        std::chrono::milliseconds(static_cast<int64_t>(context_.options.write_timeout_s * 1000.0)));
  }

  void end_request() {
    const auto keep = std::move(hold_);  // the next read or the drain holds the session now
    answering_ = false;
    log();
    headers_sent_ = false;
    pattern_ = "";
    if (stopping_) return close();  // the answer is written; nothing more is read
    if (!keep_alive_) return drain_and_close();
    if (watching_) {
      // The disconnect watch holds the read side; cancel it and read on from its handler.
      resume_reading_ = true;
      beast::error_code ignored;
      stream_.tcp().socket().cancel(ignored);
      return;
    }
    do_read();
  }

  /// Closes after the client has read our answer: shut down our side, then discard what it
  /// still sends (the unread body of a 413, say) until it closes or a deadline passes, since
  /// closing with unread data makes the kernel reset the connection and lose the answer.
  void drain_and_close() {
    beast::error_code ignored;
    stream_.tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
    if (watching_) {  // the disconnect watch holds the read side; drain from its handler
      draining_ = true;
      stream_.tcp().socket().cancel(ignored);
      return;
    }
    stream_.tcp().expires_after(std::chrono::seconds(2));
    buffer_.consume(buffer_.size());
    stream_.async_read_some(buffer_.prepare(16384),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->close();
                              self->drain_and_close();
                            });
  }

  void log() {
    const std::string_view target(target_);
    context_.api.engine.on_http_request(*pattern_ ? pattern_ : target.substr(0, target.find('?')),
                                        status_);
    if (!context_.options.access_log) return;
    const double millis =
        std::chrono::duration<double, std::milli>(clock_type::now() - start_).count();
    log_access(peer_, method_, target_, status_, millis, request_id_);
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ignored;
    stream_.tcp().socket().close(ignored);
    hold_.reset();  // the caller's own reference keeps this alive until it returns
  }

  server_context& context_;
  connection_stream stream_;
  const asio::any_io_executor executor_;  // the strand; copied once, read from any thread
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http_request request_;
  std::string peer_;

  // The request being answered.
  std::string method_, target_, request_id_, cors_origin_;
  api::error_style errors_ = api::error_style::openai;  // how this request's errors look
  const char* pattern_ = "";  // route::pattern, the metrics label of a path with an id
  clock_type::time_point start_;
  bool keep_alive_ = false;
  int status_ = 0;
  bool headers_sent_ = false;

  // A completion call in flight and its SSE stream.
  std::unique_ptr<api::openai_call> call_;
  std::vector<std::string> embedding_ids_;  ///< an embeddings request being answered
  std::shared_ptr<mailbox<request_output>> outputs_;
  std::string pending_;         // SSE events not yet handed to the socket
  std::string writing_buffer_;  // bytes of the write in flight
  bool writing_ = false;
  bool finished_ = false;  // [DONE] is in pending_ (or on the wire)

  bool watching_ = false;
  bool read_side_done_ = false;         // the client half-closed: nothing more to read
  std::shared_ptr<http_session> hold_;  // keeps the session while no read is pending
  bool resume_reading_ = false;
  bool answering_ = false;  // between a request's arrival and its answer's last byte
  bool stopping_ = false;   // the server is stopping: this answer is the last
  uint64_t registry_key_ = 0;
  bool draining_ = false;
  bool closed_ = false;
};

}  // namespace

void run_http_session(server_context& context, tcp::socket socket, asio::ssl::context* tls) {
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);  // a token must not wait for Nagle
  std::make_shared<http_session>(context, std::move(socket), tls)->start();
}

}  // namespace actorllm::net
