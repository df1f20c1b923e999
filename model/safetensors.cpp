#include "model/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "kernels/cpu/float8.hpp"

namespace actorllm {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error(path.string() + ": " + what);
}

tensor_dtype parse_dtype(const std::string& name, const std::filesystem::path& path,
                         const std::string& tensor) {
  if (name == "F32") return tensor_dtype::f32;
  if (name == "F16") return tensor_dtype::f16;
  if (name == "BF16") return tensor_dtype::bf16;
  if (name == "F8_E4M3") return tensor_dtype::f8_e4m3;
  if (name == "I32") return tensor_dtype::i32;
  if (name == "I64") return tensor_dtype::i64;
  fail(path, "tensor '" + tensor + "' has unsupported dtype " + name +
                 " (F32, F16, BF16, F8_E4M3, I32, I64 only)");
}

size_t dtype_size(tensor_dtype dtype) {
  switch (dtype) {
    case tensor_dtype::f32:
    case tensor_dtype::i32:
      return 4;
    case tensor_dtype::i64:
      return 8;
    case tensor_dtype::f16:
    case tensor_dtype::bf16:
      return 2;
    case tensor_dtype::f8_e4m3:
      break;
  }
  return 1;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exponent = 127 - 15 + 1;
      while (!(mantissa & 0x400)) {
        mantissa <<= 1;
        --exponent;
      }
      bits = sign | (exponent << 23) | ((mantissa & 0x3ff) << 13);
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000 | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

int64_t tensor_view::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void convert_to_f32(tensor_dtype dtype, const void* src, int64_t n, float* dst) {
  if (n <= 0) return;  // an empty tensor's pointers may be null, which memcpy may not take
  switch (dtype) {
    case tensor_dtype::f32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    // 16-bit values are read byte-wise: a header of odd length leaves every tensor at an odd
    // address, where a uint16_t load is undefined behaviour.
    case tensor_dtype::f16: {
      const auto* bytes = static_cast<const unsigned char*>(src);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        dst[i] = half_to_float(h);
      }
      return;
    }
    case tensor_dtype::bf16: {
      const auto* bytes = static_cast<const unsigned char*>(src);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t b;
        std::memcpy(&b, bytes + 2 * i, 2);
        const uint32_t bits = static_cast<uint32_t>(b) << 16;
        std::memcpy(dst + i, &bits, 4);
      }
      return;
    }
    case tensor_dtype::f8_e4m3: {
      const auto* bytes = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = cpu::float8_e4m3::decode(bytes[i]);
      return;
    }
    case tensor_dtype::i32:
    case tensor_dtype::i64: {
      const auto* bytes = static_cast<const unsigned char*>(src);
      const size_t size = dtype_size(dtype);
      for (int64_t i = 0; i < n; ++i) {
        int64_t v = 0;
        if (size == 4) {
          int32_t v32;
          std::memcpy(&v32, bytes + 4 * i, 4);
          v = v32;
        } else {
          std::memcpy(&v, bytes + 8 * i, 8);
        }
        dst[i] = static_cast<float>(v);
      }
      return;
    }
  }
}

namespace {

/// safetensors' bound on a header.
constexpr uint64_t max_header_bytes = 100'000'000;

}  // namespace

safetensors_file::safetensors_file(const std::filesystem::path& path) : path_(path) {
  // Non-blocking: opening a FIFO for reading would wait for a writer for ever (a hostile
  // adapter path); it is refused below, as every other file that is not a regular one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open: " + std::string(std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "is not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ < 8) {
    ::close(fd);
    fail(path, "too small to be a safetensors file");
  }
  mapping_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    fail(path, "mmap failed");
  }
  // A refused header throws out of this constructor, and no destructor runs then: unmap here.
  struct unmap_unless_kept {
    void*& mapping;
    size_t size;
    bool keep = false;
    ~unmap_unless_kept() {
      if (keep) return;
      ::munmap(mapping, size);
      mapping = nullptr;
    }
  } guard{mapping_, size_};
  const auto* bytes = static_cast<const uint8_t*>(mapping_);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes, 8);
  if (header_len > size_ - 8) fail(path, "header length exceeds the file");
  // The format's own bound (100 MB): a larger header is no checkpoint's, and parsing it would
  // hold the loading thread for seconds.
  if (header_len > max_header_bytes)
    fail(path, "header of " + std::to_string(header_len) + " bytes, more than the format's " +
                   std::to_string(max_header_bytes));
  const auto header = nlohmann::json::parse(bytes + 8, bytes + 8 + header_len, nullptr, false);
  if (header.is_discarded() || !header.is_object()) fail(path, "header is not a JSON object");
  const uint8_t* data_start = bytes + 8 + header_len;
  const size_t data_size = size_ - 8 - header_len;
  std::vector<std::pair<std::pair<uint64_t, uint64_t>, std::string>> extents;  // to find overlaps
  for (const auto& item : header.items()) {
    // Not a structured binding: clang before 16 cannot capture one in the lambda below.
    const std::string& name = item.key();
    const nlohmann::json& info = item.value();
    if (name == "__metadata__") continue;
    const auto bad = [&](const std::string& what) { fail(path, "tensor '" + name + "' " + what); };
    if (!info.is_object()) bad("is not described by an object");
    const auto dtype = info.find("dtype");
    const auto shape = info.find("shape");
    const auto offsets = info.find("data_offsets");
    if (dtype == info.end() || !dtype->is_string()) bad("has no dtype string");
    if (shape == info.end() || !shape->is_array()) bad("has no shape list");
    if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
      bad("has no data_offsets pair of byte offsets");
    tensor_view view;
    view.dtype = parse_dtype(dtype->get<std::string>(), path, name);
    uint64_t numel = 1;  // bounded by the file's size as it grows, checked for overflow
    for (const auto& dim : *shape) {
      if (!dim.is_number_unsigned() || dim.get<uint64_t>() > data_size)
        bad("has a dimension that is not a size within the file: " + dim.dump());
      view.shape.push_back(dim.get<int64_t>());
      if (__builtin_mul_overflow(numel, dim.get<uint64_t>(), &numel) || numel > data_size)
        bad("is larger than the file");
    }
    const uint64_t begin = (*offsets)[0].get<uint64_t>(), end = (*offsets)[1].get<uint64_t>();
    if (end > data_size || begin > end || end - begin != numel * dtype_size(view.dtype))
      bad("has inconsistent data offsets");
    view.data = data_start + begin;
    if (begin < end) extents.push_back({{begin, end}, name});
    tensors_.emplace(name, std::move(view));
  }
  std::sort(extents.begin(), extents.end());
  for (size_t i = 1; i < extents.size(); ++i)
    if (extents[i].first.first < extents[i - 1].first.second)
      fail(path, "tensors '" + extents[i - 1].second + "' and '" + extents[i].second +
                     "' overlap in the file");
  guard.keep = true;
}

