#pragma once
/// The Responses API's stored responses, by id: each Response object (what
/// GET /v1/responses/{id} answers) with the input items that led to it (the whole
/// conversation: a previous response's input items and output, then the new input). Bounded
/// by a number of responses and a number of bytes (the JSON text of both); the least recently
/// used go first. Optionally backed by a folder (response_folder.hpp), so that what is stored
/// outlives a restart: every change is written through, and what the folder held is read
/// back when it is attached.
///
/// Thread-safe: every method takes one mutex (the HTTP sessions of several I/O threads and
/// the engine threads that finish background calls share one store). Nothing here knows
/// sockets or actors.
///
///   response_store store({.max_items = 1000, .max_bytes = 256 << 20});
///   store.put({response, input_items});
///   if (auto kept = store.get("resp_abc")) answer(kept->response);
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace actorllm::api {

class response_folder;

struct stored_response {
  nlohmann::json response;     ///< the Response object; its "id" (a valid_response_id) is the key
  nlohmann::json input_items;  ///< a list of items, each with an "id"

  const std::string& id() const { return response["id"].get_ref<const std::string&>(); }
};

struct response_store_limits {
  int64_t max_items = 1000;                ///< 0: nothing is kept
  int64_t max_bytes = int64_t{256} << 20;  ///< of the JSON text of the responses and their items
};

/// Whether `id` may name a stored response: "resp_" and then 1 to 64 letters, digits, '_' or
/// '-'. Every id is checked before it is looked up or names a file.
bool valid_response_id(std::string_view id);

/// The bytes an entry counts against max_bytes: the JSON text of its response and items.
int64_t stored_size(const stored_response& entry);

class response_store {
 public:
  /// Where the store reports what it could not do (a file not written, one not read back);
  /// the server logs it. Called with the store's lock held: it must not call the store.
  using warning_sink = std::function<void(const std::string&)>;

  explicit response_store(response_store_limits limits, warning_sink warn = {});
  ~response_store();
  response_store(const response_store&) = delete;
  response_store& operator=(const response_store&) = delete;

  /// Backs the store by `folder` (made when missing): the responses found there are loaded,
  /// oldest first, within the bounds (a file that cannot be read back is skipped with a
  /// warning), and every later change is written through. Returns why the folder cannot
  /// be used, else nullopt. Call once, before the store is shared.
  std::optional<std::string> attach_folder(const std::string& folder);

  /// Keeps `entry` (replacing one of the same id) as the most recently used, evicting the
  /// least recently used until both bounds hold. Returns false when it is not kept: larger
  /// than max_bytes alone, max_items 0, or an invalid id.
  bool put(stored_response entry);
  /// A copy of the entry, which becomes the most recently used; nullopt when unknown.
  std::optional<stored_response> get(std::string_view id);
  /// Forgets the entry (and its file). Returns whether it was there.
  bool erase(std::string_view id);

  std::size_t size() const;
  int64_t bytes() const;

 private:
  struct slot {
    stored_response entry;
    int64_t bytes = 0;
  };
  void insert_locked(stored_response entry, int64_t bytes, bool write_through);
  void erase_locked(std::list<slot>::iterator it, bool remove_file);
  void warn(const std::string& text) const;

  response_store_limits limits_;
  warning_sink warn_;
  std::unique_ptr<response_folder> folder_;
  mutable std::mutex mutex_;
  std::list<slot> lru_;  ///< most recently used first
  std::unordered_map<std::string, std::list<slot>::iterator> by_id_;
  int64_t bytes_ = 0;
};

}  // namespace actorllm::api
