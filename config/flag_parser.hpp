#pragma once
/// A small command-line parser: flags are declared with their help text and a setter, so
/// `--help` documents every flag and a bad value yields one clear line.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace actorllm {

class flag_parser {
 public:
  /// A setter returns an empty string on success, or what is wrong with the value.
  using setter = std::function<std::string(std::string_view value)>;

  flag_parser(std::string usage, std::string summary);

  void add(std::string name, std::string value_name, std::string help, setter set);
  /// A flag with one or more values (argparse's nargs='+', as vLLM's --lora-modules): every
  /// argument after it up to the next flag is a value; `set` is called for each, and the flag
  /// may be repeated.
  void add_values(std::string name, std::string value_name, std::string help, setter set);
  void add_flag(std::string name, std::string help, std::function<void()> on_set);
  /// A flag without a value whose setter may still refuse it (called with an empty value).
  void add_switch(std::string name, std::string help, setter set);
  void add_string(std::string name, std::string help, std::string& target);
  void add_strings(std::string name, std::string help, std::vector<std::string>& target);
  void add_bool(std::string name, std::string help, bool& target);  ///< also --no-<name>
  template <typename T>
  void add_number(std::string name, std::string help, T& target);
  /// A value out of a fixed set of names, each standing for one T; any other value is an
  /// error that lists the names ("must be a or b (got 'c')").
  template <typename T>
  void add_choice(std::string name, std::string help, T& target,
                  std::vector<std::pair<std::string, T>> choices);
  /// Positional arguments (e.g. the model folder of `serve MODEL`).
  void on_positional(std::string name, setter set);

  /// Parses argv[1..]. Returns the first error as one line, or nullopt. `--help` sets
  /// help_requested().
  std::optional<std::string> parse(int argc, char** argv);
  bool help_requested() const { return help_requested_; }
  std::string help() const;

 private:
  struct flag {
    std::string name, value_name, help;
    setter set;
    bool takes_value = true;
    bool takes_values = false;  // add_values
  };
  const flag* find(std::string_view name) const;

  std::string usage_, summary_;
  std::vector<flag> flags_;
  std::string positional_name_;
  setter positional_;
  bool help_requested_ = false;
};

/// text in single quotes, as error messages show a value.
std::string quoted(std::string_view text);
/// Parses a whole decimal number or a float into T; an error names the flag.
std::string parse_number(std::string_view text, int64_t& out);
std::string parse_number(std::string_view text, double& out);

/// A default as people write it: 4 and 0.9, not 4.000000 and 0.900000.
std::string format_default(double value);

template <typename T>
void flag_parser::add_number(std::string name, std::string help, T& target) {
  const std::string shown = std::is_floating_point_v<T>
                                ? format_default(static_cast<double>(target))
                                : std::to_string(target);
  add(std::move(name), "N", std::move(help) + " (default " + shown + ")",
      [&target](std::string_view v) -> std::string {
        if constexpr (std::is_floating_point_v<T>) {
          double d = 0;
          if (auto e = parse_number(v, d); !e.empty()) return e;
          target = static_cast<T>(d);
        } else {
          int64_t i = 0;
          if (auto e = parse_number(v, i); !e.empty()) return e;
          target = static_cast<T>(i);
        }
        return {};
      });
}

template <typename T>
void flag_parser::add_choice(std::string name, std::string help, T& target,
                             std::vector<std::pair<std::string, T>> choices) {
  std::string value_name, listed;
  for (size_t i = 0; i < choices.size(); ++i) {
    value_name += (i ? "|" : "") + choices[i].first;
    listed += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i].first;
  }
  add(std::move(name), std::move(value_name), std::move(help),
      [&target, choices = std::move(choices), listed](std::string_view v) -> std::string {
        for (const auto& [choice, value] : choices)
          if (v == choice) {
            target = value;
            return {};
          }
        return "must be " + listed + " (got '" + std::string(v) + "')";
      });
}

}  // namespace actorllm