safetensors_file::~safetensors_file() {
  if (mapping_) ::munmap(mapping_, size_);
}

namespace {

/// A vision-language checkpoint's names, in either of transformers' layouts, as the names
/// of the decoder alone and of a top-level tower: llava-hf's `language_model.model.layers.0`
/// and newer `model.language_model.layers.0` are both `model.layers.0`.
std::string canonical_name(const std::string& name) {
  static const std::pair<std::string_view, std::string_view> renames[] = {
      {"language_model.model.", "model."},
      {"language_model.lm_head.", "lm_head."},
      {"model.language_model.", "model."},
      {"model.vision_tower.", "vision_tower."},
      {"model.visual.", "visual."},
      {"model.multi_modal_projector.", "multi_modal_projector."},
  };
  for (const auto& [from, to] : renames)
    if (name.compare(0, from.size(), from) == 0) return std::string(to) + name.substr(from.size());
  return name;
}

}  // namespace

tensor_store::tensor_store(const std::filesystem::path& model_dir) {
  const auto index_path = model_dir / "model.safetensors.index.json";
  std::vector<std::filesystem::path> shards;
  if (std::filesystem::exists(index_path)) {
    std::ifstream in(index_path);
    const auto index = nlohmann::json::parse(in, nullptr, false);
    if (index.is_discarded() || !index.contains("weight_map"))
      fail(index_path, "not a valid safetensors index (no weight_map)");
    std::set<std::string> names;
    for (const auto& [tensor, file] : index["weight_map"].items())
      names.insert(file.get<std::string>());
    for (const auto& file : names) shards.push_back(model_dir / file);
  } else if (std::filesystem::exists(model_dir / "model.safetensors")) {
    shards.push_back(model_dir / "model.safetensors");
  } else {
    fail(model_dir, "no model.safetensors or model.safetensors.index.json");
  }
  for (const auto& shard : shards) {
    files_.push_back(std::make_unique<safetensors_file>(shard));
    for (const auto& [name, view] : files_.back()->tensors()) index_[canonical_name(name)] = &view;
  }
}

bool tensor_store::contains(const std::string& name) const {
  return index_.count(name) > 0;
}

const tensor_view& tensor_store::get(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw std::runtime_error("checkpoint is missing tensor '" + name + "'");
  return *it->second;
}

std::vector<float> tensor_store::load_f32(const std::string& name,
                                          const std::vector<int64_t>& expected_shape) const {
  const tensor_view& view = get(name);
  if (view.shape != expected_shape)
    throw std::runtime_error("tensor '" + name + "' has shape " + shape_string(view.shape) +
                             ", expected " + shape_string(expected_shape));
  if (view.dtype == tensor_dtype::f8_e4m3)
    throw std::runtime_error("tensor '" + name +
                             "' is float8 (F8_E4M3): only the dense layers' projections of a "
                             "checkpoint with a quantization_config are read as float8");
  if (view.dtype == tensor_dtype::i32 || view.dtype == tensor_dtype::i64)
    throw std::runtime_error("tensor '" + name +
                             "' holds integers: only a quantized checkpoint's packed tensors are "
                             "read as integers");
  std::vector<float> out(view.numel());
  convert_to_f32(view.dtype, view.data, view.numel(), out.data());
  return out;
}

}  // namespace actorllm
