// One file per stored response: reading back what is there, checked, and writing through.
#include "api/response_folder.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
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

/// Calls `io(done)` (one read or write of what is left after `done` bytes) until `size`
/// bytes have moved or a call moves nothing; returns the bytes moved.
template <class Io>
std::size_t move_all(std::size_t size, Io io) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = io(done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

/// Writes `text` to a new file at `path`, readable by this user alone. The file must not
/// exist (a leftover one is removed first), and a link there is never followed: a folder
/// someone else can write cannot make us write elsewhere. Returns why not, else nullopt.
std::optional<std::string> write_new_file(const fs::path& path, std::string_view text) {
  ::unlink(path.c_str());  // a temporary file a crash left behind (or a planted link)
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot create " + path.string() + ": " + std::strerror(errno);
  const std::size_t done = move_all(
      text.size(), [&](std::size_t at) { return ::write(fd, text.data() + at, text.size() - at); });
  const bool closed = ::close(fd) == 0;
  if (done == text.size() && closed) return std::nullopt;
  ::unlink(path.c_str());
  return "cannot write " + path.string();
}

/// The text of the regular file `path` (a link is not followed) when it holds at most
/// `max_bytes`; nullopt, with `why`, otherwise.
std::optional<std::string> read_bounded(const fs::path& path, int64_t max_bytes, std::string& why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    why = errno == ELOOP ? "a link" : std::string("cannot open: ") + std::strerror(errno);
    return std::nullopt;
  }
  struct stat info {};
  std::string text;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    why = "not a regular file";
  } else if (info.st_size > max_bytes) {
    why = "larger than the store (" + std::to_string(max_bytes) + " bytes)";
  } else {
    text.resize(static_cast<std::size_t>(info.st_size));
    text.resize(move_all(text.size(), [&](std::size_t at) {
      return ::read(fd, text.data() + at, text.size() - at);
    }));  // a file that shrank meanwhile is read as it is now (and checked)
  }
  ::close(fd);
  if (!why.empty()) return std::nullopt;
  return text;
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
  const fs::path probe = folder_ / ".probe.tmp";
  if (auto error = write_new_file(probe, "")) return error;
  ::unlink(probe.c_str());
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
  if (max_files <= 0) return {};  // nothing is kept: the folder is left as it is
  std::error_code ec;
  for (fs::directory_iterator it(folder_, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& file = it->path();
    std::string id = id_of(file);
    if (id.empty()) continue;  // not ours: temporary files, the probe, anything else
    std::error_code entry_ec;
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
    std::string why;
    std::optional<stored_response> entry;
    if (auto text = read_bounded(c.file, max_file_bytes, why))
      entry = parse_stored_response(*text, c.id, why);
    if (entry)
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
  const std::string text =
      json{{"response", entry.response}, {"input_items", entry.input_items}}.dump(
          -1, ' ', false, json::error_handler_t::replace);
  if (auto error = write_new_file(temporary, text)) return error;
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
