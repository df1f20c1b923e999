#pragma once
/// Reads config.json's fields with their types and ranges checked: every refusal names the
/// file and the field, since a hostile or broken folder must not crash the loader (a zero
/// head count divides by zero, a huge context allocates without bound).
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace actorllm {

class field_reader {
 public:
  field_reader(const nlohmann::json& j, std::filesystem::path path)
      : j_(j), path_(std::move(path)) {}

  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  const nlohmann::json& json() const { return j_; }
  const std::filesystem::path& path() const { return path_; }

  /// An integer in [lo, hi]; `fallback` when absent (required fields pass nullopt).
  int64_t integer(const char* key, std::optional<int64_t> fallback, int64_t lo, int64_t hi) const {
    if (!has(key)) return fallback ? *fallback : missing(key);
    return checked_integer(key, j_[key], lo, hi);
  }

  /// A finite number in the open interval (lo, hi).
  double number(const char* key, double fallback, double lo, double hi) const {
    if (!has(key)) return fallback;
    return checked_number(key, j_[key], lo, hi);
  }

  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_boolean()) fail(key, "must be true or false, got " + type_of(j_[key]));
    return j_[key].get<bool>();
  }

  std::string string(const char* key, std::string fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_string()) fail(key, "must be a string, got " + type_of(j_[key]));
    return j_[key].get<std::string>();
  }

  /// An integer or a list of integers in [lo, hi] (eos_token_id takes either form).
  std::vector<int32_t> integers(const char* key, int64_t lo, int64_t hi) const {
    if (!has(key)) return {};
    const auto& v = j_[key];
    if (!v.is_array()) return {static_cast<int32_t>(integer(key, std::nullopt, lo, hi))};
    std::vector<int32_t> out;
    for (const auto& item : v) {
      if (!item.is_number_integer()) fail(key, "must hold integers, got " + type_of(item));
      out.push_back(static_cast<int32_t>(checked_integer(key, item, lo, hi)));
    }
    return out;
  }

  /// A list of at most `max_items` numbers in (lo, hi); empty when absent.
  std::vector<double> numbers(const char* key, size_t max_items, double lo, double hi) const {
    if (!has(key)) return {};
    const auto& v = j_[key];
    if (!v.is_array()) fail(key, "must be a list of numbers, got " + type_of(v));
    if (v.size() > max_items)
      fail(key, "has " + std::to_string(v.size()) + " items, at most " + std::to_string(max_items) +
                    " allowed");
    std::vector<double> out;
    for (const auto& item : v) out.push_back(checked_number(key, item, lo, hi));
    return out;
  }

  /// A list of strings of at most `max_items`; empty when absent.
  std::vector<std::string> strings(const char* key, size_t max_items) const {
    if (!has(key)) return {};
    const auto& v = j_[key];
    if (!v.is_array() || v.size() > max_items)
      fail(key, "must be a list of at most " + std::to_string(max_items) + " strings, got " +
                    type_of(v));
    std::vector<std::string> out;
    for (const auto& item : v) {
      if (!item.is_string()) fail(key, "must hold strings, got " + type_of(item));
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::runtime_error(path_.string() + ": field '" + key + "' " + what);
  }

 private:
  int64_t checked_integer(const char* key, const nlohmann::json& v, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer()) {
      if (v.is_number_float()) fail(key, "must be a whole number, got " + v.dump());
      fail(key, "must be an integer, got " + type_of(v));
    }
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
      fail(key, out_of_range(v.dump(), lo, hi));
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) fail(key, out_of_range(v.dump(), lo, hi));
    return x;
  }
  double checked_number(const char* key, const nlohmann::json& v, double lo, double hi) const {
    if (!v.is_number()) fail(key, "must be a number, got " + type_of(v));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x <= lo || x >= hi)
      fail(key, "must be above " + fmt(lo) + " and below " + fmt(hi) + ", got " + v.dump());
    return x;
  }
  [[noreturn]] int64_t missing(const char* key) const {
    throw std::runtime_error(path_.string() + ": missing field '" + key + "'");
  }
  static std::string type_of(const nlohmann::json& v) {
    return std::string(v.type_name()) + " " + v.dump().substr(0, 40);
  }
  static std::string fmt(double x) {
    std::ostringstream out;
    out << x;
    return out.str();
  }
  static std::string out_of_range(const std::string& got, int64_t lo, int64_t hi) {
    return "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + got;
  }

  const nlohmann::json& j_;
  std::filesystem::path path_;
};

}  // namespace actorllm
