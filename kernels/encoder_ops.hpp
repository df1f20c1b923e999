#pragma once
/// The ops a vision encoder's forward is written over, one interface for every backend, beside
/// the decoder's (forward_ops.hpp). A tower (CLIP's ViT) and its projector are written once in
/// model/vision_forward.cpp as a sequence of these calls; a backend implements each over its
/// own memory and threads and knows no tower.
///
/// A batch is several images' token rows end to end; attention runs within each image only,
/// every row seeing every row of its image (no causal mask, no cache). Activations live in the
/// backend, in buffers named by role, each with its own rows (the tower's, or fewer once
/// pooled); an op's output has its input's rows. Weights are handles into the backend's own
/// table (a null bias: none). C++17.
#include <cstdint>

#include "kernels/forward_ops.hpp"

namespace actorllm {

enum class encoder_buffer : uint8_t {
  input,      ///< (rows, in) the batch's input rows (flattened patches), written by the caller
  x,          ///< (rows, width) a sublayer's input or output
  residual,   ///< (rows, hidden) the residual stream
  qkv,        ///< (rows, 3 hidden) queries, keys and values
  attention,  ///< (rows, hidden) attention's output
  wide,       ///< (rows, intermediate) the MLP's inner activations
  gated,      ///< (rows, intermediate) a gated MLP's act(gate) * up
  rotary,     ///< (rows, head_dim) each row's rotary cosines then sines, written by the caller
  merged,     ///< (rows / group, group * width) rows concatenated in groups
};

enum class encoder_activation : uint8_t {
  quick_gelu,  ///< x * sigmoid(1.702 x) (CLIP)
  gelu,        ///< the exact, erf form
  gelu_tanh,   ///< the tanh approximation
  silu,        ///< x * sigmoid(x)
};

/// One batch of images: image i's rows are image_starts[i] .. image_starts[i + 1]. Host
/// arrays valid until end().
struct encoder_rows {
  const int32_t* image_starts = nullptr;  ///< (num_images + 1)
  int64_t num_images = 0;
  int64_t num_rows = 0;
};

class encoder_ops {
 public:
  virtual ~encoder_ops() = default;

  /// Starts a batch: the buffers will hold its rows.
  virtual void begin(const encoder_rows& rows) = 0;
  /// `width` columns of every row of b from host float32 (rows, width).
  virtual void write(encoder_buffer b, const float* rows, int64_t width) = 0;
  /// out = in Wᵀ + bias; the widths are the matrix's.
  virtual void linear(encoder_buffer in, const op_linear& w, encoder_buffer out) = 0;
  /// b's row r += table's row (r's index within its image); table: (rows per image, width).
  virtual void add_positions(encoder_buffer b, op_weight table) = 0;
  /// out = each image's rows, a side x side grid in raster order, averaged over kernel x
  /// kernel windows: (side / kernel)² rows per image, in raster order.
  virtual void pool(encoder_buffer in, int64_t side, int64_t kernel, encoder_buffer out) = 0;
  /// into += from, element by element.
  virtual void add(encoder_buffer into, encoder_buffer from) = 0;
  /// out = layer_norm(in) * weight + bias, row by row, over in's width.
  virtual void layer_norm(encoder_buffer in, op_weight weight, op_weight bias, float eps,
                          encoder_buffer out) = 0;
  /// out = rms_norm(in) * weight, row by row.
  virtual void rms_norm(encoder_buffer in, op_weight weight, float eps, encoder_buffer out) = 0;
  /// b = act(b), element by element.
  virtual void activate(encoder_buffer b, encoder_activation act) = 0;
  /// out = act(in's first half of columns) * its second half (a gated MLP whose gate and up
  /// rows were fused, gate first).
  virtual void glu(encoder_buffer in, encoder_activation act, encoder_buffer out) = 0;
  /// out's row i = in's rows group * i .. group * i + group - 1 side by side. Every image's
  /// rows are a multiple of group.
  virtual void group_rows(encoder_buffer in, int64_t group, encoder_buffer out) = 0;
  /// Rotates each head of qkv's q and k columns by its row of the rotary buffer, in halves
  /// (transformers' rotate_half): x' = x cos + rotate_half(x) sin.
  virtual void rotate(int64_t num_heads, int64_t head_dim) = 0;
  /// attention = softmax(q kᵀ * scale) v per image and head, from qkv's (q | k | v) columns.
  virtual void attention(int64_t num_heads, int64_t head_dim, float scale) = 0;
  /// As attention, within each segment of rows instead of each image: segment i's rows are
  /// segment_starts[i] .. segment_starts[i + 1] (num_segments + 1 host values covering the
  /// batch's rows; Qwen2.5-VL's windows).
  virtual void segment_attention(int64_t num_heads, int64_t head_dim, float scale,
                                 const int32_t* segment_starts, int64_t num_segments) = 0;
  /// Every row of b to host float32 (b's rows, b's width).
  virtual void read(encoder_buffer b, float* rows) = 0;
  /// b's rows and width now.
  virtual int64_t rows(encoder_buffer b) const = 0;
  virtual int64_t width(encoder_buffer b) const = 0;
  /// Ends the batch: what read() returns is complete.
  virtual void end() = 0;
};

}  // namespace actorllm
