#include "tokenizer/pre_tokenizer.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "tokenizer/tokenizer_regex.hpp"
#include "text/unicode.hpp"

namespace actorllm {
namespace {

using ranges = std::vector<std::pair<size_t, size_t>>;

enum class split_behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

split_behavior parse_behavior(const std::string& name) {
  if (name == "Removed") return split_behavior::removed;
  if (name == "Isolated") return split_behavior::isolated;
  if (name == "MergedWithPrevious") return split_behavior::merged_with_previous;
  if (name == "MergedWithNext") return split_behavior::merged_with_next;
  if (name == "Contiguous") return split_behavior::contiguous;
  throw std::runtime_error("unsupported split behavior '" + name + "' in tokenizer.json");
}

/// Cuts `text` at the matches of `regex` the way tokenizers' NormalizedString::split does.
void split_text(const std::string& text, const tokenizer_regex& regex, split_behavior behavior,
                bool invert, std::vector<std::string>& out) {
  thread_local ranges hits;
  hits.clear();
  regex.find_all(text, hits);
  // Alternate gaps and matches over the whole text: (begin, end, is_match).
  struct span {
    size_t b, e;
    bool match;
  };
  std::vector<span> spans;
  spans.reserve(hits.size() * 2 + 1);
  size_t last = 0;
  for (auto [b, e] : hits) {
    if (b > last) spans.push_back({last, b, invert});
    spans.push_back({b, e, !invert});
    last = e;
  }
  if (last < text.size()) spans.push_back({last, text.size(), invert});

  std::vector<span> kept;
  kept.reserve(spans.size());
  switch (behavior) {
    case split_behavior::removed:
      for (auto& s : spans)
        if (!s.match) kept.push_back(s);
      break;
    case split_behavior::isolated:
      kept = spans;
      break;
    case split_behavior::merged_with_previous: {
      bool previous_match = false;
      for (auto& s : spans) {
        if (s.match && !previous_match && !kept.empty())
          kept.back().e = s.e;
        else
          kept.push_back(s);
        previous_match = s.match;
      }
      break;
    }
    case split_behavior::merged_with_next: {
      bool previous_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->match && !previous_match && !kept.empty())
          kept.back().b = it->b;
        else
          kept.push_back(*it);
        previous_match = it->match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    }
    case split_behavior::contiguous:
      for (auto& s : spans) {
        if (!kept.empty() && kept.back().match == s.match)
          kept.back().e = s.e;
        else
          kept.push_back(s);
      }
      break;
  }
  for (auto& s : kept) out.emplace_back(text, s.b, s.e - s.b);
}

class sequence_pre_tokenizer final : public pre_tokenizer {
 public:
  explicit sequence_pre_tokenizer(std::vector<std::unique_ptr<pre_tokenizer>> parts)
      : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<std::string>& pieces, bool first_segment) const override {
    for (const auto& p : parts_) p->pre_tokenize(pieces, first_segment);
  }

 private:
  std::vector<std::unique_ptr<pre_tokenizer>> parts_;
};

class split_pre_tokenizer final : public pre_tokenizer {
 public:
  split_pre_tokenizer(std::string_view pattern, bool literal, split_behavior behavior, bool invert)
      : regex_(pattern, literal), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<std::string>& pieces, bool) const override {
    std::vector<std::string> out;
    out.reserve(pieces.size() * 4);
    for (const auto& p : pieces) split_text(p, regex_, behavior_, invert_, out);
    pieces.swap(out);
  }

 private:
  tokenizer_regex regex_;
  split_behavior behavior_;
  bool invert_;
};

// GPT-2's word regex, which ByteLevel applies when use_regex is true.
constexpr const char* gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class byte_level_pre_tokenizer final : public pre_tokenizer {
 public:
  byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<tokenizer_regex>(gpt2_pattern, false);
  }
  void pre_tokenize(std::vector<std::string>& pieces, bool) const override {
    std::vector<std::string> split;
    for (auto& p : pieces) {
      if (add_prefix_space_ && (p.empty() || p[0] != ' ')) p = " " + p;
      if (regex_)
        split_text(p, *regex_, split_behavior::isolated, false, split);
      else
        split.push_back(std::move(p));
    }
    const auto& table = unicode::byte_level_encoding();
    for (auto& p : split) {
      std::string mapped;
      mapped.reserve(p.size() * 2);
      for (unsigned char c : p) mapped += table[c];
      p.swap(mapped);
    }
    pieces.swap(split);
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<tokenizer_regex> regex_;
};

