#include "actors/system/cluster_admission.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace actorllm {

namespace {

namespace fs = std::filesystem;

/// 64-bit FNV-1a: a fingerprint for telling models apart, not a defence against forgery (the
/// secret is that).
struct fnv1a {
  uint64_t state = 0xcbf29ce484222325ULL;
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) state = (state ^ p[i]) * 0x100000001b3ULL;
  }
  void add(std::string_view s) {
    const uint64_t n = s.size();
    add(&n, sizeof n);
    add(s.data(), s.size());
  }
  std::string hex() const {
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(state));
    return out;
  }
};

std::ifstream open_or_throw(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return in;
}

std::string read_bytes(std::ifstream& in, uint64_t offset, uint64_t n) {
  std::string buf(n, '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(buf.data(), static_cast<std::streamsize>(n));
  buf.resize(static_cast<size_t>(in.gcount()));
  in.clear();
  return buf;
}

/// Each .safetensors file of the folder, by name: its name, size, header, and samples of its
/// data (two checkpoints with the same shapes, a fine-tune say, differ there).
std::string fingerprint_weights(const fs::path& model_dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(model_dir))
    if (entry.is_regular_file() && entry.path().extension() == ".safetensors")
      files.push_back(entry.path());
  if (files.empty()) throw std::runtime_error("no .safetensors file in " + model_dir.string());
  std::sort(files.begin(), files.end());
  fnv1a h;
  for (const auto& path : files) {
    auto in = open_or_throw(path);
    const uint64_t size = fs::file_size(path);
    h.add(path.filename().string());
    h.add(&size, sizeof size);
    uint64_t header_len = 0;
    const std::string len_bytes = read_bytes(in, 0, 8);
    for (size_t i = 0; i < len_bytes.size(); ++i)
      header_len |= uint64_t(static_cast<unsigned char>(len_bytes[i])) << (8 * i);
    const uint64_t data_start = std::min<uint64_t>(size, 8 + header_len);
    h.add(read_bytes(in, 8, data_start - 8));
    constexpr uint64_t num_samples = 16, sample_bytes = 4096;
    const uint64_t data_size = size - data_start;
    for (uint64_t i = 0; i < num_samples && data_size > 0; ++i) {
      const uint64_t at =
          data_start +
          (data_size > sample_bytes ? (data_size - sample_bytes) * i / (num_samples - 1) : 0);
      h.add(read_bytes(in, at, sample_bytes));
    }
  }
  return h.hex();
}

std::string hash_file(const fs::path& path) {
  auto in = open_or_throw(path);
  fnv1a h;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) h.add(buf, static_cast<size_t>(in.gcount()));
  return h.hex();
}

/// config.json's fields that say nothing about the model itself.
bool is_bookkeeping(const std::string& key) {
  return key.empty() || key[0] == '_' || key == "transformers_version";
}

}  // namespace

model_identity identify_model(const engine_config& config) {
  const fs::path model_dir(config.model.model);
  model_identity id;
  const fs::path config_path = model_dir / "config.json";
  auto in = open_or_throw(config_path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw std::runtime_error(config_path.string() + ": " + e.what());
  }
  if (!j.is_object()) throw std::runtime_error(config_path.string() + ": not a JSON object");
  for (const auto& [key, value] : j.items()) {  // sorted: nlohmann::json keeps a std::map
    if (is_bookkeeping(key)) continue;
    id.config_keys.push_back(key);
    id.config_values.push_back(value.dump());
  }
  if (auto it = j.find("vocab_size"); it != j.end() && it->is_number_integer())
    id.vocab_size = it->get<int64_t>();
  id.weights = fingerprint_weights(model_dir);
  fs::path tok = config.model.tokenizer.empty() ? model_dir : fs::path(config.model.tokenizer);
  if (fs::is_directory(tok)) tok /= "tokenizer.json";
  id.tokenizer = hash_file(tok);
  id.block_size = config.cache.block_size;
  return id;
}

std::vector<std::string> identity_differences(const model_identity& server,
                                              const model_identity& worker) {
  std::vector<std::string> out;
  auto both = [](const std::string& a, const std::string& b) {
    return a + " (server) vs " + b + " (worker)";
  };
  std::map<std::string, std::pair<std::string, std::string>> fields;
  for (size_t i = 0; i < server.config_keys.size() && i < server.config_values.size(); ++i)
    fields[server.config_keys[i]].first = server.config_values[i];
  for (size_t i = 0; i < worker.config_keys.size() && i < worker.config_values.size(); ++i)
    fields[worker.config_keys[i]].second = worker.config_values[i];
  for (const auto& [key, values] : fields) {
    if (key == "vocab_size" || values.first == values.second) continue;
    out.push_back("config.json " + key + ": " +
                  both(values.first.empty() ? "(absent)" : values.first,
                       values.second.empty() ? "(absent)" : values.second));
  }
  if (server.vocab_size != worker.vocab_size)
    out.push_back("vocab size: " +
                  both(std::to_string(server.vocab_size), std::to_string(worker.vocab_size)));
  if (server.weights != worker.weights)
    out.push_back("weights fingerprint: " + both(server.weights, worker.weights));
  if (server.tokenizer != worker.tokenizer)
    out.push_back("tokenizer.json hash: " + both(server.tokenizer, worker.tokenizer));
  if (server.block_size != worker.block_size)
    out.push_back("--block-size: " +
                  both(std::to_string(server.block_size), std::to_string(worker.block_size)));
  return out;
}

bool secrets_equal(std::string_view expected, std::string_view offered) {
  // Every byte of `offered` is compared, whatever the bytes before gave, so the time taken
  // says nothing about how much of a guess was right.
  volatile unsigned char diff = expected.size() != offered.size() || expected.empty();
  const size_t n = expected.empty() ? 1 : expected.size();
  for (size_t i = 0; i < offered.size(); ++i) {
    const unsigned char want = expected.empty() ? 0 : static_cast<unsigned char>(expected[i % n]);
    diff = diff | (static_cast<unsigned char>(offered[i]) ^ want);
  }
  return diff == 0;
}

cluster_admission::cluster_admission(std::string secret, model_identity identity)
    : secret_(std::move(secret)), identity_(std::move(identity)) {}

std::string cluster_admission::refusal(std::string_view offered_secret,
                                       const model_identity& worker) const {
  if (!secret_.empty()) {
    if (offered_secret.empty())
      return "this server requires the cluster secret: start the worker with "
             "--cluster-secret-file PATH";
    if (!secrets_equal(secret_, offered_secret)) return "wrong cluster secret";
  }
  const auto differences = identity_differences(identity_, worker);
  if (differences.empty()) return {};
  std::string line = "the worker serves another model than this server: ";
  for (size_t i = 0; i < differences.size(); ++i) line += (i ? "; " : "") + differences[i];
  return line;
}

}  // namespace actorllm
