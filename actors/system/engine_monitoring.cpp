#include "actors/system/engine_monitoring.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace actorllm {

namespace {

void log_info(const std::string& text) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%m-%d %H:%M:%S", std::localtime(&now));
  std::fprintf(stderr, "INFO %s %s\n", stamp, text.c_str());
}

}  // namespace

engine_monitoring::engine_monitoring(std::string model_name, int32_t max_model_len,
                                     double log_stats_interval,
                                     std::shared_ptr<metrics_registry> registry)
    : model_name_(std::move(model_name)),
      max_model_len_(max_model_len),
      log_stats_interval_(log_stats_interval),
      registry_(registry ? std::move(registry) : std::make_shared<metrics_registry>()),
      http_(*registry_, model_name_),
      actors_(*registry_, model_name_),
      scaling_(*registry_, model_name_),
      routing_(*registry_, model_name_),
      health_(*registry_, model_name_) {}

scheduler_hooks engine_monitoring::hooks_for(int32_t replica, const cache_config_values& cache) {
  replica_metrics* m;
  {
    std::lock_guard lock(mutex_);
    // A replica that comes back (a worker joining in a lost one's place) keeps its series,
    // and they are no longer a retired replica's to drop.
    std::erase(retired_, replica);
    auto& slot = replicas_[replica];
    if (!slot)
      slot.reset(new replica_metrics{
          engine_metrics(*registry_, engine_labels{model_name_, replica, max_model_len_}),
          stats_logger(log_stats_interval_), cache_config_info(*registry_, model_name_, replica)});
    m = slot.get();
  }
  m->cache_info.set(cache);
  // The pools' gauges read their sizes from the moment the replica exists, not from when its
  // scheduler's thread first runs (the scheduler reports them again as it starts).
  scheduler_stats initial;
  initial.device = {static_cast<int32_t>(cache.num_gpu_blocks), 0,
                    static_cast<int32_t>(cache.num_gpu_blocks), 0};
  initial.cpu = {static_cast<int32_t>(cache.num_cpu_blocks), 0,
                 static_cast<int32_t>(cache.num_cpu_blocks), 0};
  m->metrics.on_stats(initial);
  const std::string scheduler_name = "scheduler-" + std::to_string(replica);
  const double interval = log_stats_interval_;
  scheduler_hooks hooks;
  hooks.on_added = [m](const std::string& id, int32_t n, bool constrained) {
    m->metrics.on_request_added(id, n, now_seconds());
    if (constrained) m->metrics.on_constrained_request();
  };
  hooks.on_masks = [m](double seconds) { m->metrics.on_masks(seconds); };
  hooks.on_images = [m](int32_t num_images, int64_t num_tokens) {
    m->metrics.on_images(num_images, num_tokens);
  };
  hooks.on_encoder = [m](int32_t num_images, double seconds) {
    m->metrics.on_encoder(num_images, seconds);
  };
  hooks.on_scheduled = [m](const step_plan& plan) { m->metrics.on_scheduled(plan, now_seconds()); };
  hooks.on_outputs = [m](const std::vector<request_output>& outs) {
    m->metrics.on_outputs(outs, now_seconds());
  };
  hooks.on_stats = [m](const scheduler_stats& stats) { m->metrics.on_stats(stats); };
  hooks.on_mailbox = [this, scheduler_name](size_t depth) {
    actors_.set_mailbox_depth(scheduler_name, depth);
  };
  hooks.on_step = [this, m, scheduler_name, interval, replica](
                      const scheduler_stats& stats, double seconds, size_t mailbox_depth) {
    m->metrics.on_step(stats, seconds);
    actors_.set_mailbox_depth(scheduler_name, mailbox_depth);
    if (interval <= 0) return;
    if (auto line = m->logger.on_snapshot(m->metrics.snapshot(now_seconds())))
      log_info("replica " + std::to_string(replica) + ": " + *line);
  };
  hooks.on_worker = [this, replica](int32_t rank, bool up) {
    max_ranks_seen_ = std::max(max_ranks_seen_.load(), rank + 1);
    const std::string worker =
        "replica" + std::to_string(replica) + "-worker" + std::to_string(rank);
    actors_.set_worker_up(worker, up);
    if (up)
      health_.worker_up(replica, rank);
    else
      health_.worker_down(replica, rank, worker + " was lost");
  };
  return hooks;
}

void engine_monitoring::replica_serving(int32_t replica, std::string label) {
  health_.set_serving(replica, std::move(label));
  std::lock_guard lock(mutex_);
  views_[replica].id = replica;
  views_[replica].state = "serving";
}

void engine_monitoring::replica_down(int32_t replica, const std::string& reason, bool retired) {
  if (retired)
    health_.set_retired(replica);
  else
    health_.set_down(replica, reason);
  replica_metrics* m = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (auto it = replicas_.find(replica); it != replicas_.end()) m = it->second.get();
    views_[replica].id = replica;
    views_[replica].state = "dead";
  }
  // The replica's scheduler, the one other writer of these metrics, has ended.
  if (m) m->metrics.on_replica_down();
  if (retired) forget_old_retired(replica);
}

void engine_monitoring::forget_old_retired(int32_t replica) {
  std::vector<int32_t> forgotten;
  {
    std::lock_guard lock(mutex_);
    retired_.push_back(replica);
    while (retired_.size() > max_retired_kept) {
      forgotten.push_back(retired_.front());
      retired_.pop_front();
    }
  }
  forget_replicas(forgotten);
}

void engine_monitoring::forget_replica(int32_t replica) {
  {
    std::lock_guard lock(mutex_);
    std::erase(retired_, replica);
  }
  forget_replicas({replica});
}

void engine_monitoring::forget_replicas(const std::vector<int32_t>& replicas) {
  {
    std::lock_guard lock(mutex_);
    for (int32_t old : replicas) {
      replicas_.erase(old);  // its series leave the registry with it
      views_.erase(old);
    }
  }
  for (int32_t old : replicas) {
    const std::string scheduler = "scheduler-" + std::to_string(old);
    const std::string cache = "cache_engine-" + std::to_string(old);
    const std::string workers = "replica" + std::to_string(old) + "-worker";
    actors_.forget_actors([&](std::string_view name) {
      return name == scheduler || name == cache || name.starts_with(workers);
    });
    for (int32_t rank = 0; rank < max_ranks_seen_; ++rank)
      actors_.forget_worker(workers + std::to_string(rank));
    health_.forget(old);
  }
}

void engine_monitoring::set_replica_states(const std::vector<replica_view>& replicas) {
  std::map<std::string, int32_t> counts;
  for (const auto& r : replicas) ++counts[r.state];
  scaling_.set_replicas(counts);
  std::lock_guard lock(mutex_);
  for (const auto& r : replicas) views_[r.id] = r;
}

std::string engine_monitoring::engine_view_json() {
  std::vector<replica_view_row> rows;
  {
    std::lock_guard lock(mutex_);
    // Every replica with metrics (its scheduler was built), and those the replica manager
    // saw starting before that, in index order.
    std::map<int32_t, replica_view_row> by_index;
    for (const auto& [index, m] : replicas_) by_index[index] = m->metrics.view();
    for (const auto& [index, v] : views_) {
      replica_view_row& row = by_index[index];
      row.state = v.state;
      row.device = v.device;
    }
    for (auto& [index, row] : by_index) {
      row.id = index;
      rows.push_back(std::move(row));
    }
  }
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return actorllm::engine_view_json(model_name_, now, rows, actors_.mailbox_depths(),
                                    routing_.view());
}

}  // namespace actorllm
