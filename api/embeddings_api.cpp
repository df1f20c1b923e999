#include "api/embeddings_api.hpp"

#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "api/openai_call.hpp"

namespace actorllm::api {

using nlohmann::json;

namespace {

generate_request input_request(const model_info& model) {
  generate_request r;
  r.model = model.name;
  r.params.pooling = model.pooling;
  r.params.normalize = model.normalize;
  r.params.max_tokens = 1;  // bounds nothing: an embedding ends with its prompt
  r.params.temperature = 0;
  return r;
}

/// A token id list, or an error naming `field`.
std::optional<api_error> read_ids(const json& list, const std::string& field,
                                  std::vector<int32_t>& ids) {
  if (list.empty()) return bad_request(field + " is an empty list of token ids", "input");
  for (const json& id : list) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      return bad_request(field + " must hold token ids (integers >= 0)", "input");
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return std::nullopt;
}

}  // namespace

std::optional<api_error> parse_embeddings_request(std::string_view body, const model_info& model,
                                                  embeddings_request& out) {
  json parsed;
  if (auto error = parse_json_object(body, parsed)) return error;
  out = embeddings_request{};
  if (const auto it = parsed.find("model"); it != parsed.end()) {
    if (!it->is_string()) return bad_request("model must be a string", "model");
    out.model = it->get<std::string>();
    if (!model.answers_to(out.model))
      return not_found("The model `" + out.model + "` does not exist.", "model_not_found");
  }
  if (!model.embeddings)
    return bad_request(
        "this server generates text; start it with --task embed to serve "
        "embeddings",
        "model");
  if (const auto it = parsed.find("encoding_format"); it != parsed.end()) {
    const std::string format = it->is_string() ? it->get<std::string>() : "";
    if (format != "float" && format != "base64")
      return bad_request("encoding_format must be 'float' or 'base64'", "encoding_format");
    out.base64 = format == "base64";
  }
  if (const auto it = parsed.find("dimensions"); it != parsed.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1)
      return bad_request("dimensions must be a whole number >= 1", "dimensions");
    if (it->get<int64_t>() != model.embedding_size)
      return bad_request("this model's embeddings have " + std::to_string(model.embedding_size) +
                             " dimensions and it is not a Matryoshka model: dimensions must be " +
                             std::to_string(model.embedding_size) + " or absent",
                         "dimensions");
  }
  // vLLM's extension: keep each input's last k tokens (-1: max_model_len), as on completions.
  int32_t truncate = 0;
  if (const auto it = parsed.find("truncate_prompt_tokens"); it != parsed.end() && !it->is_null()) {
    const bool valid = it->is_number_integer() && it->get<int64_t>() >= -1 &&
                       it->get<int64_t>() != 0 &&
                       it->get<int64_t>() <= std::numeric_limits<int32_t>::max();
    if (!valid)
      return bad_request("truncate_prompt_tokens must be at least 1, or -1 for max_model_len",
                         "truncate_prompt_tokens");
    truncate = static_cast<int32_t>(it->get<int64_t>());
  }
  const auto input = parsed.find("input");
  if (input == parsed.end()) return bad_request("input is required", "input");
  auto add_text = [&](const json& text) {
    generate_request r = input_request(model);
    r.kind = prompt_kind::text;
    r.text = text.get<std::string>();
    out.inputs.push_back(std::move(r));
  };
  auto add_ids = [&](const json& list, const std::string& field) -> std::optional<api_error> {
    generate_request r = input_request(model);
    r.kind = prompt_kind::token_ids;
    if (auto error = read_ids(list, field, r.token_ids)) return error;
    out.inputs.push_back(std::move(r));
    return std::nullopt;
  };
  if (input->is_string()) {
    add_text(*input);
  } else if (input->is_array() && !input->empty() && input->front().is_number()) {
    if (auto error = add_ids(*input, "input")) return error;
  } else if (input->is_array() && !input->empty()) {
    if (static_cast<int64_t>(input->size()) > max_embedding_inputs)
      return bad_request("input has " + std::to_string(input->size()) + " items; at most " +
                             std::to_string(max_embedding_inputs) + " per request",
                         "input");
    for (size_t i = 0; i < input->size(); ++i) {
      const json& item = (*input)[i];
      const std::string field = "input[" + std::to_string(i) + "]";
      if (item.is_string()) {
        add_text(item);
      } else if (item.is_array()) {
        if (auto error = add_ids(item, field)) return error;
      } else {
        return bad_request(field + " must be a string or a list of token ids", "input");
      }
    }
  } else {
    return bad_request(
        "input must be a string, a list of strings, a list of token ids or a list of such lists "
        "(and not empty)",
        "input");
  }
  for (generate_request& r : out.inputs) r.params.truncate_prompt_tokens = truncate;
  return std::nullopt;
}

