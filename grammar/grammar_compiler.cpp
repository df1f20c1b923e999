#include "grammar/grammar_compiler.hpp"

#include <stdexcept>

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

grammar_compiler::grammar_compiler(vocabulary_source make_vocabulary, size_t capacity)
    : make_vocabulary_(std::move(make_vocabulary)), capacity_(capacity == 0 ? 1 : capacity) {}

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
  if (cache_.size() > capacity_) {
    cache_.erase(ages_.back());
    ages_.pop_back();
  }
  return grammar;
}

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
