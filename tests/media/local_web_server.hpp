#pragma once
/// A tiny HTTP(S) server on 127.0.0.1 for the media fetcher's tests, on a thread of its own:
/// each connection's request head is read and the handler's answer for its target written
/// back as raw bytes, all at once or a byte at a time; a silent answer keeps the connection
/// open without a word (a server that never answers). One connection at a time.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace actorllm::media::web_fetch_testing {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

struct web_answer {
  std::string bytes;  ///< the whole answer: status line, headers, body
  bool silent = false;
  std::chrono::milliseconds drip{0};  ///< > 0: one byte, then this pause, and so on
};

/// 200 OK with `body` and its Content-Length.
inline web_answer ok_answer(const std::string& body, const std::string& type = "image/png") {
  return {"HTTP/1.1 200 OK\r\nContent-Type: " + type + "\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body};
}

inline web_answer redirect_answer(const std::string& location) {
  return {"HTTP/1.1 302 Found\r\nLocation: " + location +
          "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"};
}

class local_web_server {
 public:
  using handler = std::function<web_answer(const std::string& target)>;

  /// `tls`: serve HTTPS with this context (its certificate and key set).
  explicit local_web_server(handler answer, asio::ssl::context* tls = nullptr)
      : answer_(std::move(answer)), tls_(tls) {
    acceptor_.open(tcp::v4());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind({asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { serve(); });
  }

  ~local_web_server() {
    stopping_ = true;
    boost::system::error_code ignored;
    tcp::socket wake(io_);  // unblocks accept()
    wake.connect({asio::ip::make_address("127.0.0.1"), port_}, ignored);
    thread_.join();
  }

  uint16_t port() const { return port_; }
  int num_requests() const { return num_requests_; }
  std::string url(const std::string& target, const std::string& host = "127.0.0.1") const {
    return std::string(tls_ ? "https://" : "http://") + host + ":" + std::to_string(port_) + target;
  }

 private:
  void serve() {
    while (!stopping_) {
      auto socket = std::make_shared<tcp::socket>(io_);
      boost::system::error_code ec;
      acceptor_.accept(*socket, ec);
      if (ec || stopping_) break;
      if (!tls_) {
        answer_on(*socket, socket);
        continue;
      }
      auto stream = std::make_shared<asio::ssl::stream<tcp::socket&>>(*socket, *tls_);
      stream->handshake(asio::ssl::stream_base::server, ec);
      if (ec) continue;  // a client that did not trust the certificate
      answer_on(*stream,
                std::make_shared<std::pair<decltype(socket), decltype(stream)>>(socket, stream));
    }
    kept_.clear();
  }

  template <class stream_type>
  void answer_on(stream_type& stream, std::shared_ptr<void> keep) {
    asio::streambuf head;
    boost::system::error_code ec;
    asio::read_until(stream, head, "\r\n\r\n", ec);
    if (ec) return;
    ++num_requests_;
    std::istream lines(&head);
    std::string method, target;
    lines >> method >> target;
    const web_answer a = answer_(target);
    if (a.silent) {
      kept_.push_back(std::move(keep));
      return;
    }
    if (a.drip.count() == 0) {
      asio::write(stream, asio::buffer(a.bytes), ec);
    } else {
      for (std::size_t i = 0; i < a.bytes.size() && !ec && !stopping_; ++i) {
        asio::write(stream, asio::buffer(&a.bytes[i], 1), ec);
        std::this_thread::sleep_for(a.drip);
      }
    }
  }

  handler answer_;
  asio::ssl::context* tls_;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> num_requests_{0};
  std::vector<std::shared_ptr<void>> kept_;  ///< the silent connections, open until the end
  std::thread thread_;
};

/// A self-signed certificate for 127.0.0.1 and localhost, and its key, in PEM.
struct test_certificate {
  std::string certificate_pem;
  std::string key_pem;
};

inline test_certificate make_test_certificate() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  for (const auto& [nid, value] : {std::pair{NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1"},
                                   std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(cert, key, EVP_sha256());
  auto pem_of = [](auto write) {
    BIO* bio = BIO_new(BIO_s_mem());
    write(bio);
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    std::string text(data, static_cast<std::size_t>(size));
    BIO_free(bio);
    return text;
  };
  test_certificate out;
  out.certificate_pem = pem_of([&](BIO* bio) { PEM_write_bio_X509(bio, cert); });
  out.key_pem = pem_of(
      [&](BIO* bio) { PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr); });
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

}  // namespace actorllm::media::web_fetch_testing
