// The stored responses: an LRU list under one mutex, bounded by count and bytes, written
// through to a folder when one is attached.
#include "api/response_store.hpp"

#include <utility>
#include <vector>

#include "api/response_folder.hpp"

namespace actorllm::api {

bool valid_response_id(std::string_view id) {
  constexpr std::string_view prefix = "resp_";
  if (!id.starts_with(prefix) || id.size() == prefix.size() || id.size() > prefix.size() + 64)
    return false;
  for (char c : id.substr(prefix.size())) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-';
    if (!safe) return false;
  }
  return true;
}

int64_t stored_size(const stored_response& entry) {
  using nlohmann::json;
  return static_cast<int64_t>(
      entry.response.dump(-1, ' ', false, json::error_handler_t::replace).size() +
      entry.input_items.dump(-1, ' ', false, json::error_handler_t::replace).size());
}

response_store::response_store(response_store_limits limits, warning_sink warn)
    : limits_(limits), warn_(std::move(warn)) {}

response_store::~response_store() = default;

void response_store::warn(const std::string& text) const {
  if (warn_) warn_(text);
}

std::optional<std::string> response_store::attach_folder(const std::string& folder) {
  auto files = std::make_unique<response_folder>(folder);
  if (auto error = files->prepare()) return error;
  std::vector<std::string> warnings;
  std::vector<stored_response> entries =
      files->load(limits_.max_items, limits_.max_bytes, warnings);
  std::lock_guard lock(mutex_);
  folder_ = std::move(files);
  for (const auto& w : warnings) warn(w);
  for (auto& entry : entries) {
    const int64_t bytes = stored_size(entry);
    if (bytes > limits_.max_bytes) {
      folder_->remove(entry.id());
      continue;
    }
    insert_locked(std::move(entry), bytes, /*write_through=*/false);
  }
  return std::nullopt;
}

bool response_store::put(stored_response entry) {
  if (!entry.response.is_object() || !entry.response.contains("id") ||
      !entry.response["id"].is_string() || !valid_response_id(entry.id()))
    return false;
  const int64_t bytes = stored_size(entry);
  std::lock_guard lock(mutex_);
  if (auto it = by_id_.find(entry.id()); it != by_id_.end()) erase_locked(it->second, false);
  if (limits_.max_items <= 0 || bytes > limits_.max_bytes) {
    if (folder_) folder_->remove(entry.id());  // what was there is stale now
    return false;
  }
  insert_locked(std::move(entry), bytes, /*write_through=*/true);
  return true;
}

void response_store::insert_locked(stored_response entry, int64_t bytes, bool write_through) {
  while (!lru_.empty() && (static_cast<int64_t>(lru_.size()) + 1 > limits_.max_items ||
                           bytes_ + bytes > limits_.max_bytes))
    erase_locked(std::prev(lru_.end()), /*remove_file=*/true);
  if (write_through && folder_)
    if (auto error = folder_->save(entry)) warn("stored response not written: " + *error);
  const std::string id = entry.id();
  lru_.push_front({std::move(entry), bytes});
  by_id_[id] = lru_.begin();
  bytes_ += bytes;
}

void response_store::erase_locked(std::list<slot>::iterator it, bool remove_file) {
  const std::string id = it->entry.id();
  if (remove_file && folder_) folder_->remove(id);
  bytes_ -= it->bytes;
  by_id_.erase(id);
  lru_.erase(it);
}

std::optional<stored_response> response_store::get(std::string_view id) {
  if (!valid_response_id(id)) return std::nullopt;
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(std::string(id));
  if (it == by_id_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->entry;
}

bool response_store::erase(std::string_view id) {
  if (!valid_response_id(id)) return false;
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(std::string(id));
  if (it == by_id_.end()) return false;
  erase_locked(it->second, /*remove_file=*/true);
  return true;
}

std::size_t response_store::size() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

int64_t response_store::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace actorllm::api
