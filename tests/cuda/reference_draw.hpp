#pragma once
/// The device draw's rule in double precision, for the GPU tests of the sampling kernels:
/// temperature, top-k, top-p, min-p, then the inverse CDF in index order from the row's uniform.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "kernels/cuda/sampling.cuh"

namespace actorllm::cuda::testing {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Equal within a relative 1e-5 (what float arithmetic on the device may differ by).
inline bool near(double a, double b) {
  return std::fabs(a - b) <= 1e-5 * std::max(std::fabs(a), std::fabs(b));
}

/// The token the documented rule picks from processed logits `l`, or -1 when a decision lies
/// within rounding distance of a threshold (float and double may honestly disagree there).
inline int reference_draw(const std::vector<double>& l, const row_sampling& p) {
  const int vocab = static_cast<int>(l.size());
  const int best = int(std::max_element(l.begin(), l.end()) - l.begin());
  const double max_logit = l[best];
  if (!(p.temperature > 0.0f) || max_logit == -kInf) {
    for (int j = 0; j < vocab; ++j)
      if (j != best && l[j] > -kInf && std::fabs(l[j] - max_logit) < 1e-5) return -1;
    return best;
  }
  std::vector<double> w(vocab);
  for (int j = 0; j < vocab; ++j) w[j] = std::exp((l[j] - max_logit) / p.temperature);
  std::vector<double> sorted = w;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  double tau_k = 0.0;
  if (p.top_k > 0 && p.top_k < vocab) {
    tau_k = sorted[p.top_k - 1];
    if (tau_k > 0 && near(tau_k, sorted[p.top_k])) return -1;
  }
  double tau = tau_k;
  if (p.top_p < 1.0f) {
    double kept = 0.0;
    for (double v : sorted)
      if (v >= tau_k) kept += v;
    const double target = std::max(0.0, double(p.top_p)) * kept;
    double cumulative = 0.0;
    for (double v : sorted) {
      if (v < tau_k) break;
      cumulative += v;
      if (std::fabs(cumulative - target) < 1e-4 * kept) return -1;
      if (cumulative >= target) {
        tau = std::max(v, tau_k);
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    const double threshold = std::min(double(p.min_p), 1.0);
    for (double v : w)
      if (near(v, threshold)) return -1;
    tau = std::max(tau, threshold);
  }
  double mass = 0.0;
  for (double v : w)
    if (v >= tau) mass += v;
  const double target = p.uniform * mass;
  double cumulative = 0.0;
  for (int j = 0; j < vocab; ++j) {
    if (w[j] < tau || w[j] == 0.0) continue;
    cumulative += w[j];
    if (std::fabs(cumulative - target) < 1e-4 * mass) return -1;
    if (cumulative > target) return j;
  }
  return -1;
}

}  // namespace actorllm::cuda::testing
