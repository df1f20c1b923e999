#include "tokenizer/normalizer.hpp"

#include <stdexcept>
#include <vector>

#include "tokenizer/tokenizer_regex.hpp"
#include "text/unicode.hpp"

namespace actorllm {
namespace {

class sequence_normalizer final : public normalizer {
 public:
  explicit sequence_normalizer(std::vector<std::unique_ptr<normalizer>> parts)
      : parts_(std::move(parts)) {}
  void normalize(std::string& text) const override {
    for (const auto& p : parts_) p->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<normalizer>> parts_;
};

class prepend_normalizer final : public normalizer {
 public:
  explicit prepend_normalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);  // Hugging Face leaves empty text empty
  }

 private:
  std::string prefix_;
};

class replace_normalizer final : public normalizer {
 public:
  replace_normalizer(std::string_view pattern, bool literal, std::string content)
      : regex_(pattern, literal), content_(std::move(content)) {}
  void normalize(std::string& text) const override {
    std::vector<std::pair<size_t, size_t>> hits;
    regex_.find_all(text, hits);
    if (hits.empty()) return;
    std::string out;
    out.reserve(text.size() + hits.size() * content_.size());
    size_t last = 0;
    for (auto [b, e] : hits) {
      out.append(text, last, b - last);
      out.append(content_);
      last = e;
    }
    out.append(text, last);
    text.swap(out);
  }

 private:
  tokenizer_regex regex_;
  std::string content_;
};

class unicode_normalizer final : public normalizer {
 public:
  explicit unicode_normalizer(unicode::normal_form form) : form_(form) {}
  void normalize(std::string& text) const override { text = unicode::normalize(text, form_); }

 private:
  unicode::normal_form form_;
};

class lowercase_normalizer final : public normalizer {
 public:
  void normalize(std::string& text) const override { text = unicode::to_lower(text); }
};

class strip_normalizer final : public normalizer {
 public:
  strip_normalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    size_t b = 0, e = text.size();
    if (left_)
      while (b < e && is_space(text[b])) ++b;
    if (right_)
      while (e > b && is_space(text[e - 1])) --e;
    text = text.substr(b, e - b);
  }

 private:
  bool left_, right_;
};

}  // namespace

std::unique_ptr<normalizer> make_normalizer(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = spec.value("type", "");
  if (type == "Sequence") {
    std::vector<std::unique_ptr<normalizer>> parts;
    for (const auto& p : spec.at("normalizers"))
      if (auto n = make_normalizer(p)) parts.push_back(std::move(n));
    return std::make_unique<sequence_normalizer>(std::move(parts));
  }
  if (type == "Prepend") return std::make_unique<prepend_normalizer>(spec.at("prepend"));
  if (type == "Replace") {
    const auto& pattern = spec.at("pattern");
    bool literal = pattern.contains("String");
    std::string p = literal ? pattern.at("String") : pattern.at("Regex");
    return std::make_unique<replace_normalizer>(p, literal, spec.at("content"));
  }
  if (type == "NFC") return std::make_unique<unicode_normalizer>(unicode::normal_form::nfc);
  if (type == "NFD") return std::make_unique<unicode_normalizer>(unicode::normal_form::nfd);
  if (type == "NFKC") return std::make_unique<unicode_normalizer>(unicode::normal_form::nfkc);
  if (type == "NFKD") return std::make_unique<unicode_normalizer>(unicode::normal_form::nfkd);
  if (type == "Lowercase") return std::make_unique<lowercase_normalizer>();
  if (type == "Strip")
    return std::make_unique<strip_normalizer>(spec.value("left", true), spec.value("right", true));
  throw std::runtime_error("unsupported normalizer type '" + type + "' in tokenizer.json");
}

}  // namespace actorllm
