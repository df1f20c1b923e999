#pragma once
/// The files behind a response_store: one file per stored response, `<folder>/<id>.json`,
/// holding {"response": {...}, "input_items": [...]}. What is read back is bounded and
/// checked as a request body is (the files may have been altered by anyone who can write
/// the folder): names that are not `<valid id>.json`, links, files over the size bound, text
/// nested too deeply, JSON of another shape, and an id that is not the file's name are
/// skipped with a warning, never trusted. Writes go to a new temporary file first (readable by
/// the server's user alone; a link in its place is never followed) and are renamed into
/// place, so that a crash leaves the old file or the new one, never half of one. Files are
/// not synced to disk on each write.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/response_store.hpp"

namespace actorllm::api {

class response_folder {
 public:
  explicit response_folder(std::filesystem::path folder);

  /// Makes the folder when missing. Returns why it cannot be used, else nullopt.
  std::optional<std::string> prepare() const;

  /// The responses of the folder's files, oldest (by the time each was written) first; at
  /// most `max_files` (the newest: the older files are removed, as the store would have
  /// evicted them; none, and nothing removed, when `max_files` is 0), each file at most
  /// `max_file_bytes`. What cannot be read back is skipped and named in `warnings`.
  std::vector<stored_response> load(int64_t max_files, int64_t max_file_bytes,
                                    std::vector<std::string>& warnings) const;

  /// Writes the entry's file. Returns why it could not, else nullopt.
  std::optional<std::string> save(const stored_response& entry) const;
  /// Removes the file of `id` (a valid id), if there is one.
  void remove(std::string_view id) const;

  const std::filesystem::path& path() const { return folder_; }

 private:
  std::filesystem::path file_of(std::string_view id) const;

  std::filesystem::path folder_;
};

/// The entry a file's text holds, checked: a JSON object of at most twice a request's depth
/// with a Response object whose "id" is `expected_id` and a list of item objects. A response
/// that was still running when it was written (queued, in_progress) comes back failed: the
/// server that ran it is gone. Returns nullopt, with `why`, otherwise.
std::optional<stored_response> parse_stored_response(std::string_view text,
                                                     std::string_view expected_id,
                                                     std::string& why);

}  // namespace actorllm::api
