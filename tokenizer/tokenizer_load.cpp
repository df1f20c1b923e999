// tokenizer::load: reads tokenizer.json and the config files beside it.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tokenizer/tokenizer_state.hpp"

namespace actorllm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<json> read_json(const fs::path& file, bool required) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    if (required) throw std::runtime_error("cannot open " + file.string());
    return std::nullopt;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return json::parse(buffer.str());
  } catch (const json::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
}

// tokenizer_config.json writes tokens as "text" or {"content": "text", ...}.
std::string token_text(const json& config, const char* key) {
  if (!config.contains(key)) return "";
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"];
  return "";
}

std::vector<int32_t> id_list(const json& v) {
  std::vector<int32_t> out;
  if (v.is_number_integer()) out.push_back(v.get<int32_t>());
  if (v.is_array())
    for (const auto& x : v)
      if (x.is_number_integer()) out.push_back(x.get<int32_t>());
  return out;
}

// The post-processor's special tokens around a single sequence.
void read_post_processor(const json& spec, tokenizer::state& s) {
  if (spec.is_null()) return;
  const std::string type = spec.value("type", "");
  if (type == "TemplateProcessing") {
    const json& specials = spec.value("special_tokens", json::object());
    bool after = false;
    for (const auto& item : spec.at("single")) {
      if (item.contains("Sequence")) {
        after = true;
        continue;
      }
      std::string name = item.at("SpecialToken").at("id");
      if (!specials.contains(name))
        throw std::runtime_error("post_processor names unknown special token '" + name + "'");
      for (int32_t id : id_list(specials[name].at("ids")))
        (after ? s.suffix_ids : s.prefix_ids).push_back(id);
    }
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    // Whole numbers only (a float's cast to int is undefined past its range); the ids are
    // checked against the vocabulary after.
    for (const char* key : {"cls", "sep"})
      if (!spec.at(key).at(1).is_number_integer())
        throw std::runtime_error(std::string("post_processor's ") + key +
                                 " id is not a whole number");
    s.prefix_ids.push_back(spec.at("cls").at(1).get<int32_t>());
    s.suffix_ids.push_back(spec.at("sep").at(1).get<int32_t>());
  } else if (type == "Sequence") {
    for (const auto& p : spec.at("processors")) read_post_processor(p, s);
  } else if (type != "ByteLevel") {
    throw std::runtime_error("unsupported post_processor type '" + type + "' in tokenizer.json");
  }
}

std::string pick_chat_template(const json& config) {
  if (!config.contains("chat_template")) return "";
  const json& t = config["chat_template"];
  if (t.is_string()) return t;
  if (t.is_array()) {
    for (const auto& entry : t)
      if (entry.value("name", "") == "default") return entry.value("template", "");
    if (!t.empty()) return t[0].value("template", "");
  }
  return "";
}

}  // namespace

