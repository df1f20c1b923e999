// One worker per device: each local replica's workers are placed on devices of their own, a
// respawned worker returns to its device, a stopped replica's devices go to the next one, and
// a replica that finds no free device is refused before anything starts. The provider here
// counts devices as the CUDA one does and runs each worker on the CPU backend, recording
// where it was placed.
#include <gtest/gtest.h>

#include <future>
#include <mutex>

#include "actors/gpu_worker/cpu_backend.hpp"
#include "actors/system/engine_system.hpp"
#include "actors/system/replica_manager.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

using testing::eventually;

/// `devices` devices of kind "cuda", whose workers compute on the CPU backend.
class counted_devices_provider : public backend_provider {
 public:
  explicit counted_devices_provider(int32_t devices) : devices_(devices) {}
  std::string device() const override { return "cuda"; }
  int32_t num_devices() const override { return devices_; }
  kv_budget plan_kv(const llama_model& model, const engine_config& config,
                    int32_t max_model_len) const override {
    return cpu_.plan_kv(model, config, max_model_len);
  }
  void prepare(const llama_model& model) const override { cpu_.prepare(model); }
  std::unique_ptr<forward_backend> make_backend(std::shared_ptr<const llama_model> model,
                                                const model_runner_config& config) const override {
    {
      std::lock_guard lock(mutex_);
      placed_.push_back(config.device_index);
    }
    return cpu_.make_backend(std::move(model), config);
  }
  /// The device of every worker built so far, in order.
  std::vector<int32_t> placed() const {
    std::lock_guard lock(mutex_);
    return placed_;
  }

 private:
  cpu_backend_provider cpu_;
  int32_t devices_;
  mutable std::mutex mutex_;
  mutable std::vector<int32_t> placed_;
};

std::string device_of(engine_system& engine, int32_t replica) {
  for (const auto& [index, shape] : engine.replica_shapes())
    if (index == replica) return shape.device;
  return "";
}

std::string replica_state(replica_manager& admin, int32_t replica) {
  for (const auto& r : admin.snapshot())
    if (r.id == replica) return r.state;
  return "unknown";
}

admin_outcome add(replica_manager& admin, int32_t count, const std::string& device) {
  std::promise<admin_outcome> p;
  admin.add_replicas(count, device, [&](admin_outcome o) { p.set_value(std::move(o)); });
  return p.get_future().get();
}

TEST(device_placement, replicas_take_devices_of_their_own_and_give_them_back) {
  auto config = testing::stories_config(64, 8);
  config.parallel.replicas = 2;
  auto devices = std::make_shared<counted_devices_provider>(3);
  engine_system engine(config, devices);
  replica_manager admin(engine, config);
  EXPECT_EQ(devices->placed(), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(device_of(engine, 0), "cuda:0");
  EXPECT_EQ(device_of(engine, 1), "cuda:1");
  EXPECT_EQ(engine.replicas_placeable(), 1);

  // Two more need two devices; one is free. A named device must exist and be free.
  const auto too_many = add(admin, 2, "cuda");
  EXPECT_EQ(too_many.status, 507);
  EXPECT_NE(too_many.error.find("1 more replica(s) can be placed"), std::string::npos)
      << too_many.error;
  EXPECT_EQ(add(admin, 1, "cuda:7").status, 400);
  EXPECT_EQ(add(admin, 2, "cuda:2").status, 400) << "a named device places one replica";
  const auto taken = add(admin, 1, "cuda:1");
  EXPECT_EQ(taken.status, 409) << taken.error;
  EXPECT_EQ(add(admin, 1, "cpu").status, 400);

  const auto third = add(admin, 1, "cuda");
  ASSERT_EQ(third.status, 202) << third.error;
  ASSERT_EQ(third.ids, (std::vector<int32_t>{2}));  // the refused cuda:1 took no index
  const int32_t third_id = third.ids[0];
  ASSERT_TRUE(eventually([&] { return replica_state(admin, third_id) == "serving"; }));
  EXPECT_EQ(device_of(engine, third_id), "cuda:2");
  EXPECT_EQ(devices->placed().back(), 2);
  EXPECT_EQ(engine.replicas_placeable(), 0);
  EXPECT_EQ(add(admin, 1, "").status, 507);

  // A lost worker is respawned on its replica's device.
  caf::anon_send_exit(engine.initial_workers(1).at(0), caf::exit_reason::kill);
  ASSERT_TRUE(eventually([&] { return devices->placed().size() == 4; }));
  EXPECT_EQ(devices->placed().back(), 1);

  // A stopped replica's device is free again, and can be named.
  std::promise<admin_outcome> stopped;
  admin.stop_replica(0, [&](admin_outcome o) { stopped.set_value(std::move(o)); });
  ASSERT_EQ(stopped.get_future().get().status, 202);
  ASSERT_TRUE(eventually([&] { return replica_state(admin, 0) == "dead"; }));
  EXPECT_EQ(engine.replicas_placeable(), 1);
  const auto again = add(admin, 1, "cuda:0");
  ASSERT_EQ(again.status, 202) << again.error;
  ASSERT_TRUE(eventually([&] { return replica_state(admin, again.ids.at(0)) == "serving"; }));
  EXPECT_EQ(device_of(engine, again.ids.at(0)), "cuda:0");
  EXPECT_EQ(devices->placed().back(), 0);

  // Every replica serves.
  const auto out = engine.client().generate({testing::ids_request("r", {1, 291}, 8)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0][0].token_ids.size(), 8u);
}

TEST(device_placement, a_shared_host_places_as_many_replicas_as_asked) {
  auto config = testing::stories_config(32, 4);
  config.parallel.replicas = 3;
  engine_system engine(config);
  EXPECT_EQ(device_of(engine, 2), "cpu");
  EXPECT_EQ(engine.replicas_placeable(), INT32_MAX);
}

}  // namespace
}  // namespace actorllm
