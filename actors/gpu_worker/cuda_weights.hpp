#pragma once
/// A model's weights on one CUDA device: what the device receives of each tensor (its
/// float32 rows; for a model kept only as packed panels, the panels' own 16-bit bits, or a
/// quantized layout the kernels run, else the panels unpacked to float32), sent one tensor at
/// a time to a cuda_weight_sink, and the CUDA ops' handles of them (cuda_forward_ops.cuh says
/// what each is). Plain C++ over the kernels' API, shared by the worker's CUDA backend and
/// tools/gpu_only; built only with CUDA.
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda/projector.cuh"
#include "kernels/cuda/quantized_linear.cuh"
#include "kernels/cuda/weight_store.cuh"
#include "model/decoder_forward.hpp"

namespace actorllm {

namespace cpu {
struct packed_matrix;
}  // namespace cpu

class llama_model;

/// A quantized matrix in the device's layout (cuda::quantized_matrix), owning its parts.
struct quantized_host_matrix {
  cuda::weight_code code = cuda::weight_code::q8;
  int64_t out_features = 0;
  int64_t in_features = 0;
  int64_t group_size = 0;
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  std::vector<uint8_t> zeros;        ///< q4 only
  std::vector<int32_t> input_order;  ///< empty: code column r is input feature r
  /// Host pointers into the parts; valid while this lives (a move keeps them).
  cuda::quantized_matrix view() const;
};

/// q8, fp8 and q4 panels in the device's layout: the same codes, scales (fp8's without the
/// packing's factor of 2^8) and zero points, row-major, and the same column order. Empty for
/// 16- and 32-bit panels, and for a layout the kernels cannot run (quantized_layout_error),
/// which the runner then takes unpacked, as a dense matrix.
std::optional<quantized_host_matrix> device_layout_of(const cpu::packed_matrix& panels);

/// Where each tensor goes: the device (device_weight_sink), or a test's record.
class cuda_weight_sink {
 public:
  virtual ~cuda_weight_sink() = default;
  /// n values as `name`, in the device's storage type (float32 with keep_fp32: the rotary
  /// tables); returns what the ops read (a device pointer). `values` may go once it returns.
  virtual const void* store(const std::string& name, const cuda::host_tensor& values, int64_t n,
                            bool keep_fp32) = 0;
  /// A projection that stays quantized on the device; returns the matrix the ops read.
  virtual cuda::quantized_matrix store_quantized(const std::string& name,
                                                 const quantized_host_matrix& matrix) = 0;
};

/// The CUDA ops' handles of a model: decoder_refs over what the sink stored, and the
/// projections the op_linear handles point at. Not copyable or movable: refs point into it.
struct cuda_weight_table {
  decoder_refs refs;
  std::deque<cuda::linear_weight> linears;
};

/// Sends every tensor of `model` to `sink` and returns the handles. Throws
/// std::invalid_argument naming a tensor the model lacks or whose size is off, and
/// std::runtime_error for a model the CUDA ops do not run (a local rotary table of another
/// size than the global one).
std::unique_ptr<const cuda_weight_table> make_cuda_weight_table(const llama_model& model,
                                                                cuda_weight_sink& sink);

/// The sink of one device: a weight_store of the activations' type, and the quantized
/// matrices (each readied on `p`, so that no step allocates).
class device_weight_sink final : public cuda_weight_sink {
 public:
  device_weight_sink(cuda::dtype storage, cuda::projector& p) : store_(storage), projector_(p) {}
  const void* store(const std::string& name, const cuda::host_tensor& values, int64_t n,
                    bool keep_fp32) override;
  cuda::quantized_matrix store_quantized(const std::string& name,
                                         const quantized_host_matrix& matrix) override;
  cuda::dtype storage() const { return store_.storage(); }

 private:
  cuda::weight_store store_;
  cuda::projector& projector_;
  std::vector<std::unique_ptr<cuda::device_quantized_matrix>> quantized_;
};

}  // namespace actorllm