class metaspace_pre_tokenizer final : public pre_tokenizer {
 public:
  enum class prepend { always, first, never };
  metaspace_pre_tokenizer(std::string replacement, prepend scheme, bool split)
      : replacement_(std::move(replacement)),
        scheme_(scheme),
        split_(split),
        regex_(replacement_, true) {}
  void pre_tokenize(std::vector<std::string>& pieces, bool first_segment) const override {
    std::vector<std::string> out;
    for (size_t i = 0; i < pieces.size(); ++i) {
      std::string text;
      for (char c : pieces[i]) {
        if (c == ' ')
          text += replacement_;
        else
          text.push_back(c);
      }
      bool want =
          scheme_ == prepend::always || (scheme_ == prepend::first && first_segment && i == 0);
      if (want && text.compare(0, replacement_.size(), replacement_) != 0)
        text.insert(0, replacement_);
      if (split_)
        split_text(text, regex_, split_behavior::merged_with_next, false, out);
      else
        out.push_back(std::move(text));
    }
    pieces.swap(out);
  }

 private:
  std::string replacement_;
  prepend scheme_;
  bool split_;
  tokenizer_regex regex_;
};

class regex_pre_tokenizer final : public pre_tokenizer {
 public:
  regex_pre_tokenizer(const char* pattern, split_behavior behavior, bool invert)
      : regex_(pattern, false), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<std::string>& pieces, bool) const override {
    std::vector<std::string> out;
    for (const auto& p : pieces) split_text(p, regex_, behavior_, invert_, out);
    pieces.swap(out);
  }

 private:
  tokenizer_regex regex_;
  split_behavior behavior_;
  bool invert_;
};

metaspace_pre_tokenizer::prepend parse_prepend(const nlohmann::json& spec) {
  if (spec.contains("prepend_scheme")) {
    std::string s = spec.at("prepend_scheme");
    if (s == "always") return metaspace_pre_tokenizer::prepend::always;
    if (s == "first") return metaspace_pre_tokenizer::prepend::first;
    if (s == "never") return metaspace_pre_tokenizer::prepend::never;
    throw std::runtime_error("unsupported Metaspace prepend_scheme '" + s + "'");
  }
  return spec.value("add_prefix_space", true) ? metaspace_pre_tokenizer::prepend::always
                                              : metaspace_pre_tokenizer::prepend::never;
}

}  // namespace

std::unique_ptr<pre_tokenizer> make_pre_tokenizer(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = spec.value("type", "");
  if (type == "Sequence") {
    std::vector<std::unique_ptr<pre_tokenizer>> parts;
    for (const auto& p : spec.at("pretokenizers"))
      if (auto t = make_pre_tokenizer(p)) parts.push_back(std::move(t));
    return std::make_unique<sequence_pre_tokenizer>(std::move(parts));
  }
  if (type == "Split") {
    const auto& pattern = spec.at("pattern");
    bool literal = pattern.contains("String");
    std::string p = literal ? pattern.at("String") : pattern.at("Regex");
    return std::make_unique<split_pre_tokenizer>(p, literal, parse_behavior(spec.at("behavior")),
                                                 spec.value("invert", false));
  }
  if (type == "ByteLevel")
    return std::make_unique<byte_level_pre_tokenizer>(spec.value("add_prefix_space", false),
                                                      spec.value("use_regex", true));
  if (type == "Metaspace")
    return std::make_unique<metaspace_pre_tokenizer>(
        spec.value("replacement", "\xE2\x96\x81"), parse_prepend(spec), spec.value("split", true));
  if (type == "Whitespace")
    return std::make_unique<regex_pre_tokenizer>(R"(\w+|[^\w\s]+)", split_behavior::removed, true);
  if (type == "WhitespaceSplit")
    return std::make_unique<regex_pre_tokenizer>(R"(\s+)", split_behavior::removed, false);
  if (type == "Digits")
    return std::make_unique<regex_pre_tokenizer>(
        spec.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)", split_behavior::isolated,
        false);
  throw std::runtime_error("unsupported pre_tokenizer type '" + type + "' in tokenizer.json");
}

}  // namespace actorllm
