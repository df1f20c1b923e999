#pragma once
/// Finds a fixed marker ("<tool_call>", "</think>") in text that arrives a byte at a time,
/// holding back only the bytes that might still begin it (fewer than the marker's length).
#include <string>
#include <string_view>
#include <utility>

namespace actorllm::tool_calls {

class marker_finder {
 public:
  explicit marker_finder(std::string_view marker) : marker_(marker) {}

  /// Feeds c. Appends to `released` the bytes now known not to start the marker; returns true
  /// when the marker is complete (it is then dropped from held()).
  bool feed(char c, std::string& released) {
    held_ += c;
    std::size_t drop = 0;
    while (drop < held_.size() && !marker_.starts_with(std::string_view(held_).substr(drop))) {
      ++drop;
    }
    released.append(held_, 0, drop);
    held_.erase(0, drop);
    if (held_.size() == marker_.size()) {
      held_.clear();
      return true;
    }
    return false;
  }

  /// The bytes held back: a proper prefix of the marker.
  const std::string& held() const { return held_; }
  void clear() { held_.clear(); }
  std::string_view marker() const { return marker_; }

 private:
  std::string_view marker_;
  std::string held_;
};

/// The text around calls: content, in which a start marker opens the next call. Right after a
/// call, whitespace is held back and dropped if the next marker follows (it only separates
/// calls); any other text releases it as content. The held whitespace is bounded by
/// `max_held`: past it, it is content.
class text_between_calls {
 public:
  text_between_calls(std::string_view marker, std::size_t max_held)
      : finder_(marker), max_held_(max_held) {}

  /// Feeds c; appends what is content now to `content`; true when the marker is complete.
  bool feed(char c, std::string& content) {
    std::string released;
    const bool found = finder_.feed(c, released);
    for (char r : released) {
      if (after_call_ && (r == ' ' || r == '\n' || r == '\t' || r == '\r') &&
          held_space_.size() < max_held_) {
        held_space_ += r;
        continue;
      }
      if (after_call_) {
        content += held_space_;
        held_space_.clear();
        after_call_ = false;
      }
      content += r;
    }
    return found;
  }

  /// A call has ended: whitespace is held from now on.
  void call_ended() { after_call_ = true; }
  /// The whitespace dropped before the marker just found (to give back if that call fails).
  std::string take_held_space() {
    after_call_ = false;
    return std::exchange(held_space_, {});
  }
  /// At the end of output: a partial marker is content, and so is the whitespace before it;
  /// whitespace alone after the last call is dropped.
  std::string end_text() const {
    if (finder_.held().empty()) return after_call_ ? std::string() : held_space_;
    return held_space_ + finder_.held();
  }

 private:
  marker_finder finder_;
  std::size_t max_held_;
  bool after_call_ = false;
  std::string held_space_;
};

}  // namespace actorllm::tool_calls
