#include "grammar/grammar_compiler.hpp"

#include <cctype>
#include <stdexcept>
#include <string_view>

#include "grammar/grammar.hpp"
#include "grammar/grammar_error.hpp"

namespace actorllm::grammar {

std::string grammar_key(const structured_output& spec) {
  // Length-prefixed parts: no two specs share a key whatever bytes their texts hold.
  std::string key;
  auto part = [&](std::string_view s) {
    key += std::to_string(s.size());
    key += ':';
    key += s;
  };
  key += static_cast<char>('0' + static_cast<int>(spec.kind));
  key += spec.compact_whitespace ? 'c' : 'w';
  part(spec.source);
  for (const auto& c : spec.choices) part(c);
  return key;
}

grammar_compiler::grammar_compiler(vocabulary_source make_vocabulary, size_t capacity,
                                   size_t max_bytes)
    : make_vocabulary_(std::move(make_vocabulary)),
      capacity_(capacity == 0 ? 1 : capacity),
      max_bytes_(max_bytes) {}

namespace {

/// What a compiled grammar holds: its token caches, and about 64 bytes an automaton state.
size_t bytes_of(const compiled_grammar& g) {
  const compiled_grammar::stats s = g.statistics();
  return s.cache_bytes + s.num_states * 64;
}

}  // namespace

void grammar_compiler::evict() {
  size_t bytes = 0;
  for (const auto& [key, e] : cache_) bytes += bytes_of(*e.grammar);
  while (cache_.size() > 1 && (cache_.size() > capacity_ || bytes > max_bytes_)) {
    const auto oldest = cache_.find(ages_.back());
    bytes -= bytes_of(*oldest->second.grammar);
    cache_.erase(oldest);
    ages_.pop_back();
  }
}

size_t grammar_compiler::num_cached() const {
  std::lock_guard lock(mutex_);
  return cache_.size();
}

size_t grammar_compiler::cached_bytes() const {
  std::lock_guard lock(mutex_);
  size_t bytes = 0;
  for (const auto& [key, e] : cache_) bytes += bytes_of(*e.grammar);
  return bytes;
}

bool grammar_compiler::contains(const structured_output& spec) const {
  const std::string key = grammar_key(spec);
  std::lock_guard lock(mutex_);
  return cache_.count(key) != 0;
}

std::shared_ptr<const vocabulary> grammar_compiler::vocab() {
  std::call_once(vocabulary_once_, [&] { vocabulary_ = make_vocabulary_(); });
  return vocabulary_;
}

std::shared_ptr<const compiled_grammar> grammar_compiler::compile(const structured_output& spec) {
  if (!spec.active()) throw std::logic_error("grammar_compiler::compile of no constraint");
  const std::string key = grammar_key(spec);
  {
    std::lock_guard lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      ages_.splice(ages_.begin(), ages_, it->second.age);
      ++num_hits_;
      return it->second.grammar;
    }
  }
  auto grammar = build(spec);
  std::lock_guard lock(mutex_);
  ++num_compiled_;
  if (auto it = cache_.find(key); it != cache_.end()) return it->second.grammar;
  ages_.push_front(key);
  cache_.emplace(key, entry{grammar, ages_.begin()});
  evict();
  return grammar;
}

namespace {

/// vLLM also takes Lark grammars (converting simple ones); this engine reads GBNF only. A
/// grammar with no "::=" whose lines read "name: ..." or "%import ..." is Lark: say so,
/// rather than leave the GBNF parser's complaint about the first colon.
bool looks_like_lark(std::string_view text) {
  if (text.find("::=") != std::string_view::npos) return false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) continue;
    line.remove_prefix(first);
    if (line.starts_with("%import") || line.starts_with("%ignore")) return true;
    if (line.starts_with("?") || line.starts_with("!")) line.remove_prefix(1);
    size_t name = 0;
    while (name < line.size() && (std::isalnum(static_cast<unsigned char>(line[name])) ||
                                  line[name] == '_' || line[name] == '.'))
      ++name;
    if (name > 0 && name < line.size() && line[name] == ':') return true;
  }
  return false;
}

}  // namespace

std::shared_ptr<const compiled_grammar> grammar_compiler::build(const structured_output& spec) {
  auto v = vocab();
  const json_schema_options options{.strict = spec.compact_whitespace};
  switch (spec.kind) {
    case output_constraint::json_schema:
      return compile_json_schema(std::string_view(spec.source), options, std::move(v));
    case output_constraint::json_object:
      return compile_json_object(options, std::move(v));
    case output_constraint::regex:
      return compile_regex(spec.source, std::move(v));
    case output_constraint::choice:
      return compile_choice(spec.choices, std::move(v));
    case output_constraint::grammar:
      if (looks_like_lark(spec.source))
        throw grammar_error(
            "grammar: this looks like a Lark grammar (\"rule: ...\"); only GBNF is read here "
            "(\"root ::= ...\", llama.cpp's dialect)");
      return compile_gbnf(spec.source, std::move(v));
    case output_constraint::none:
      break;
  }
  throw std::logic_error("grammar_compiler: unknown constraint");
}

size_t grammar_compiler::num_compiled() const {
  std::lock_guard lock(mutex_);
  return num_compiled_;
}

size_t grammar_compiler::num_cache_hits() const {
  std::lock_guard lock(mutex_);
  return num_hits_;
}

}  // namespace actorllm::grammar
