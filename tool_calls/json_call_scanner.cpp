#include "tool_calls/json_call_scanner.hpp"

#include <nlohmann/json.hpp>

namespace actorllm::tool_calls {
namespace {

// Keys longer than this are not "name" / "arguments" / "parameters"; only their length is kept.
constexpr std::size_t kMaxKeyBytes = 16;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool is_json_space(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

// Number states of RFC 8259's grammar.
enum number_state : std::uint8_t {
  n_start,
  n_minus,
  n_zero,
  n_int,
  n_dot,
  n_frac,
  n_e,
  n_esign,
  n_exp
};

}  // namespace

json_call_scanner::json_call_scanner(mode m, std::size_t max_depth)
    : mode_(m), max_depth_(max_depth) {}

json_call_scanner::byte_result json_call_scanner::feed(char c) {
  byte_result r = step(c);
  if (r.state == status::error) state_ = state::error;
  return r;
}

json_call_scanner::byte_result json_call_scanner::step(char c) {
  byte_result r;
  // A number ends at the first byte that cannot continue it; that byte is then read in the
  // state that follows the number and is not part of it.
  if (state_ == state::number && !number_accepts(c)) {
    if (!number_can_end() || !end_value(r)) return {.state = status::error};
  }
  const bool was_in_arguments = args_active_;
  bool ok = true;
  switch (state_) {
    case state::start:
      if (c != '{' && !(mode_ == mode::arguments_value && c == '['))
        return {.state = status::error};
      if (mode_ == mode::arguments_value) args_active_ = arguments_started_ = true;
      ok = begin_value(c, r);
      break;
    case state::value:
      ok = is_json_space(c) || begin_value(c, r);
      break;
    case state::value_or_close:
      ok = is_json_space(c) || (c == ']' ? close_container(c, r) : begin_value(c, r));
      break;
    case state::key_or_close:
    case state::key:
      if (is_json_space(c)) break;
      if (c == '}' && state_ == state::key_or_close) {
        ok = close_container(c, r);
      } else if (c == '"') {
        state_ = state::string;
        string_is_key_ = true;
        if (stack_.size() == 1) token_.clear();
      } else {
        ok = false;
      }
      break;
    case state::colon:
      if (is_json_space(c)) break;
      ok = c == ':';
      state_ = state::value;
      break;
    case state::comma_or_close:
      if (is_json_space(c)) break;
      if (c == ',') {
        state_ = stack_.back() == '{' ? state::key : state::value;
      } else {
        ok = close_container(c, r);
      }
      break;
    case state::string:
      if (c == '"') {
        if (string_is_key_) {
          if (stack_.size() == 1) {
            const bool is_arguments = token_ == "arguments" || token_ == "parameters";
            value_role_ = token_ == "name"                   ? role::name
                          : is_arguments && !arguments_seen_ ? role::arguments
                                                             : role::none;
          }
          state_ = state::colon;
        } else {
          if (role_ == role::name && stack_.size() == 1) {
            if (!name_) {
              try {
                name_ = nlohmann::json::parse("\"" + token_ + "\"").get<std::string>();
              } catch (const nlohmann::json::exception&) {
                return {.state = status::error};  // not UTF-8
              }
              r.name_complete = true;
            }
            token_.clear();
          }
          ok = end_value(r);
        }
        break;
      }
      if (static_cast<unsigned char>(c) < 0x20) return {.state = status::error};
      if (c == '\\') state_ = state::string_escape;
      if (stack_.size() == 1 && (role_ == role::name || string_is_key_) &&
          (role_ == role::name || token_.size() <= kMaxKeyBytes)) {
        token_ += c;
      }
      break;
    case state::string_escape:
      if (c == 'u') {
        state_ = state::string_hex;
        hex_left_ = 4;
      } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' ||
                 c == 'r' || c == 't') {
        state_ = state::string;
      } else {
        return {.state = status::error};
      }
      if (stack_.size() == 1 && (role_ == role::name || string_is_key_)) token_ += c;
      break;
    case state::string_hex:
      if (!is_hex(c)) return {.state = status::error};
      if (--hex_left_ == 0) state_ = state::string;
      if (stack_.size() == 1 && (role_ == role::name || string_is_key_)) token_ += c;
      break;
    case state::number:
      // number_accepts(c) held (otherwise the number ended above).
      break;
    case state::literal:
      if (c != literal_[literal_pos_]) return {.state = status::error};
      if (++literal_pos_ == literal_.size()) ok = end_value(r);
      break;
    case state::done:
    case state::error:
      return {.state = status::error};
  }
  if (!ok) return {.state = status::error};
  r.in_arguments = was_in_arguments || args_active_;
  if (state_ == state::done) r.state = status::done;
  return r;
}

bool json_call_scanner::begin_value(char c, byte_result& r) {
  (void)r;
  // A value directly inside the call object takes the role of the key before it.
  if (mode_ == mode::call_object && stack_.size() == 1) {
    role_ = value_role_;
    value_role_ = role::none;
    if (role_ == role::arguments) args_active_ = arguments_started_ = arguments_seen_ = true;
    if (role_ == role::name) {
      if (c != '"') return false;
      token_.clear();
    }
  }
  switch (c) {
    case '{':
    case '[':
      if (stack_.size() >= max_depth_) return false;
      stack_.push_back(c);
      state_ = c == '{' ? state::key_or_close : state::value_or_close;
      return true;
    case '"':
      state_ = state::string;
      string_is_key_ = false;
      return true;
    case 't':
    case 'f':
    case 'n':
      literal_ = c == 't' ? "true" : c == 'f' ? "false" : "null";
      literal_pos_ = 1;
      state_ = state::literal;
      return true;
    default:
      if (c != '-' && !is_digit(c)) return false;
      number_state_ = n_start;
      state_ = state::number;
      return number_accepts(c);
  }
}

bool json_call_scanner::close_container(char c, byte_result& r) {
  if (stack_.empty() || (c == '}' ? '{' : '[') != stack_.back()) return false;
  if (c != '}' && c != ']') return false;
  stack_.pop_back();
  return end_value(r);
}

bool json_call_scanner::end_value(byte_result& r) {
  (void)r;
  if (stack_.empty()) {
    state_ = state::done;
    args_active_ = false;
    return true;
  }
  state_ = state::comma_or_close;
  if (mode_ == mode::call_object && stack_.size() == 1) {
    if (role_ == role::arguments) args_active_ = false;
    role_ = role::none;
  }
  return true;
}

bool json_call_scanner::number_accepts(char c) {
  auto next = [&](number_state s) {
    number_state_ = s;
    return true;
  };
  switch (number_state_) {
    case n_start:
      if (c == '-') return next(n_minus);
      [[fallthrough]];
    case n_minus:
      if (c == '0') return next(n_zero);
      if (is_digit(c)) return next(n_int);
      return false;
    case n_int:
      if (is_digit(c)) return next(n_int);
      [[fallthrough]];
    case n_zero:
      if (c == '.') return next(n_dot);
      if (c == 'e' || c == 'E') return next(n_e);
      return false;
    case n_dot:
    case n_frac:
      if (is_digit(c)) return next(n_frac);
      if (number_state_ == n_frac && (c == 'e' || c == 'E')) return next(n_e);
      return false;
    case n_e:
      if (c == '+' || c == '-') return next(n_esign);
      [[fallthrough]];
    case n_esign:
    case n_exp:
      if (is_digit(c)) return next(n_exp);
      return false;
  }
  return false;
}

bool json_call_scanner::number_can_end() const {
  return number_state_ == n_zero || number_state_ == n_int || number_state_ == n_frac ||
         number_state_ == n_exp;
}

}  // namespace actorllm::tool_calls
