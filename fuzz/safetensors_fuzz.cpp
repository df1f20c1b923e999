// The safetensors reader (model/safetensors.hpp) on an arbitrary model.safetensors: the folder
// opens or throws std::exception naming the file and the tensor, never crashes; every tensor
// it accepts lies inside the file, so converting each one to float32 reads only mapped bytes.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.hpp"
#include "model/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace actorllm;
  const auto dir = fuzz::scratch_dir();
  fuzz::write_file(dir / "model.safetensors",
                   std::string_view(reinterpret_cast<const char*>(data), size));
  std::unique_ptr<tensor_store> store;
  try {
    store = std::make_unique<tensor_store>(dir);
  } catch (const std::exception&) {
    return 0;
  }
  // Every accepted tensor is converted in full: a view past the mapping is a crash (SIGSEGV or
  // an ASan report, the mapping being followed by unmapped pages only sometimes).
  safetensors_file file(dir / "model.safetensors");
  for (const auto& [name, view] : file.tensors()) {
    const int64_t n = view.numel();
    FUZZ_CHECK(n >= 0 && static_cast<size_t>(n) <= size);
    FUZZ_CHECK(store->contains(name));
    if (view.dtype == tensor_dtype::f8_e4m3 || view.dtype == tensor_dtype::i32 ||
        view.dtype == tensor_dtype::i64) {
      // float8 is read only with its scales, integers only as a quantized checkpoint's packed
      // tensors (load_f32 refuses both): convert the values alone.
      std::vector<float> values(static_cast<size_t>(n));
      convert_to_f32(view.dtype, view.data, n, values.data());
      continue;
    }
    const std::vector<float> values = store->load_f32(name, view.shape);
    FUZZ_CHECK(static_cast<int64_t>(values.size()) == n);
  }
  return 0;
}
