// One file per stored response: reading back what is there, checked, and writing through.
#include "api/response_folder.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include "api/openai_protocol.hpp"

namespace actorllm::api {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view suffix = ".json";

bool is_status(const std::string& s) {
  for (const char* known :
       {"completed", "incomplete", "failed", "cancelled", "queued", "in_progress"})
    if (s == known) return true;
  return false;
}

/// The id a file name stands for, or empty when the name is not `<valid id>.json`.
std::string id_of(const fs::path& file) {
  const std::string name = file.filename().string();
  if (!name.ends_with(suffix)) return {};
  std::string id = name.substr(0, name.size() - suffix.size());
  return valid_response_id(id) ? id : std::string();
}

}  // namespace

std::optional<stored_response> parse_stored_response(std::string_view text,
                                                     std::string_view expected_id,
                                                     std::string& why) {
  // Twice a request's depth: a response repeats the request's tools inside its own object.
  if (json_depth(text) > 2 * max_json_depth) {
    why = "nested too deeply";
    return std::nullopt;
  }
  json file = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (file.is_discarded() || !file.is_object()) {
    why = "not a JSON object";
    return std::nullopt;
  }
  const json* response = given_field(file, "response");
  const json* items = given_field(file, "input_items");
  if (!response || !response->is_object() || !items || !items->is_array()) {
    why = "no response object and input_items list";
    return std::nullopt;
  }
  const json* id = given_field(*response, "id");
  const json* status = given_field(*response, "status");
  const json* output = given_field(*response, "output");
  if (!id || !id->is_string() || *id != expected_id ||
      response->value("object", "") != "response" || !status || !status->is_string() ||
      !is_status(status->get<std::string>()) || !output || !output->is_array()) {
    why = "not a stored Response object of this id";
    return std::nullopt;
  }
  for (const json& item : *items) {
    if (!item.is_object() || !given_field(item, "id") || !item["id"].is_string()) {
      why = "an input item is not an object with an id";
      return std::nullopt;
    }
  }
  stored_response entry{std::move(file["response"]), std::move(file["input_items"])};
  const std::string& s = entry.response["status"].get_ref<const std::string&>();
  if (s == "queued" || s == "in_progress") {
    entry.response["status"] = "failed";
    entry.response["error"] = {{"code", "server_error"},
                               {"message", "the server stopped before this response finished"}};
  }
  return entry;
}

response_folder::response_folder(fs::path folder) : folder_(std::move(folder)) {}

fs::path response_folder::file_of(std::string_view id) const {
  return folder_ / (std::string(id) + std::string(suffix));
}

std::optional<std::string> response_folder::prepare() const {
  std::error_code ec;
  fs::create_directories(folder_, ec);
  if (!fs::is_directory(folder_, ec))
    return "'" + folder_.string() + "' is not a folder" + (ec ? ": " + ec.message() : "");
  // Write and remove a probe, so that a read-only folder is refused now, not at the first save.
  const fs::path probe = folder_ / ".probe";
  { std::ofstream(probe) << ""; }
  if (!fs::exists(probe, ec)) return "cannot write in '" + folder_.string() + "'";
  fs::remove(probe, ec);
  return std::nullopt;
}

std::vector<stored_response> response_folder::load(int64_t max_files, int64_t max_file_bytes,
                                                   std::vector<std::string>& warnings) const {
  struct candidate {
    fs::file_time_type written;
    fs::path file;
    std::string id;
  };
  std::vector<candidate> found;
  std::error_code ec;
  for (fs::directory_iterator it(folder_, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& file = it->path();
    std::string id = id_of(file);
    if (id.empty()) continue;  // not ours: temporary files, the probe, anything else
    std::error_code entry_ec;
    // symlink_status: a link is not followed out of the folder.
    if (!fs::is_regular_file(fs::symlink_status(file, entry_ec))) {
      warnings.push_back("stored response " + file.string() + ": not a regular file; skipped");
      continue;
    }
    const auto written = fs::last_write_time(file, entry_ec);
    if (entry_ec) continue;
    found.push_back({written, file, std::move(id)});
  }
  if (ec) warnings.push_back("cannot list " + folder_.string() + ": " + ec.message());
  std::sort(found.begin(), found.end(), [](const candidate& a, const candidate& b) {
    return a.written != b.written ? a.written < b.written : a.id < b.id;
  });
  const std::size_t keep = static_cast<std::size_t>(std::max<int64_t>(0, max_files));
  if (found.size() > keep) {
    const auto dropped = static_cast<std::ptrdiff_t>(found.size() - keep);
    for (auto it = found.begin(); it != found.begin() + dropped; ++it) fs::remove(it->file, ec);
    found.erase(found.begin(), found.begin() + dropped);
  }
  std::vector<stored_response> entries;
  for (const candidate& c : found) {
    std::error_code size_ec;
    const auto size = fs::file_size(c.file, size_ec);
    if (size_ec || size > static_cast<uintmax_t>(std::max<int64_t>(0, max_file_bytes))) {
      warnings.push_back("stored response " + c.file.string() + ": larger than the store (" +
                         std::to_string(max_file_bytes) + " bytes); skipped");
      continue;
    }
    std::ifstream in(c.file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    std::string why;
    if (auto entry = parse_stored_response(text.str(), c.id, why))
      entries.push_back(std::move(*entry));
    else
      warnings.push_back("stored response " + c.file.string() + ": " + why + "; skipped");
  }
  return entries;
}

std::optional<std::string> response_folder::save(const stored_response& entry) const {
  const std::string& id = entry.id();
  const fs::path target = file_of(id);
  const fs::path temporary = folder_ / ("." + id + ".tmp");
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << json{{"response", entry.response}, {"input_items", entry.input_items}}.dump(
        -1, ' ', false, json::error_handler_t::replace);
    if (!out.flush()) return "cannot write " + temporary.string();
  }
  std::error_code ec;
  fs::rename(temporary, target, ec);
  if (ec) {
    fs::remove(temporary, ec);
    return "cannot write " + target.string() + ": " + ec.message();
  }
  return std::nullopt;
}

void response_folder::remove(std::string_view id) const {
  std::error_code ignored;
  fs::remove(file_of(id), ignored);
}

}  // namespace actorllm::api
