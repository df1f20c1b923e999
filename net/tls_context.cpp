#include "net/tls_context.hpp"

#include <stdexcept>
#include <string>

namespace actorllm::net {

namespace ssl = boost::asio::ssl;

std::unique_ptr<ssl::context> make_tls_context(const server_config& c) {
  if (c.ssl_certfile.empty() && c.ssl_keyfile.empty()) {
    if (!c.ssl_ca_certs.empty() || c.ssl_cert_reqs != 0)
      throw std::runtime_error(
          "--ssl-ca-certs and --ssl-cert-reqs need TLS: give --ssl-certfile and --ssl-keyfile");
    return nullptr;
  }
  if (c.ssl_certfile.empty() || c.ssl_keyfile.empty())
    throw std::runtime_error("TLS needs both --ssl-certfile and --ssl-keyfile");
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                       ssl::context::single_dh_use);
  const auto use = [](const char* flag, const std::string& file, auto&& load) {
    boost::system::error_code ec;
    load(ec);
    if (ec) throw std::runtime_error(std::string(flag) + " " + file + ": " + ec.message());
  };
  use("--ssl-certfile", c.ssl_certfile,
      [&](auto& ec) { context->use_certificate_chain_file(c.ssl_certfile, ec); });
  use("--ssl-keyfile", c.ssl_keyfile,
      [&](auto& ec) { context->use_private_key_file(c.ssl_keyfile, ssl::context::pem, ec); });
  if (!c.ssl_ca_certs.empty())
    use("--ssl-ca-certs", c.ssl_ca_certs,
        [&](auto& ec) { context->load_verify_file(c.ssl_ca_certs, ec); });
  if (c.ssl_cert_reqs < 0 || c.ssl_cert_reqs > 2)
    throw std::runtime_error("--ssl-cert-reqs must be 0 (none), 1 (optional) or 2 (required)");
  if (c.ssl_cert_reqs > 0 && c.ssl_ca_certs.empty())
    throw std::runtime_error("--ssl-cert-reqs " + std::to_string(c.ssl_cert_reqs) +
                             " checks client certificates: give the CAs with --ssl-ca-certs");
  if (c.ssl_cert_reqs == 1) context->set_verify_mode(ssl::verify_peer);
  if (c.ssl_cert_reqs == 2)
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  return context;
}

}  // namespace actorllm::net
