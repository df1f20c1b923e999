#pragma once
/// Memory-mapped safetensors checkpoints: one file or a sharded set described by
/// model.safetensors.index.json. Tensors are read in place and converted to float32 on request.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace actorllm {

/// f8_e4m3: the OCP "E4M3FN" float8 (sign, 4 exponent bits biased by 7, 3 mantissa bits; no
/// infinities, 0x7f and 0xff are NaN), as safetensors names it F8_E4M3. i32 and i64 (I32, I64):
/// the packed codes, group indices and shapes of quantized checkpoints (GPTQ, AWQ,
/// compressed-tensors), read as integers, never as weights.
enum class tensor_dtype { f32, f16, bf16, f8_e4m3, i32, i64 };

struct tensor_view {
  tensor_dtype dtype = tensor_dtype::f32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  ///< points into the mapped file
  int64_t numel() const;
};

/// One mapped .safetensors file. Throws std::runtime_error naming the file on a bad header.
class safetensors_file {
 public:
  explicit safetensors_file(const std::filesystem::path& path);
  ~safetensors_file();
  safetensors_file(const safetensors_file&) = delete;
  safetensors_file& operator=(const safetensors_file&) = delete;

  const std::map<std::string, tensor_view>& tensors() const { return tensors_; }

 private:
  std::filesystem::path path_;
  void* mapping_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, tensor_view> tensors_;
};

/// All tensors of a model folder, across shards.
class tensor_store {
 public:
  /// Opens model.safetensors, or every shard listed in model.safetensors.index.json. A
  /// vision-language checkpoint's tensors go by their decoder's and tower's own names
  /// (`model.layers.0...`, `vision_tower...`, `multi_modal_projector...`, `lm_head.weight`),
  /// whichever of transformers' layouts the file uses.
  explicit tensor_store(const std::filesystem::path& model_dir);

  bool contains(const std::string& name) const;
  const tensor_view& get(const std::string& name) const;  ///< throws naming a missing tensor

  /// The tensor converted to float32, after checking that its shape is `expected_shape`.
  std::vector<float> load_f32(const std::string& name,
                              const std::vector<int64_t>& expected_shape) const;

 private:
  std::vector<std::unique_ptr<safetensors_file>> files_;
  std::map<std::string, const tensor_view*> index_;
};

/// Converts n elements of `src` stored as `dtype` to float32 (float8 without any scale;
/// integers rounded to the nearest float).
void convert_to_f32(tensor_dtype dtype, const void* src, int64_t n, float* dst);

}  // namespace actorllm
