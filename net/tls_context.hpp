#pragma once
/// The server's TLS context from vLLM's flags: --ssl-certfile (the chain, PEM) and
/// --ssl-keyfile (its key), --ssl-ca-certs (the CAs client certificates are checked against)
/// and --ssl-cert-reqs (0: no client certificate, 1: checked when sent, 2: required). TLS 1.2
/// and later only.
#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "config/engine_config.hpp"

namespace actorllm::net {

/// The context, or null when no certificate is configured (plain HTTP). Throws
/// std::runtime_error naming the flag and the file that cannot be used.
std::unique_ptr<boost::asio::ssl::context> make_tls_context(const server_config& config);

}  // namespace actorllm::net