tokenizer tokenizer::load(const fs::path& path) {
  fs::path file = fs::is_directory(path) ? path / "tokenizer.json" : path;
  fs::path dir = file.parent_path();
  json spec = *read_json(file, true);
  auto s = std::make_shared<state>();
  try {
    s->model = std::make_unique<bpe_model>(spec.at("model"));
    s->norm = make_normalizer(spec.value("normalizer", json()));
    s->pre = make_pre_tokenizer(spec.value("pre_tokenizer", json()));
    s->decoder = make_token_decoder(spec.value("decoder", json()));
    std::vector<added_token> added;
    for (const auto& t : spec.value("added_tokens", json::array())) {
      added_token a;
      a.id = t.at("id");
      a.content = t.at("content");
      a.special = t.value("special", false);
      a.lstrip = t.value("lstrip", false);
      a.rstrip = t.value("rstrip", false);
      a.single_word = t.value("single_word", false);
      s->added_index[a.id] = added.size();
      added.push_back(std::move(a));
    }
    s->added = added_token_matcher(std::move(added));
    read_post_processor(spec.value("post_processor", json()), *s);
  } catch (const json::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
  s->vocab_size = s->model->size();
  for (const auto& [id, index] : s->added_index)
    s->vocab_size = std::max(s->vocab_size, static_cast<size_t>(id) + 1);

  tokenizer tok(s);
  auto find = [&](const std::string& text) -> int32_t {
    if (text.empty()) return -1;
    auto id = tok.piece_to_id(text);
    return id ? *id : -1;
  };
  json config = read_json(dir / "tokenizer_config.json", false).value_or(json::object());
  json generation = read_json(dir / "generation_config.json", false).value_or(json::object());
  json model_config = read_json(dir / "config.json", false).value_or(json::object());

  s->bos_token = token_text(config, "bos_token");
  s->eos_token = token_text(config, "eos_token");
  s->bos_id = find(s->bos_token);
  s->eos_id = find(s->eos_token);
  for (const json* c : {&generation, &model_config}) {
    if (s->bos_id < 0 && c->contains("bos_token_id")) {
      auto ids = id_list((*c)["bos_token_id"]);
      if (!ids.empty()) s->bos_id = ids[0];
    }
    if (s->eos_id < 0 && c->contains("eos_token_id")) {
      auto ids = id_list((*c)["eos_token_id"]);
      if (!ids.empty()) s->eos_id = ids[0];
    }
  }
  if (s->bos_id < 0 && config.empty())
    s->bos_id = s->prefix_ids.empty() ? find("<s>") : s->prefix_ids[0];
  for (const char* name : {"</s>", "<|endoftext|>", "<|end_of_text|>", "<|im_end|>", "<eos>"})
    if (s->eos_id < 0 && !config.contains("eos_token")) s->eos_id = find(name);
  if (s->bos_token.empty() && s->bos_id >= 0) s->bos_token = tok.id_to_piece(s->bos_id);
  if (s->eos_token.empty() && s->eos_id >= 0) s->eos_token = tok.id_to_piece(s->eos_id);
  if (s->eos_id >= 0) s->eos_ids.push_back(s->eos_id);
  if (generation.contains("eos_token_id"))
    for (int32_t id : id_list(generation["eos_token_id"]))
      if (std::find(s->eos_ids.begin(), s->eos_ids.end(), id) == s->eos_ids.end())
        s->eos_ids.push_back(id);

  // Llama-style configs state BOS/EOS addition explicitly; that wins over the post-processor.
  if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean()) {
    s->prefix_ids.clear();
    if (config["add_bos_token"].get<bool>() && s->bos_id >= 0) s->prefix_ids.push_back(s->bos_id);
  }
  if (config.contains("add_eos_token") && config["add_eos_token"].is_boolean()) {
    s->suffix_ids.clear();
    if (config["add_eos_token"].get<bool>() && s->eos_id >= 0) s->suffix_ids.push_back(s->eos_id);
  }
  s->chat_template = pick_chat_template(config);
  // Every id the post-processor or the configs put into a prompt must index the vocabulary:
  // it would otherwise reach the model's embedding table (a hostile tokenizer.json found by
  // fuzz/tokenizer_load_fuzz.cpp named the id 13333333333333444644).
  const auto vocab = static_cast<int64_t>(tok.vocab_size());
  auto check_prompt_id = [&](int64_t id, const char* what) {
    if (id < 0 || id >= vocab)
      throw std::runtime_error(std::string(what) + " token id " + std::to_string(id) +
                               " is outside the vocabulary (" + std::to_string(vocab) + " tokens)");
  };
  for (int32_t id : s->prefix_ids) check_prompt_id(id, "the post_processor's leading");
  for (int32_t id : s->suffix_ids) check_prompt_id(id, "the post_processor's trailing");
  if (s->bos_id >= 0) check_prompt_id(s->bos_id, "the BOS");
  return tok;
}

}  // namespace actorllm
