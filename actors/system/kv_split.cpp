#include "actors/system/kv_split.hpp"

#include <algorithm>
#include <cstdio>

namespace actorllm {

kv_split::kv_split(int64_t budget_bytes, int32_t slots)
    : budget_(std::max<int64_t>(0, budget_bytes)), left_(budget_), slots_(std::max(1, slots)) {}

void kv_split::set_slots(int32_t slots) {
  slots_ = std::max(1, slots);
}

int64_t kv_split::share() const {
  return left_ / std::max(1, slots_ - held_);
}

std::string kv_split::take(int64_t bytes) {
  if (bytes > left_)
    return "its KV pools need " + mib(bytes) + ", and " + mib(left_) + " of the " + mib(budget_) +
           " KV budget (--models-kv-budget) are left";
  left_ -= std::max<int64_t>(0, bytes);
  ++held_;
  return {};
}

void kv_split::give_back(int64_t bytes) {
  left_ = std::min(budget_, left_ + std::max<int64_t>(0, bytes));
  held_ = std::max(0, held_ - 1);
}

std::string mib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace actorllm
