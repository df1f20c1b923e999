#include "text/unicode.hpp"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <stdexcept>
#include <vector>

namespace actorllm::unicode {

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

// How many bytes of a sequence starting at `pos` are well-formed so far, and whether the
// sequence is complete: the table of well-formed byte sequences (Unicode 15, table 3-7).
struct probe {
  size_t good;    // bytes that form a valid prefix
  bool complete;  // the valid prefix is a whole character
};

probe probe_sequence(std::string_view s, size_t pos) {
  auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) return {1, true};
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {0, false};
  }
  size_t good = 1;
  for (size_t i = 1; i <= need; ++i) {
    if (pos + i >= s.size()) return {good, false};
    auto b = static_cast<unsigned char>(s[pos + i]);
    if (b < lo || b > hi) return {good, false};
    lo = 0x80;
    hi = 0xBF;
    ++good;
  }
  return {good, true};
}

}  // namespace

size_t valid_sequence_length(std::string_view s, size_t pos) {
  auto p = probe_sequence(s, pos);
  return p.complete ? p.good : 0;
}

char32_t next_code_point(std::string_view s, size_t& pos) {
  auto p = probe_sequence(s, pos);
  if (!p.complete) {
    pos += p.good == 0 ? 1 : p.good;
    return 0xFFFD;
  }
  auto b0 = static_cast<unsigned char>(s[pos]);
  char32_t cp;
  switch (p.good) {
    case 1:
      cp = b0;
      break;
    case 2:
      cp = b0 & 0x1F;
      break;
    case 3:
      cp = b0 & 0x0F;
      break;
    default:
      cp = b0 & 0x07;
      break;
  }
  for (size_t i = 1; i < p.good; ++i)
    cp = (cp << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3F);
  pos += p.good;
  return cp;
}

bool is_valid_utf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    size_t n = valid_sequence_length(s, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

void append_lossy(std::string& out, std::string_view bytes) {
  size_t run = 0;  // start of the pending run of valid bytes
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
      ++pos;
      continue;
    }
    auto p = probe_sequence(bytes, pos);
    if (p.complete) {
      pos += p.good;
      continue;
    }
    out.append(bytes.substr(run, pos - run));
    out.append("\xEF\xBF\xBD");
    pos += p.good == 0 ? 1 : p.good;
    run = pos;
  }
  out.append(bytes.substr(run));
}

std::string to_valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  append_lossy(out, bytes);
  return out;
}

namespace {

std::array<char32_t, 256> byte_level_code_points() {
  std::array<char32_t, 256> cps{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    cps[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return cps;
}

}  // namespace

const std::array<std::string, 256>& byte_level_encoding() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    auto cps = byte_level_code_points();
    for (int b = 0; b < 256; ++b) append_utf8(t[b], cps[b]);
    return t;
  }();
  return table;
}

int byte_level_decode(char32_t cp) {
  static const std::vector<int> table = [] {
    std::vector<int> t(512, -1);
    auto cps = byte_level_code_points();
    for (int b = 0; b < 256; ++b) t[cps[b]] = b;
    return t;
  }();
  return cp < table.size() ? table[cp] : -1;
}

namespace {

std::u16string to_utf16(std::string_view s) {
  std::u16string out;
  int32_t len = 0;
  UErrorCode err = U_ZERO_ERROR;
  u_strFromUTF8(nullptr, 0, &len, s.data(), static_cast<int32_t>(s.size()), &err);
  out.resize(len);
  err = U_ZERO_ERROR;
  u_strFromUTF8(out.data(), len, &len, s.data(), static_cast<int32_t>(s.size()), &err);
  if (U_FAILURE(err)) throw std::runtime_error("invalid UTF-8 given to Unicode normalization");
  return out;
}

std::string to_utf8(const std::u16string& s) {
  std::string out;
  int32_t len = 0;
  UErrorCode err = U_ZERO_ERROR;
  u_strToUTF8(nullptr, 0, &len, s.data(), static_cast<int32_t>(s.size()), &err);
  out.resize(len);
  err = U_ZERO_ERROR;
  u_strToUTF8(out.data(), len, &len, s.data(), static_cast<int32_t>(s.size()), &err);
  return out;
}

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

}  // namespace

std::string normalize(std::string_view s, normal_form form) {
  if (is_ascii(s)) return std::string(s);  // every form leaves ASCII unchanged
  UErrorCode err = U_ZERO_ERROR;
  const UNormalizer2* n = nullptr;
  switch (form) {
    case normal_form::nfc:
      n = unorm2_getNFCInstance(&err);
      break;
    case normal_form::nfd:
      n = unorm2_getNFDInstance(&err);
      break;
    case normal_form::nfkc:
      n = unorm2_getNFKCInstance(&err);
      break;
    case normal_form::nfkd:
      n = unorm2_getNFKDInstance(&err);
      break;
  }
  if (U_FAILURE(err)) throw std::runtime_error("ICU normalizer unavailable");
  auto in = to_utf16(s);
  std::u16string out(in.size() * 3 + 16, u'\0');
  err = U_ZERO_ERROR;
  int32_t len = unorm2_normalize(n, in.data(), static_cast<int32_t>(in.size()), out.data(),
                                 static_cast<int32_t>(out.size()), &err);
  if (err == U_BUFFER_OVERFLOW_ERROR) {
    out.resize(len);
    err = U_ZERO_ERROR;
    len = unorm2_normalize(n, in.data(), static_cast<int32_t>(in.size()), out.data(), len, &err);
  }
  if (U_FAILURE(err)) throw std::runtime_error("Unicode normalization failed");
  out.resize(len);
  return to_utf8(out);
}

std::string to_lower(std::string_view s) {
  if (is_ascii(s)) {
    std::string out(s);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
  }
  auto in = to_utf16(s);
  std::u16string out(in.size() * 2 + 16, u'\0');
  UErrorCode err = U_ZERO_ERROR;
  int32_t len = u_strToLower(out.data(), static_cast<int32_t>(out.size()), in.data(),
                             static_cast<int32_t>(in.size()), "", &err);
  if (U_FAILURE(err)) throw std::runtime_error("Unicode lower-casing failed");
  out.resize(len);
  return to_utf8(out);
}

}  // namespace actorllm::unicode
