#pragma once
/// Which calls get in, and handing those that do to the engine: the size bounds of one
/// request, the model and capacity checks, and the start and abort of a call's engine requests.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "api/embeddings_api.hpp"
#include "api/openai_call.hpp"
#include "api/openai_protocol.hpp"
#include "api/server_context.hpp"
#include "common/engine_port.hpp"

namespace actorllm::api {

/// At most this many prompts in one completions request (a list of prompts).
inline constexpr int64_t max_prompts_per_request = 1024;
/// At most this many logprob entries (tokens and their alternatives, about 100 bytes of JSON
/// each) in one answer: a bound on the memory and the body one request can make us build.
inline constexpr int64_t max_output_entries = int64_t{1} << 22;

/// Refuses (400) a request that is too large to answer or that can never be admitted: too many
/// prompts, more sequences than the waiting queue holds, or logprobs over max_output_entries
/// (tokens counted as max_tokens, or max_model_len where it is unset).
std::optional<api_error> check_request_size(const openai_request& request, int32_t max_model_len,
                                            int32_t max_waiting_requests);

/// Checks a parsed call before it reaches the engine: unknown model (404), a model that is
/// not loaded (503, naming its state), too many images or an image URL too long for
/// --max-image-bytes (400, chat_content.hpp), engine not alive (503), waiting queue full (503).
/// Fills `model` with the model the call names (the default one when it names none).
std::optional<api_error> admit(server_context& context, const openai_request& request,
                               model_info& model);

/// The top-level "model" of a JSON body, read without keeping anything else; empty when the
/// body names none (or is no JSON object: its own parse says what is wrong).
std::string model_named_in(std::string_view body);
/// The model a request naming `requested` is read for (its task, sampling defaults, output
/// parsers): with one model, that model; with several, the one named (the default when the
/// name is unknown: admission refuses it once the body is read).
model_info model_for_name(const server_context& context, std::string_view requested);
/// Whether the body names a model that is listed but not loaded (unloaded, loading or
/// draining): the call goes through engine_port::await_model before its admission, which
/// holds it while the model loads (again) and lets it through at once where it will not.
bool waits_for_model(const server_context& context, std::string_view body);

/// The sampling defaults of the model `requested` names (the default model's for an empty or
/// unknown name), which a request body is read with.
sampling_defaults sampling_defaults_for(const server_context& context, std::string_view requested);

/// Reads a call of `kind` from an HTTP body (a Responses body for api_kind::responses, a
/// Messages body for api_kind::messages, with
/// the model's sampling defaults and the server's tool settings) and admits it.
std::optional<api_error> admit_call(server_context& context, api_kind kind, std::string_view body,
                                    openai_request& out, model_info& model);

/// Reads an embeddings body for the model it names (`model`, filled) and admits it: 503 while
/// the waiting queue has no room for every input.
std::optional<api_error> admit_embeddings(server_context& context, std::string_view body,
                                          embeddings_request& out, model_info& model);

/// Reads a /tokenize body (`count_tokens`: a /v1/messages/count_tokens body): a model other
/// than the served one is a 404, images past the server's bounds a 400; `out` names the model by
/// its served name, the only one the engine knows.
std::optional<api_error> admit_tokenize(server_context& context, std::string_view body,
                                        generate_request& out, bool count_tokens = false);
/// Reads a /detokenize body: a model no one serves is a 404, one not loaded a 503; `out`
/// names the model by its served name.
std::optional<api_error> admit_detokenize(server_context& context, std::string_view body,
                                          detokenize_request& out);

/// Submits every prompt of `request` to the engine with fresh engine ids and returns the
/// call that assembles their deltas. `display_id` is the "id" of the objects sent back
/// (empty: a fresh cmpl-/chatcmpl- id); `sink` receives every delta, from any thread.
/// `error_chunk`: see call_options.
std::unique_ptr<openai_call> start_call(server_context& context, openai_request request,
                                        const model_info& model, std::string display_id,
                                        std::function<void(request_output)> sink,
                                        bool error_chunk = true);

/// Aborts the engine requests of a call that has not finished.
void abort_call(server_context& context, const openai_call& call);

}  // namespace actorllm::api
