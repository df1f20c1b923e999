// Edges of the safetensors reader found while fuzzing it (fuzz/safetensors_fuzz.cpp): a file
// whose header is refused leaves nothing mapped (the constructor throws after mapping the
// file, and no destructor runs for an object never made, so a loader that retries would run
// out of mappings), a tensor with no elements converts to nothing without handing a null
// pointer to memcpy, and 16-bit values at odd addresses (a header of odd length puts every
// tensor there) are read byte-wise rather than as misaligned uint16_t (undefined behaviour;
// UBSan reports both).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "model/safetensors.hpp"

namespace actorllm {
namespace {

namespace fs = std::filesystem;

/// How many of this process's mappings are of `path`.
int num_mappings_of(const fs::path& path) {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.size() >= path.string().size() &&
        line.compare(line.size() - path.string().size(), std::string::npos, path.string()) == 0)
      ++n;
  }
  return n;
}

void write_with_header(const fs::path& path, const std::string& header) {
  std::ofstream out(path, std::ios::binary);
  const uint64_t len = header.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << header << std::string(16, '\0');
}

TEST(safetensors_edges, a_refused_header_leaves_the_file_unmapped) {
  const fs::path dir = fs::temp_directory_path() / ("actorllm-mapping-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path path = fs::canonical(dir) / "model.safetensors";
  for (const std::string& header : {std::string("not json"), std::string(R"({"a": 1})"),
                                    std::string(R"({"a":{"dtype":"F32","shape":[9],)"
                                                R"("data_offsets":[0,36]}})")}) {
    write_with_header(path, header);
    EXPECT_THROW(safetensors_file file(path), std::runtime_error) << header;
    EXPECT_EQ(num_mappings_of(path), 0) << header;
  }
  {
    write_with_header(path, R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})");
    safetensors_file file(path);
    EXPECT_EQ(num_mappings_of(path), 1);
  }
  EXPECT_EQ(num_mappings_of(path), 0);
  fs::remove_all(dir);
}

TEST(safetensors_edges, an_empty_tensor_loads_as_no_values) {
  const fs::path dir = fs::temp_directory_path() / ("actorllm-empty-" + std::to_string(getpid()));
  fs::create_directories(dir);
  write_with_header(dir / "model.safetensors",
                    R"({"e":{"dtype":"F32","shape":[0,4],"data_offsets":[0,0]},)"
                    R"("h":{"dtype":"F16","shape":[4,0],"data_offsets":[0,0]}})");
  const tensor_store store(dir);
  EXPECT_TRUE(store.load_f32("e", {0, 4}).empty());
  EXPECT_TRUE(store.load_f32("h", {4, 0}).empty());
  convert_to_f32(tensor_dtype::f32, nullptr, 0, nullptr);
  fs::remove_all(dir);
}

TEST(safetensors_edges, sixteen_bit_values_at_odd_addresses_convert) {
  // 1.0, -2.0 as float16 and as bfloat16, one byte past an aligned start.
  alignas(8) const unsigned char f16[] = {0, 0x00, 0x3C, 0x00, 0xC0};
  alignas(8) const unsigned char bf16[] = {0, 0x80, 0x3F, 0x00, 0xC0};
  float out[2];
  convert_to_f32(tensor_dtype::f16, f16 + 1, 2, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
  convert_to_f32(tensor_dtype::bf16, bf16 + 1, 2, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
}

}  // namespace
}  // namespace actorllm
