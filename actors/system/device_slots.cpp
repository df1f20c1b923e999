#include "actors/system/device_slots.hpp"

#include <algorithm>
#include <climits>
#include <stdexcept>

namespace actorllm {

device_slots::device_slots(int32_t num_devices, int32_t ranks)
    : num_devices_(std::max(num_devices, 0)),
      ranks_(ranks),
      taken_(static_cast<size_t>(std::max(num_devices, 0)), false) {
  if (ranks < 1) throw std::invalid_argument("device_slots: a replica has at least one worker");
}

std::optional<std::vector<int32_t>> device_slots::pick(std::optional<int32_t> first) const {
  std::vector<int32_t> devices;
  if (num_devices_ == 0) {
    if (first && *first != 0) return std::nullopt;
    devices.assign(static_cast<size_t>(ranks_), 0);
    return devices;
  }
  const bool named = first.has_value();
  const int32_t from = named ? *first : 0;
  if (from < 0 || from >= num_devices_) return std::nullopt;
  for (int32_t d = from; d < num_devices_ && static_cast<int32_t>(devices.size()) < ranks_; ++d) {
    if (!taken_[static_cast<size_t>(d)])
      devices.push_back(d);
    else if (named)
      return std::nullopt;  // the named devices must all be free
  }
  if (static_cast<int32_t>(devices.size()) < ranks_) return std::nullopt;
  return devices;
}

std::optional<std::vector<int32_t>> device_slots::acquire(int32_t replica,
                                                          std::optional<int32_t> first) {
  if (auto it = held_.find(replica); it != held_.end()) return it->second;
  auto devices = pick(first);
  if (!devices) return std::nullopt;
  if (num_devices_ > 0)
    for (int32_t d : *devices) taken_[static_cast<size_t>(d)] = true;
  held_.emplace(replica, *devices);
  return devices;
}

bool device_slots::placeable(std::optional<int32_t> first) const {
  return pick(first).has_value();
}

void device_slots::release(int32_t replica) {
  auto it = held_.find(replica);
  if (it == held_.end()) return;
  if (num_devices_ > 0)
    for (int32_t d : it->second) taken_[static_cast<size_t>(d)] = false;
  held_.erase(it);
}

int32_t device_slots::replicas_free() const {
  if (num_devices_ == 0) return INT32_MAX;
  const auto free = std::count(taken_.begin(), taken_.end(), false);
  return static_cast<int32_t>(free) / ranks_;
}

std::string device_slots::label(int32_t replica) const {
  if (num_devices_ == 0) return "cpu";
  auto it = held_.find(replica);
  if (it == held_.end()) return "";
  std::string out = "cuda:";
  for (size_t i = 0; i < it->second.size(); ++i)
    out += (i ? "," : "") + std::to_string(it->second[i]);
  return out;
}

std::string device_fit_error(int32_t num_devices, int32_t replicas, int32_t ranks,
                             const char* visible) {
  if (num_devices <= 0) return {};
  const int64_t need = int64_t(replicas) * ranks;
  if (need <= num_devices) return {};
  std::string why = std::to_string(replicas) + " replica(s) x " + std::to_string(ranks) +
                    " tensor-parallel rank(s) need " + std::to_string(need) +
                    " CUDA devices, one worker per device, and " + std::to_string(num_devices) +
                    " visible";
  why += visible ? " (CUDA_VISIBLE_DEVICES=" + std::string(visible) + ")"
                 : " (CUDA_VISIBLE_DEVICES is unset)";
  return why;
}

}  // namespace actorllm
