// `actorllm tokenize`, `detokenize` and `render-chat`: the tokenizer and chat templates from
// the command line, JSON on stdin, for tests and for checking a model folder by hand.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "app/command.hpp"
#include "chat_template/chat_template.hpp"
#include "tokenizer/tokenizer.hpp"

namespace actorllm::app {
namespace {

struct tool_flags {
  std::string path;  // --tokenizer or --template
  bool add_special_tokens = false;
  bool skip_special_tokens = false;
};

// Parses the flags a subcommand accepts; prints one line and returns nullopt on a bad one.
std::optional<tool_flags> parse_tool_flags(int argc, char** argv, const char* path_flag,
                                           bool special_flag, const char* usage) {
  tool_flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s\n", usage);
      std::exit(0);
    } else if (a == path_flag && i + 1 < argc) {
      f.path = argv[++i];
    } else if (a.rfind(std::string(path_flag) + "=", 0) == 0) {
      f.path = a.substr(std::strlen(path_flag) + 1);
    } else if (special_flag && a == "--add-special-tokens") {
      f.add_special_tokens = true;
    } else if (special_flag && a == "--skip-special-tokens") {
      f.skip_special_tokens = true;
    } else {
      std::fprintf(stderr, "actorllm %s: unknown or incomplete flag '%s' (usage: %s)\n", argv[0],
                   a.c_str(), usage);
      return std::nullopt;
    }
  }
  if (f.path.empty()) {
    std::fprintf(stderr, "actorllm %s: %s is required (usage: %s)\n", argv[0], path_flag, usage);
    return std::nullopt;
  }
  return f;
}

std::optional<nlohmann::ordered_json> read_stdin_json(const char* command) {
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  try {
    return nlohmann::ordered_json::parse(input);
  } catch (const nlohmann::json::exception& e) {
    std::fprintf(stderr, "actorllm %s: stdin is not valid JSON: %s\n", command, e.what());
    return std::nullopt;
  }
}

int run_tokenize(int argc, char** argv) {
  const char* usage = "actorllm tokenize --tokenizer PATH [--add-special-tokens] < [\"text\", ...]";
  auto flags = parse_tool_flags(argc, argv, "--tokenizer", true, usage);
  if (!flags) return exit_usage;
  auto input = read_stdin_json("tokenize");
  if (!input) return 1;
  if (!input->is_array()) {
    std::fprintf(stderr, "actorllm tokenize: stdin must be a JSON array of strings\n");
    return 1;
  }
  auto tok = tokenizer::load(flags->path);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& text : *input) {
    if (!text.is_string()) {
      std::fprintf(stderr, "actorllm tokenize: every element must be a string\n");
      return 1;
    }
    out.push_back(tok.encode(text.get<std::string>(), flags->add_special_tokens));
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

int run_detokenize(int argc, char** argv) {
  const char* usage = "actorllm detokenize --tokenizer PATH [--skip-special-tokens] < [[ids], ...]";
  auto flags = parse_tool_flags(argc, argv, "--tokenizer", true, usage);
  if (!flags) return exit_usage;
  auto input = read_stdin_json("detokenize");
  if (!input) return 1;
  auto tok = tokenizer::load(flags->path);
  nlohmann::json out = nlohmann::json::array();
  try {
    for (const auto& ids : *input)
      out.push_back(tok.decode(ids.get<std::vector<int32_t>>(), flags->skip_special_tokens));
  } catch (const nlohmann::json::exception&) {
    std::fprintf(stderr, "actorllm detokenize: stdin must be a JSON array of arrays of ids\n");
    return 1;
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

int run_render_chat(int argc, char** argv) {
  const char* usage =
      "actorllm render-chat --template FILE.jinja|tokenizer_config.json "
      "< {\"messages\": [...], \"add_generation_prompt\": true, ...}";
  auto flags = parse_tool_flags(argc, argv, "--template", false, usage);
  if (!flags) return exit_usage;
  auto input = read_stdin_json("render-chat");
  if (!input) return 1;
  if (!input->is_object() || !input->contains("messages")) {
    std::fprintf(stderr, "actorllm render-chat: stdin must be an object with \"messages\"\n");
    return 1;
  }
  auto tmpl = chat_template::load(flags->path);
  auto result = tmpl.render(*input);
  if (!result.ok()) {
    std::fprintf(stderr, "actorllm render-chat: %s\n", result.error.c_str());
    return 1;
  }
  std::fwrite(result.text.data(), 1, result.text.size(), stdout);
  return 0;
}

command_registration tokenize_cmd("tokenize",
                                  {"encode JSON strings from stdin to token ids", run_tokenize});
command_registration detokenize_cmd("detokenize",
                                    {"decode JSON id arrays from stdin to text", run_detokenize});
command_registration render_chat_cmd("render-chat",
                                     {"render a chat template for JSON messages on stdin",
                                      run_render_chat});

}  // namespace
}  // namespace actorllm::app
