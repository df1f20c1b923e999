#pragma once
/// Who may join a server as a remote worker (a core: no CAF). A worker proves the cluster's
/// shared secret, compared in constant time, and serves the same model: the same config.json
/// fields, weights, tokenizer and vocabulary, and the same KV block size. A worker serving
/// another model would otherwise join and answer with garbage or empty text.
///
///   cluster_admission gate(secret, identify_model(config));
///   if (auto why = gate.refusal(request.secret, request.model); !why.empty()) refuse(why);
#include <string>
#include <string_view>
#include <vector>

#include "common/model_identity.hpp"
#include "config/engine_config.hpp"

namespace actorllm {

/// The identity of the model `config` loads: config.json's fields, a fingerprint of the
/// safetensors files (each file's name, size and header, and 16 spaced 4 KiB samples of its
/// data: milliseconds even for large checkpoints), a hash of tokenizer.json, vocab_size, and
/// --block-size. Throws std::runtime_error naming a file it cannot read.
model_identity identify_model(const engine_config& config);

/// Every way `worker` differs from `server`, one line each, naming both values
/// ("config.json hidden_size: 64 (server) vs 128 (worker)"); empty when they match.
std::vector<std::string> identity_differences(const model_identity& server,
                                              const model_identity& worker);

/// Whether `offered` equals `expected`, in a time that depends on the length of `offered`
/// alone (never on how many of its bytes were right). An empty `expected` equals nothing.
bool secrets_equal(std::string_view expected, std::string_view offered);

class cluster_admission {
 public:
  /// An empty `secret`: workers join without one (the server checked that the join port is on
  /// a loopback address).
  cluster_admission(std::string secret, model_identity identity);

  /// Empty when the worker may join; else one line saying why not.
  std::string refusal(std::string_view offered_secret, const model_identity& worker) const;

  const model_identity& identity() const { return identity_; }

 private:
  std::string secret_;
  model_identity identity_;
};

}  // namespace actorllm
