#include "api/structured_output_fields.hpp"

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace actorllm::api {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

/// One constraint as found, before the "only one" check.
struct found_constraint {
  structured_output output;
  std::vector<const char*> schema_path;  ///< where the schema object is, for the ordered reread
};

class constraint_reader {
 public:
  constraint_reader(const json& body, std::string_view raw_body) : body_(body), raw_(raw_body) {}

  std::optional<api_error> read(structured_output& out) {
    if (auto e = read_response_format()) return e;
    if (auto e = read_structured_outputs()) return e;
    if (auto e = read_guided_fields()) return e;
    if (found_.empty()) return std::nullopt;
    if (found_.size() > 1) {
      return bad_request("a request may ask for one structured output only; " +
                             found_[0].output.field + " and " + found_[1].output.field +
                             " were both given",
                         found_[1].output.field);
    }
    out = std::move(found_[0].output);
    if (out.kind == output_constraint::json_schema && !found_[0].schema_path.empty())
      out.source = schema_text(found_[0].schema_path);
    return std::nullopt;
  }

 private:
  std::optional<api_error> read_response_format() {
    const json* format = given_field(body_, "response_format");
    if (!format) return std::nullopt;
    const json* type = format->is_object() ? given_field(*format, "type") : nullptr;
    if (!type || !type->is_string())
      return bad_request("response_format must be an object with a string type", "response_format");
    const auto& name = type->get_ref<const std::string&>();
    if (name == "text") return std::nullopt;
    if (name == "json_object") return add("response_format", output_constraint::json_object);
    if (name != "json_schema") {
      return bad_request(
          "response_format type must be text, json_object or json_schema, not " + name,
          "response_format");
    }
    const json* spec = given_field(*format, "json_schema");
    if (!spec || !spec->is_object())
      return bad_request("response_format of type json_schema needs a json_schema object",
                         "response_format");
    const json* schema = given_field(*spec, "schema");
    if (!schema)
      return bad_request("response_format.json_schema.schema is required", "response_format");
    if (const json* strict = given_field(*spec, "strict"); strict && !strict->is_boolean())
      return bad_request("response_format.json_schema.strict must be a boolean", "response_format");
    if (auto e =
            add_schema("response_format", *schema, {"response_format", "json_schema", "schema"}))
      return e;
    const json* strict = given_field(*spec, "strict");
    found_.back().output.compact_whitespace = strict && strict->get<bool>();
    return std::nullopt;
  }

  std::optional<api_error> read_structured_outputs() {
    const json* so = given_field(body_, "structured_outputs");
    if (!so) return std::nullopt;
    constexpr const char* field = "structured_outputs";
    if (!so->is_object()) return bad_request("structured_outputs must be an object", field);
    for (const char* unsupported :
         {"structural_tag", "whitespace_pattern", "disable_additional_properties"}) {
      if (const json* v = given_field(*so, unsupported); v && *v != false)
        return bad_request(std::string("structured_outputs.") + unsupported + " is not supported",
                           field);
    }
    const size_t before = found_.size();
    if (const json* v = given_field(*so, "json")) {
      if (auto e = add_schema(field, *v, {"structured_outputs", "json"})) return e;
    }
    if (const json* v = given_field(*so, "regex")) {
      if (auto e = add_text(field, output_constraint::regex, *v, "structured_outputs.regex"))
        return e;
    }
    if (const json* v = given_field(*so, "choice")) {
      if (auto e = add_choice(field, *v, "structured_outputs.choice")) return e;
    }
    if (const json* v = given_field(*so, "grammar")) {
      if (auto e = add_text(field, output_constraint::grammar, *v, "structured_outputs.grammar"))
        return e;
    }
    if (const json* v = given_field(*so, "json_object")) {
      if (!v->is_boolean())
        return bad_request("structured_outputs.json_object must be a boolean", field);
      if (v->get<bool>()) {
        if (auto e = add(field, output_constraint::json_object)) return e;
      }
    }
    if (found_.size() == before)
      return bad_request(
          "structured_outputs must name one of json, regex, choice, grammar or json_object", field);
    if (const json* v = given_field(*so, "disable_any_whitespace")) {
      if (!v->is_boolean())
        return bad_request("structured_outputs.disable_any_whitespace must be a boolean", field);
      for (size_t i = before; i < found_.size(); ++i)
        found_[i].output.compact_whitespace = v->get<bool>();
    }
    return std::nullopt;
  }

  std::optional<api_error> read_guided_fields() {
    if (given_field(body_, "guided_whitespace_pattern"))
      return bad_request("guided_whitespace_pattern is not supported", "guided_whitespace_pattern");
    if (const json* v = given_field(body_, "guided_json")) {
      if (auto e = add_schema("guided_json", *v, {"guided_json"})) return e;
    }
    if (const json* v = given_field(body_, "guided_regex")) {
      if (auto e = add_text("guided_regex", output_constraint::regex, *v, "guided_regex")) return e;
    }
    if (const json* v = given_field(body_, "guided_choice")) {
      if (auto e = add_choice("guided_choice", *v, "guided_choice")) return e;
    }
    if (const json* v = given_field(body_, "guided_grammar")) {
      if (auto e = add_text("guided_grammar", output_constraint::grammar, *v, "guided_grammar"))
        return e;
    }
    return std::nullopt;
  }

  std::optional<api_error> add(const char* field, output_constraint kind) {
    found_constraint c;
    c.output.kind = kind;
    c.output.field = field;
    found_.push_back(std::move(c));
    return std::nullopt;
  }

  /// A schema is a JSON object (or a boolean schema), or its JSON text.
  std::optional<api_error> add_schema(const char* field, const json& schema,
                                      std::initializer_list<const char*> path) {
    if (!schema.is_object() && !schema.is_boolean() && !schema.is_string())
      return bad_request(std::string(field) + ": a JSON schema must be an object or its text",
                         field);
    add(field, output_constraint::json_schema);
    if (schema.is_string()) {
      found_.back().output.source = schema.get<std::string>();
    } else {
      found_.back().output.source = schema.dump();
      if (schema.is_object()) found_.back().schema_path = path;
    }
    return std::nullopt;
  }

  std::optional<api_error> add_text(const char* field, output_constraint kind, const json& text,
                                    const std::string& name) {
    if (!text.is_string()) return bad_request(name + " must be a string", field);
    add(field, kind);
    found_.back().output.source = text.get<std::string>();
    return std::nullopt;
  }

  std::optional<api_error> add_choice(const char* field, const json& list,
                                      const std::string& name) {
    if (!list.is_array() || list.empty())
      return bad_request(name + " must be a non-empty list of strings", field);
    add(field, output_constraint::choice);
    for (const auto& c : list) {
      if (!c.is_string()) return bad_request(name + " must be a non-empty list of strings", field);
      found_.back().output.choices.push_back(c.get<std::string>());
    }
    return std::nullopt;
  }

  /// The schema at `path`, from the body's text reread with key order kept.
  std::string schema_text(const std::vector<const char*>& path) const {
    if (raw_.empty()) return found_[0].output.source;
    const ordered_json ordered = ordered_json::parse(raw_, nullptr, /*allow_exceptions=*/false);
    const ordered_json* at = &ordered;
    for (const char* key : path) {
      if (!at->is_object()) return found_[0].output.source;
      auto it = at->find(key);
      if (it == at->end()) return found_[0].output.source;
      at = &*it;
    }
    return at->is_object() ? at->dump() : found_[0].output.source;
  }

  const json& body_;
  std::string_view raw_;
  std::vector<found_constraint> found_;
};

}  // namespace

std::optional<api_error> read_structured_output(const json& body, std::string_view raw_body,
                                                structured_output& out) {
  return constraint_reader(body, raw_body).read(out);
}

}  // namespace actorllm::api
