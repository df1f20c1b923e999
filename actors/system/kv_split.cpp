#include "actors/system/kv_split.hpp"

#include <algorithm>
#include <cstdio>

namespace actorllm {

kv_split::kv_split(int64_t budget_bytes, int32_t num_models)
    : budget_(std::max<int64_t>(0, budget_bytes)),
      left_(budget_),
      models_left_(std::max(0, num_models)) {}

int64_t kv_split::share() const {
  return models_left_ > 0 ? left_ / models_left_ : left_;
}

std::string kv_split::take(int64_t bytes) {
  if (models_left_ > 0) --models_left_;
  if (bytes > left_)
    return "its KV pools need " + mib(bytes) + ", and " + mib(left_) + " of the " + mib(budget_) +
           " KV budget (--models-kv-budget) are left";
  left_ -= std::max<int64_t>(0, bytes);
  return {};
}

void kv_split::skip() {
  if (models_left_ > 0) --models_left_;
}

std::string mib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace actorllm
