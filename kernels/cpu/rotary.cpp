// Rotary position embedding, in place, for neox (halves) and GPT-J (pairs) layouts.
#include <algorithm>
#include <vector>

#include "kernels/cpu/ops.hpp"

namespace actorllm::cpu {

namespace {

/// Rotates the first rot_dim elements of each of num_heads vectors of head_dim.
inline void rotate_heads(float* x, int64_t num_heads, int64_t head_dim, const float* cos,
                         const float* sin, int64_t half, bool neox) {
  for (int64_t h = 0; h < num_heads; ++h) {
    float* v = x + h * head_dim;
    if (neox) {
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * cos[i] - b * sin[i];
        v[i + half] = b * cos[i] + a * sin[i];
      }
    } else {
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[2 * i], b = v[2 * i + 1];
        v[2 * i] = a * cos[i] - b * sin[i];
        v[2 * i + 1] = b * cos[i] + a * sin[i];
      }
    }
  }
}

}  // namespace

void rotary_embedding(const int32_t* positions, float* q, float* k, int64_t n, int64_t num_heads,
                      int64_t num_kv_heads, int64_t head_dim, const float* cos_sin, int64_t rot_dim,
                      bool neox) {
  const int64_t half = rot_dim / 2;
  parallel_for(n, 1, 8, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const float* cos = cos_sin + static_cast<int64_t>(positions[t]) * rot_dim;
      const float* sin = cos + half;
      rotate_heads(q + t * num_heads * head_dim, num_heads, head_dim, cos, sin, half, neox);
      rotate_heads(k + t * num_kv_heads * head_dim, num_kv_heads, head_dim, cos, sin, half, neox);
    }
  });
}

void rotate_halves(float* x, int64_t num_vectors, int64_t head_dim, const float* cos,
                   const float* sin) {
  rotate_heads(x, num_vectors, head_dim, cos, sin, head_dim / 2, true);
}

void sectioned_rotary_embedding(const int32_t* axis_positions, const int32_t* sections, float* q,
                                float* k, int64_t n, int64_t num_heads, int64_t num_kv_heads,
                                int64_t head_dim, const float* cos_sin) {
  const int64_t half = head_dim / 2;
  parallel_for(n, 1, 8, [&](int64_t begin, int64_t end) {
    // This token's cosines then sines; kept per thread, as the step runs every layer.
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(head_dim));
    for (int64_t t = begin; t < end; ++t) {
      int64_t i = 0;
      for (int64_t axis = 0; axis < 3; ++axis) {
        const float* table =
            cos_sin + static_cast<int64_t>(axis_positions[3 * t + axis]) * head_dim;
        for (const int64_t stop = std::min(half, i + sections[axis]); i < stop; ++i) {
          row[i] = table[i];
          row[half + i] = table[half + i];
        }
      }
      rotate_heads(q + t * num_heads * head_dim, num_heads, head_dim, row.data(), row.data() + half,
                   half, true);
      rotate_heads(k + t * num_kv_heads * head_dim, num_kv_heads, head_dim, row.data(),
                   row.data() + half, half, true);
    }
  });
}

}  // namespace actorllm::cpu
