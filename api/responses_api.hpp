#pragma once
/// The Responses API's stored responses over HTTP (response_store.hpp keeps them):
///
///   GET    /v1/responses/{id}              the Response object as stored (status queued or
///                                          in_progress while a background call runs)
///   DELETE /v1/responses/{id}              {"id", "object": "response", "deleted": true}
///   GET    /v1/responses/{id}/input_items  {"object": "list", "data", "first_id", "last_id",
///                                          "has_more"}: the conversation's input items, with
///                                          `limit` (1..100, default 20), `order` (asc, or desc,
///                                          the default: newest first) and `after` (an item id)
///   POST   /v1/responses/{id}/cancel       a background call ended: the Response object,
///                                          status cancelled (as it stands when it had ended)
///
/// An id that is malformed or not stored is a 404; a bad query parameter a 400 naming it;
/// cancelling a response that was not made in the background a 400.
#include <string_view>

#include "api/openai_call.hpp"
#include "api/request_plan.hpp"
#include "api/server_context.hpp"

namespace actorllm::api {

/// The answer to one of the four calls above; `r` is its route (endpoint and response_id),
/// `target` the request's path and query string.
answer stored_response_answer(const server_context& context, const route& r,
                              std::string_view method, std::string_view target);

/// Keeps the response of a finished Responses call that asked to be stored (store: true):
/// its final Response object with the conversation's input items. Anything else is ignored.
void keep_response(const server_context& context, const openai_call& call);

/// Starts a background Responses call (request.responses.background) and answers its POST
/// at once: 200 with the queued Response object, or the error why it cannot run.
answer start_background_response(server_context& context, openai_request request,
                                 const model_info& model);

}  // namespace actorllm::api
