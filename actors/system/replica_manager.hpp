#pragma once
/// The operator's and the autoscaler's hands on an engine_system: implements admin_port (the
/// /admin API), and with --autoscale samples the replicas' load and follows the autoscaler's
/// decisions. Every change runs on one thread of its own, in order, so that the network
/// threads never wait for a replica to start and two changes never interleave.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actors/system/autoscaler.hpp"
#include "actors/system/engine_system.hpp"
#include "common/admin_port.hpp"

namespace actorllm {

class replica_manager : public admin_port {
 public:
  /// `engine` outlives the manager. With config.autoscale enabled, the load is sampled every
  /// autoscale.interval_s and replicas are added and drained between MIN and MAX. A replica
  /// seen dead (stopped, or lost and not replaced) for `dead_grace_s` leaves the listings.
  replica_manager(engine_system& engine, const engine_config& config, double dead_grace_s = 60.0);
  ~replica_manager() override;
  replica_manager(const replica_manager&) = delete;
  replica_manager& operator=(const replica_manager&) = delete;

  void replicas(std::function<void(std::vector<replica_view>)> done) override;
  void add_replicas(int32_t count, std::string device,
                    std::function<void(admin_outcome)> done) override;
  void drain_replica(int32_t id, std::function<void(admin_outcome)> done) override;
  void stop_replica(int32_t id, std::function<void(admin_outcome)> done) override;

  /// The replicas now (blocking: asks every scheduler for its stats).
  std::vector<replica_view> snapshot();
  /// Why `count` more local replicas would not fit: too few free devices (one worker per
  /// device), or too little memory for their KV pools; empty when they would.
  std::string capacity_refusal(int32_t count);

  static constexpr int32_t max_replicas_per_call = 16;

 private:
  void post(std::function<void()> task);
  /// drain_replica (at_once false) and stop_replica (true).
  void take_down(int32_t id, bool at_once, std::function<void(admin_outcome)> done);
  void run();
  /// Refreshes the replica gauges and, with --autoscale, applies the policy.
  void sample();
  void autoscale_step(const std::vector<replica_view>& now);
  /// Drops from `now`, and from the engine's listings, the replicas dead past the grace time.
  void forget_long_dead(std::vector<replica_view>& now);

  engine_system& engine_;
  std::chrono::duration<double> dead_grace_;
  std::map<int32_t, std::chrono::steady_clock::time_point> dead_since_;  // as sampled
  autoscale_config autoscale_;
  autoscaler policy_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace actorllm
