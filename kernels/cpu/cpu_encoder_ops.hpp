#pragma once
/// The encoder ops (kernels/encoder_ops.hpp) on the CPU: float32 rows in host buffers,
/// projections through cpu::linear, attention per image and head as two GEMMs around a
/// softmax. Knows no tower.
///
/// What the handles are here (the tower's CPU table makes them, model/vision_tower.hpp):
///   op_linear::matrix                      const cpu::linear_weight* with float32 rows
///   a bias, norm weight or position table  const float*
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/encoder_ops.hpp"

namespace actorllm::cpu {

/// Buffers of the CPU encoder, grown to the largest batch and reused.
struct encoder_scratch {
  static constexpr size_t num_buffers = 9;
  std::array<std::vector<float>, num_buffers> buffers;
  std::array<int64_t, num_buffers> rows{}, widths{};
  std::vector<float> q, k, v_t, scores, head_out;  ///< one head of one image
};

class cpu_encoder_ops final : public encoder_ops {
 public:
  explicit cpu_encoder_ops(encoder_scratch& scratch) : s_(scratch) {}

  void begin(const encoder_rows& rows) override;
  void write(encoder_buffer b, const float* values, int64_t width) override;
  void linear(encoder_buffer in, const op_linear& w, encoder_buffer out) override;
  void add_positions(encoder_buffer b, op_weight table) override;
  void pool(encoder_buffer in, int64_t side, int64_t kernel, encoder_buffer out) override;
  void rms_norm(encoder_buffer in, op_weight weight, float eps, encoder_buffer out) override;
  void add(encoder_buffer into, encoder_buffer from) override;
  void layer_norm(encoder_buffer in, op_weight weight, op_weight bias, float eps,
                  encoder_buffer out) override;
  void activate(encoder_buffer b, encoder_activation act) override;
  void glu(encoder_buffer in, encoder_activation act, encoder_buffer out) override;
  void group_rows(encoder_buffer in, int64_t group, encoder_buffer out) override;
  void rotate(int64_t num_heads, int64_t head_dim) override;
  void attention(int64_t num_heads, int64_t head_dim, float scale) override;
  void segment_attention(int64_t num_heads, int64_t head_dim, float scale,
                         const int32_t* segment_starts, int64_t num_segments) override;
  void read(encoder_buffer b, float* out) override;
  int64_t rows(encoder_buffer b) const override;
  int64_t width(encoder_buffer b) const override;
  void end() override {}

 private:
  /// b sized to (rows, width); its contents are kept where the size does not change.
  float* shape(encoder_buffer b, int64_t rows, int64_t width);
  float* data(encoder_buffer b) { return s_.buffers[static_cast<size_t>(b)].data(); }

  encoder_scratch& s_;
  encoder_rows rows_;
};

}  // namespace actorllm::cpu
