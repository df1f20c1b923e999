#pragma once
/// UTF-8 helpers shared by the tokenizer, the decoders and the Jinja interpreter.
/// Byte strings are std::string; nothing here allocates per character.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace actorllm::unicode {

/// Appends the UTF-8 encoding of `cp` (must be a Unicode scalar value) to `out`.
void append_utf8(std::string& out, char32_t cp);

/// Length of the valid UTF-8 sequence starting at `s[pos]`, or 0 when the bytes there do not
/// start a complete, valid sequence (truncated, overlong, surrogate, out of range).
size_t valid_sequence_length(std::string_view s, size_t pos);

/// Decodes the code point at `s[pos]` and advances `pos`; invalid bytes yield U+FFFD and
/// advance by the maximal invalid subpart (the same rule as `append_lossy`).
char32_t next_code_point(std::string_view s, size_t& pos);

/// True when `s` is entirely valid UTF-8.
bool is_valid_utf8(std::string_view s);

/// Appends `bytes` to `out`, replacing each maximal invalid subpart by U+FFFD. This is the
/// Unicode "best practice" that Rust's String::from_utf8_lossy and Python's
/// errors="replace" both follow, so decoded text matches Hugging Face byte for byte.
void append_lossy(std::string& out, std::string_view bytes);

/// `append_lossy` into a fresh string.
std::string to_valid_utf8(std::string_view bytes);

/// GPT-2's byte-to-unicode table: byte b is written as the UTF-8 of this code point in
/// byte-level BPE vocabularies (printable bytes map to themselves, the rest to U+0100...).
const std::array<std::string, 256>& byte_level_encoding();

/// Inverse of byte_level_encoding: the byte a code point stands for, or -1.
int byte_level_decode(char32_t cp);

/// Unicode normalization forms, via ICU. The input must be valid UTF-8.
enum class normal_form { nfc, nfd, nfkc, nfkd };
std::string normalize(std::string_view s, normal_form form);

/// Full Unicode lower-casing (ICU, root locale). The input must be valid UTF-8.
std::string to_lower(std::string_view s);

}  // namespace actorllm::unicode