std::string base64_floats(const std::vector<float>& values) {
  static constexpr char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(values.size() * sizeof(float), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &values[i], sizeof bits);
    for (int b = 0; b < 4; ++b) bytes[4 * i + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const auto byte = [&](size_t k) {
      return k < bytes.size() ? static_cast<uint32_t>(static_cast<unsigned char>(bytes[k])) : 0u;
    };
    const uint32_t triple = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    out += alphabet[triple >> 18 & 63];
    out += alphabet[triple >> 12 & 63];
    out += i + 1 < bytes.size() ? alphabet[triple >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? alphabet[triple & 63] : '=';
  }
  return out;
}

std::string embeddings_json(const embeddings_request& request, const model_info& model,
                            const std::vector<std::vector<float>>& vectors,
                            int64_t num_prompt_tokens) {
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    json item = {{"object", "embedding"}, {"index", i}};
    if (request.base64)
      item["embedding"] = base64_floats(vectors[i]);
    else
      item["embedding"] = vectors[i];
    data.push_back(std::move(item));
  }
  return to_wire(
      {{"object", "list"},
       {"data", std::move(data)},
       {"model", model.name},
       {"usage", {{"prompt_tokens", num_prompt_tokens}, {"total_tokens", num_prompt_tokens}}}});
}

std::vector<std::string> run_embeddings(
    engine_port& engine, embeddings_request request, const model_info& model,
    const std::string& id_prefix,
    std::function<void(std::optional<api_error>, std::string body)> done) {
  // Shared by every input's callback; the last one to finish answers.
  struct batch {
    std::mutex mutex;
    embeddings_request request;
    model_info model;
    std::vector<std::vector<float>> vectors;
    std::vector<std::string> engine_ids;
    int64_t num_prompt_tokens = 0;
    size_t num_left = 0;
    std::optional<api_error> error;
    std::function<void(std::optional<api_error>, std::string)> done;
  };
  auto b = std::make_shared<batch>();
  b->vectors.resize(request.inputs.size());
  b->num_left = request.inputs.size();
  b->model = model;
  b->done = std::move(done);
  std::vector<generate_request> inputs = std::move(request.inputs);
  b->request = std::move(request);
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i].request_id = id_prefix + "-" + std::to_string(i);
    b->engine_ids.push_back(inputs[i].request_id);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    engine.submit(std::move(inputs[i]), [b, i, &engine](request_output out) {
      if (out.finish == finish_reason::none) return;
      std::unique_lock lock(b->mutex);
      const bool first_failure = out.finish == finish_reason::error && !b->error;
      if (first_failure) {
        b->error = engine_error(out.error, out.error_status, out.error_param);
      } else if (out.finish != finish_reason::error) {
        b->vectors[i] = std::move(out.embedding);
        b->num_prompt_tokens += out.num_prompt_tokens;
      }
      const bool last = --b->num_left == 0;
      lock.unlock();
      // The other inputs are moot now: their blocks go back at once. Outside the lock, so an
      // engine that answers an abort at once cannot deadlock on it.
      if (first_failure)
        for (size_t j = 0; j < b->engine_ids.size(); ++j)
          if (j != i) engine.abort(b->engine_ids[j]);
      if (!last) return;
      if (b->error) return b->done(b->error, {});
      b->done(std::nullopt,
              embeddings_json(b->request, b->model, b->vectors, b->num_prompt_tokens));
    });
  }
  return b->engine_ids;
}

}  // namespace actorllm::api
