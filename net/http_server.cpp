// The listener and the I/O thread pool. Each connection gets its own strand, so the
// sessions need no locks while the pool serves many of them in parallel.
#include "net/http_server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "api/background_responses.hpp"
#include "net/beast.hpp"
#include "net/tls_context.hpp"

namespace actorllm::net {

struct http_server::impl {
  impl(const server_config& config, engine_port& engine, http_options options, admin_port* admin)
      : context{{engine, config, admin, options.models_admin, options.max_waiting_requests,
                 options.metrics_only},
                options},
        tls(make_tls_context(config)),
        num_threads(std::max(1, config.io_threads)),
        io(num_threads),
        acceptor(io),
        retry_timer(io) {
    context.run_blocking = [this](std::function<void()> work) {
      asio::post(blocking, std::move(work));
    };
    if (!options.metrics_only) {
      context.api.responses =
          options.responses
              ? options.responses
              : std::make_shared<api::response_store>(api::response_store_limits{
                    config.responses_store_max_items, config.responses_store_max_bytes});
      context.api.background = std::make_shared<api::background_responses>(context.api.responses);
    }
    const tcp::endpoint endpoint{asio::ip::make_address(config.host), config.port};
    acceptor.open(endpoint.protocol());
    acceptor.set_option(asio::socket_base::reuse_address(true));
    acceptor.bind(endpoint);
    acceptor.listen(asio::socket_base::max_listen_connections);
    bound_port = acceptor.local_endpoint().port();
  }

  void accept() {
    acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket s) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (ec) {
        // Out of descriptors, say: wait a little instead of spinning on the error.
        retry_timer.expires_after(std::chrono::milliseconds(20));
        retry_timer.async_wait([this](beast::error_code) { accept(); });
        return;
      }
      run_http_session(context, std::move(s), tls.get());
      accept();
    });
  }

  server_context context;
  std::unique_ptr<asio::ssl::context> tls;  // null: plain HTTP
  int num_threads;
  asio::io_context io;
  // Long work off the I/O threads (server_context::run_blocking); destroyed first, so its
  // running task may still post its answer to `io`.
  tcp::acceptor acceptor;
  asio::steady_timer retry_timer;
  uint16_t bound_port = 0;
  std::vector<std::thread> threads;
  std::mutex mutex;
  std::condition_variable stopped_cv;
  bool started = false;
  bool stopped = false;
  asio::thread_pool blocking{1};
};

http_server::http_server(const server_config& config, engine_port& engine, http_options options,
                         admin_port* admin)
    : impl_(std::make_unique<impl>(config, engine, options, admin)) {}

http_server::~http_server() {
  stop();
}

void http_server::start() {
  std::lock_guard lock(impl_->mutex);
  if (impl_->started || impl_->stopped) return;
  impl_->started = true;
  impl_->accept();
  for (int i = 0; i < impl_->num_threads; ++i) {
    impl_->threads.emplace_back([this] { impl_->io.run(); });
  }
}

void http_server::wait() {
  std::unique_lock lock(impl_->mutex);
  impl_->stopped_cv.wait(lock, [this] { return impl_->stopped; });
}

void http_server::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  asio::post(impl_->io, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
  });
  // Answers in flight end as failures the clients can read (a stream gets its error event
  // and [DONE]) rather than being cut mid-body; a client that does not read them within the
  // bound loses them.
  if (!impl_->threads.empty()) {
    impl_->context.sessions->stop_all();
    impl_->context.sessions->wait_empty(std::chrono::milliseconds(
        static_cast<int64_t>(impl_->context.options.stop_grace_s * 1000.0)));
  }
  // Background responses have no connection to end them: abort their engine requests, and
  // store them as failed (the next server reads that from a store's folder).
  if (impl_->context.api.background)
    impl_->context.api.background->abort_all("the server stopped before this response finished");
  impl_->context.gate->close();
  impl_->io.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
  impl_->stopped_cv.notify_all();
}

uint16_t http_server::port() const {
  return impl_->bound_port;
}

std::string http_server::url() const {
  return (impl_->tls ? "https://" : "http://") + impl_->context.api.config.host + ":" +
         std::to_string(impl_->bound_port);
}

}  // namespace actorllm::net
