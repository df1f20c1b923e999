#include "monitoring/buckets.hpp"

namespace actorllm::buckets {

std::vector<double> time_to_first_token() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}

std::vector<double> inter_token_latency() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
          0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
}

std::vector<double> request_latency() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

std::vector<double> step_duration() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
          0.25,   0.5,   0.75,   1.0,   2.5,  5.0,   10.0, 20.0,  40.0};
}

std::vector<double> mask_time() {
  return {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
          0.0025,  0.005,    0.01,    0.025,  0.05,    0.1,    0.25};
}

std::vector<double> one_two_five(double max_value) {
  std::vector<double> bounds;
  for (double scale = 1.0;; scale *= 10.0) {
    for (double mantissa : {1.0, 2.0, 5.0}) {
      double value = mantissa * scale;
      if (value > max_value) return bounds;
      bounds.push_back(value);
    }
  }
}

}  // namespace actorllm::buckets
