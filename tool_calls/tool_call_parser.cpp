#include "tool_calls/tool_call_parser.hpp"

#include <algorithm>
#include <utility>

namespace actorllm::tool_calls {

tool_call_parser::tool_call_parser(tool_parser_options options)
    : options_(std::move(options)), ids_(options_.id_seed) {}

std::vector<stream_event> tool_call_parser::feed(std::string_view delta) {
  std::size_t i = 0;
  for (; i < delta.size() && !gave_up_; ++i) consume(delta[i]);
  // Once given up, the rest is content; no per-byte work.
  if (i < delta.size()) emit_content(delta.substr(i));
  return take_events();
}

std::vector<stream_event> tool_call_parser::finish() {
  if (!gave_up_) at_end();
  return take_events();
}

void tool_call_parser::emit_content(std::string_view text) {
  if (text.empty()) return;
  if (!events_.empty() && events_.back().what == stream_event::kind::content) {
    events_.back().text.append(text);
    return;
  }
  stream_event e;
  e.text = std::string(text);
  events_.push_back(std::move(e));
}

bool tool_call_parser::hold(char c) {
  region_ += c;
  if (region_.size() <= options_.limits.max_pending_bytes) return true;
  give_up(region_);
  return false;
}

tool_call_parser::json_call_step tool_call_parser::read_json_call_byte(json_call_scanner& scanner,
                                                                       bool& committed,
                                                                       std::string& early_arguments,
                                                                       char c) {
  if (!committed && !hold(c)) return json_call_step::failed;
  const json_call_scanner::byte_result r = scanner.feed(c);
  if (r.state == json_call_scanner::status::error) {
    give_up(committed ? std::string_view(&c, 1) : std::string_view(region_));
    return json_call_step::failed;
  }
  if (r.in_arguments) {
    if (committed) {
      emit_arguments(std::string_view(&c, 1));
    } else {
      early_arguments += c;
    }
  }
  if (!committed && scanner.name() && scanner.arguments_started()) {
    if (!start_call(*scanner.name())) {
      give_up(region_);
      return json_call_step::failed;
    }
    emit_arguments(early_arguments);
    committed = true;
    region_.clear();
  }
  if (r.state != json_call_scanner::status::done) return json_call_step::more;
  // An object that ended without both a name and arguments is not a call.
  if (!committed) {
    give_up(region_);
    return json_call_step::failed;
  }
  return json_call_step::done;
}

bool tool_call_parser::start_call(std::string call_name) {
  if (options_.reject_unknown_names && !name_is_known(call_name)) return false;
  // Calls past max_calls are read as usual but not sent (parallel_tool_calls false).
  dropping_call_ = num_calls_ >= options_.max_calls;
  if (dropping_call_) return true;
  stream_event e;
  e.what = stream_event::kind::call_start;
  e.call_index = num_calls_;
  e.id = next_call_id();
  e.name = std::move(call_name);
  events_.push_back(std::move(e));
  ++num_calls_;
  return true;
}

void tool_call_parser::emit_arguments(std::string_view text) {
  if (text.empty() || dropping_call_) return;
  if (!events_.empty() && events_.back().what == stream_event::kind::call_arguments) {
    events_.back().text.append(text);
    return;
  }
  stream_event e;
  e.what = stream_event::kind::call_arguments;
  e.call_index = num_calls_ - 1;
  e.text = std::string(text);
  events_.push_back(std::move(e));
}

void tool_call_parser::give_up(std::string_view held) {
  emit_content(held);
  gave_up_ = true;
}

bool tool_call_parser::name_is_known(std::string_view call_name) const {
  return std::find(options_.tool_names.begin(), options_.tool_names.end(), call_name) !=
         options_.tool_names.end();
}

std::vector<stream_event> tool_call_parser::take_events() {
  return std::exchange(events_, {});
}

void apply_events(parsed_output& into, const std::vector<stream_event>& events) {
  for (const stream_event& e : events) {
    switch (e.what) {
      case stream_event::kind::content:
        into.content += e.text;
        break;
      case stream_event::kind::call_start:
        into.calls.resize(std::max(into.calls.size(), e.call_index + 1));
        into.calls[e.call_index].id = e.id;
        into.calls[e.call_index].name = e.name;
        break;
      case stream_event::kind::call_arguments:
        into.calls.resize(std::max(into.calls.size(), e.call_index + 1));
        into.calls[e.call_index].arguments += e.text;
        break;
    }
  }
}

parsed_output parse_whole(tool_call_parser& parser, std::string_view text) {
  parsed_output result;
  apply_events(result, parser.feed(text));
  apply_events(result, parser.finish());
  return result;
}

}  // namespace actorllm::tool_calls
