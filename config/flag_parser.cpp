#include "config/flag_parser.hpp"

#include <charconv>
#include <cstdio>
#include <sstream>

namespace actorllm {

flag_parser::flag_parser(std::string usage, std::string summary)
    : usage_(std::move(usage)), summary_(std::move(summary)) {}

void flag_parser::add(std::string name, std::string value_name, std::string help, setter set) {
  flags_.push_back({std::move(name), std::move(value_name), std::move(help), std::move(set), true});
}

void flag_parser::add_flag(std::string name, std::string help, std::function<void()> on_set) {
  flags_.push_back({std::move(name), "", std::move(help),
                    [on_set = std::move(on_set)](std::string_view) {
                      on_set();
                      return std::string();
                    },
                    false});
}

void flag_parser::add_switch(std::string name, std::string help, setter set) {
  flags_.push_back({std::move(name), "", std::move(help), std::move(set), false});
}

void flag_parser::add_string(std::string name, std::string help, std::string& target) {
  const std::string shown = target.empty() ? help : help + " (default " + target + ")";
  add(std::move(name), "TEXT", shown, [&target](std::string_view v) {
    target = std::string(v);
    return std::string();
  });
}

void flag_parser::add_values(std::string name, std::string value_name, std::string help,
                             setter set) {
  add(std::move(name), value_name + " [" + value_name + " ...]", std::move(help), std::move(set));
  flags_.back().takes_values = true;
}

void flag_parser::add_strings(std::string name, std::string help,
                              std::vector<std::string>& target) {
  add(std::move(name), "A,B,...", std::move(help), [&target](std::string_view v) {
    target.clear();
    std::string item;
    std::istringstream in{std::string(v)};
    while (std::getline(in, item, ','))
      if (!item.empty()) target.push_back(item);
    return std::string();
  });
}

void flag_parser::add_bool(std::string name, std::string help, bool& target) {
  const std::string negated = "--no-" + name.substr(2);
  add_flag(name, help + (target ? " (default on)" : " (default off)"),
           [&target] { target = true; });
  add_flag(negated, "turn " + name + " off", [&target] { target = false; });
}

void flag_parser::on_positional(std::string name, setter set) {
  positional_name_ = std::move(name);
  positional_ = std::move(set);
}

const flag_parser::flag* flag_parser::find(std::string_view name) const {
  for (const auto& f : flags_)
    if (f.name == name) return &f;
  return nullptr;
}

std::optional<std::string> flag_parser::parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_requested_ = true;
      return std::nullopt;
    }
    if (arg.size() < 2 || arg.substr(0, 2) != "--") {
      if (!positional_) return "unexpected argument '" + std::string(arg) + "'";
      if (auto e = positional_(arg); !e.empty()) return positional_name_ + ": " + e;
      continue;
    }
    std::string_view name = arg, value;
    bool inline_value = false;
    if (const auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    const flag* f = find(name);
    if (!f) return "unknown flag " + std::string(name) + " (see --help)";
    if (f->takes_value && !inline_value) {
      if (i + 1 >= argc) return std::string(name) + ": a value is required";
      value = argv[++i];
    }
    if (auto e = f->set(value); !e.empty()) return std::string(name) + ": " + e;
    while (f->takes_values && i + 1 < argc && std::string_view(argv[i + 1]).substr(0, 2) != "--")
      if (auto e = f->set(argv[++i]); !e.empty()) return std::string(name) + ": " + e;
  }
  return std::nullopt;
}

std::string flag_parser::help() const {
  std::ostringstream out;
  out << "usage: " << usage_ << "\n\n" << summary_ << "\n\noptions:\n";
  for (const auto& f : flags_) {
    if (f.name.rfind("--no-", 0) == 0) continue;  // documented with its positive form
    std::string left = "  " + f.name + (f.value_name.empty() ? "" : " " + f.value_name);
    out << left << std::string(left.size() < 34 ? 34 - left.size() : 1, ' ') << f.help << "\n";
  }
  return out.str();
}

std::string quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  out += text;
  out += '\'';
  return out;
}

std::string parse_number(std::string_view text, int64_t& out) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc() || ptr != text.data() + text.size())
    return quoted(text) + " is not a whole number";
  return {};
}

std::string parse_number(std::string_view text, double& out) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc() || ptr != text.data() + text.size())
    return quoted(text) + " is not a number";
  return {};
}

std::string format_default(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

}  // namespace actorllm
