#pragma once
/// POST /v1/embeddings (OpenAI's, as vLLM serves it for a decoder model under --task embed):
/// `input` as a string, a list of strings, a list of token ids or a list of such lists;
/// `encoding_format` float or base64 (little-endian float32); `dimensions` where the model
/// allows (none of ours are Matryoshka models: only the full size). Each input runs through
/// the engine as a prefill-only request (sampling_params::pooling) and the answer lists the
/// vectors in input order with the prompt tokens used.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/openai_protocol.hpp"
#include "common/engine_port.hpp"
#include "common/generate_request.hpp"

namespace actorllm::api {

/// At most this many inputs in one embeddings request.
inline constexpr int64_t max_embedding_inputs = 2048;

struct embeddings_request {
  std::string model;
  std::vector<generate_request> inputs;  ///< one prefill-only request per input, in order
  bool base64 = false;                   ///< encoding_format "base64"
};

/// Reads the body; the inputs come out as engine requests for `model` (its pooling, without
/// ids yet). A 400 names the field at fault; a model other than the served one is a 404, and
/// a server without --task embed answers 400 saying how to start one.
std::optional<api_error> parse_embeddings_request(std::string_view body, const model_info& model,
                                                  embeddings_request& out);

/// The answer's body once every input has its vector (`vectors` and `num_prompt_tokens` in
/// input order).
std::string embeddings_json(const embeddings_request& request, const model_info& model,
                            const std::vector<std::vector<float>>& vectors,
                            int64_t num_prompt_tokens);

/// Little-endian float32 bytes of `values`, base64-encoded (OpenAI's encoding_format).
std::string base64_floats(const std::vector<float>& values);

/// Runs `request` on `engine` with ids from `id_prefix`: `done` is called once, from any
/// thread, with the JSON body (status 200) or the first failure as an error. Returns the
/// engine ids of the inputs, which abort them (a client that leaves).
std::vector<std::string> run_embeddings(
    engine_port& engine, embeddings_request request, const model_info& model,
    const std::string& id_prefix,
    std::function<void(std::optional<api_error>, std::string body)> done);

}  // namespace actorllm::api
