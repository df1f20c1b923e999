#include "tokenizer/token_decoder.hpp"

#include <stdexcept>

#include "tokenizer/tokenizer_regex.hpp"
#include "text/unicode.hpp"

namespace actorllm {
namespace {

class sequence_decoder final : public token_decoder {
 public:
  explicit sequence_decoder(std::vector<std::unique_ptr<token_decoder>> parts)
      : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<token_decoder>> parts_;
};

class replace_decoder final : public token_decoder {
 public:
  replace_decoder(std::string_view pattern, bool literal, std::string content)
      : regex_(pattern, literal), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::pair<size_t, size_t>> hits;
    for (auto& t : tokens) {
      hits.clear();
      regex_.find_all(t, hits);
      if (hits.empty()) continue;
      std::string out;
      size_t last = 0;
      for (auto [b, e] : hits) {
        out.append(t, last, b - last).append(content_);
        last = e;
      }
      out.append(t, last);
      t.swap(out);
    }
  }

 private:
  tokenizer_regex regex_;
  std::string content_;
};

/// "<0xNN>" → the byte NN; runs of bytes are joined and, when they are not valid UTF-8,
/// become one U+FFFD per byte (tokenizers' ByteFallback).
class byte_fallback_decoder final : public token_decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string bytes;
    auto flush = [&] {
      if (bytes.empty()) return;
      if (unicode::is_valid_utf8(bytes)) {
        out.push_back(bytes);
      } else {
        for (size_t i = 0; i < bytes.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      bytes.clear();
    };
    for (auto& t : tokens) {
      int byte = parse_byte(t);
      if (byte >= 0) {
        bytes.push_back(static_cast<char>(byte));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens.swap(out);
  }

 private:
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  }
  static int parse_byte(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
  }
};

class fuse_decoder final : public token_decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

/// Removes up to `start` leading and `stop` trailing copies of one character per token.
class strip_decoder final : public token_decoder {
 public:
  strip_decoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    const size_t n = content_.size();
    for (auto& t : tokens) {
      size_t b = 0, e = t.size();
      for (size_t i = 0; i < start_ && e - b >= n && t.compare(b, n, content_) == 0; ++i) b += n;
      for (size_t i = 0; i < stop_ && e - b >= n && t.compare(e - n, n, content_) == 0; ++i) e -= n;
      t = t.substr(b, e - b);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

/// Maps byte-level symbols back to bytes; a token with a symbol outside the table keeps its
/// own bytes. The joined bytes are decoded lossily (tokenizers' ByteLevel decoder).
class byte_level_decoder final : public token_decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    std::string token_bytes;
    for (const auto& t : tokens) {
      token_bytes.clear();
      bool ok = true;
      for (size_t pos = 0; pos < t.size() && ok;) {
        int b = unicode::byte_level_decode(unicode::next_code_point(t, pos));
        if (b < 0)
          ok = false;
        else
          token_bytes.push_back(static_cast<char>(b));
      }
      bytes += ok ? token_bytes : t;
    }
    tokens.assign(1, unicode::to_valid_utf8(bytes));
  }
};

class metaspace_decoder final : public token_decoder {
 public:
  metaspace_decoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      for (size_t pos = 0; pos < t.size();) {
        if (t.compare(pos, replacement_.size(), replacement_) == 0) {
          out.push_back(' ');
          pos += replacement_.size();
        } else {
          out.push_back(t[pos++]);
        }
      }
      if (i == 0 && strip_first_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
      tokens[i].swap(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

}  // namespace

std::unique_ptr<token_decoder> make_token_decoder(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = spec.value("type", "");
  if (type == "Sequence") {
    std::vector<std::unique_ptr<token_decoder>> parts;
    for (const auto& p : spec.at("decoders"))
      if (auto d = make_token_decoder(p)) parts.push_back(std::move(d));
    return std::make_unique<sequence_decoder>(std::move(parts));
  }
  if (type == "Replace") {
    const auto& pattern = spec.at("pattern");
    bool literal = pattern.contains("String");
    std::string p = literal ? pattern.at("String") : pattern.at("Regex");
    return std::make_unique<replace_decoder>(p, literal, spec.at("content"));
  }
  if (type == "ByteFallback") return std::make_unique<byte_fallback_decoder>();
  if (type == "Fuse") return std::make_unique<fuse_decoder>();
  if (type == "Strip")
    return std::make_unique<strip_decoder>(spec.at("content"), spec.value("start", 0),
                                           spec.value("stop", 0));
  if (type == "ByteLevel") return std::make_unique<byte_level_decoder>();
  if (type == "Metaspace") {
    bool strip = spec.contains("prepend_scheme") ? spec["prepend_scheme"] != "never"
                                                 : spec.value("add_prefix_space", true);
    return std::make_unique<metaspace_decoder>(spec.value("replacement", "\xE2\x96\x81"), strip);
  }
  throw std::runtime_error("unsupported decoder type '" + type + "' in tokenizer.json");
}

std::string decode_tokens(const token_decoder* decoder, std::vector<std::string> tokens) {
  std::string text;
  if (!decoder) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i) text.push_back(' ');
      text += tokens[i];
    }
  } else {
    decoder->decode_chain(tokens);
    for (const auto& t : tokens) text += t;
  }
  return unicode::to_valid_utf8(text);
}

}  // namespace actorllm
