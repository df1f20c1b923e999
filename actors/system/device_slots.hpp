#pragma once
/// Which devices each local replica's workers run on: one gpu_worker per device. A replica of
/// `ranks` workers (its tensor-parallel ranks) takes that many distinct devices, the lowest
/// free ones, for as long as it lives; its respawned workers come back on the same devices.
/// On the CPU backend (no devices to count) every worker shares device 0 and nothing runs out.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace actorllm {

class device_slots {
 public:
  /// num_devices: the devices this process sees (CUDA_VISIBLE_DEVICES already applied), or 0
  /// for a backend whose workers share one host. ranks: workers per replica, >= 1.
  device_slots(int32_t num_devices, int32_t ranks);

  /// The devices of `replica`'s ranks (rank r on element r), taken until release(replica): the
  /// lowest free ones, or with `first`, devices first .. first + ranks - 1. The same devices
  /// again for a replica that already holds some. Nullopt when they are not free (or `first`
  /// names no such devices).
  std::optional<std::vector<int32_t>> acquire(int32_t replica,
                                              std::optional<int32_t> first = std::nullopt);
  /// Gives `replica`'s devices back (nothing for a replica that holds none).
  void release(int32_t replica);
  /// Whether a new replica could acquire devices now (as acquire would, nothing taken).
  bool placeable(std::optional<int32_t> first = std::nullopt) const;

  /// Replicas that can still be placed (unbounded on a shared host: INT32_MAX).
  int32_t replicas_free() const;
  /// "cpu", or the devices of `replica` as "cuda:0" / "cuda:2,3"; "" for one that holds none.
  std::string label(int32_t replica) const;

 private:
  /// The devices a new replica would take, or nullopt.
  std::optional<std::vector<int32_t>> pick(std::optional<int32_t> first) const;

  int32_t num_devices_;
  int32_t ranks_;
  std::vector<bool> taken_;                       // by device index
  std::map<int32_t, std::vector<int32_t>> held_;  // replica -> its devices
};

/// Why `replicas` replicas of `ranks` workers each cannot start on `num_devices` devices
/// (empty when they fit, or when num_devices is 0: a shared host). `visible` is the value of
/// CUDA_VISIBLE_DEVICES (null: unset), named in the message because it is the usual cause.
std::string device_fit_error(int32_t num_devices, int32_t replicas, int32_t ranks,
                             const char* visible);

}  // namespace actorllm
