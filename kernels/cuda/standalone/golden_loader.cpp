#include "kernels/cuda/standalone/golden_loader.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace actorllm::golden {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what);
}

size_t skip_space(const std::string& s, size_t p) {
  while (p < s.size() && (s[p] == ' ' || s[p] == '\n' || s[p] == '\r' || s[p] == '\t')) ++p;
  return p;
}

/// Position of the value after the first `"key":` at or after `from`; npos when absent.
size_t find_value(const std::string& json, const std::string& key, size_t from = 0) {
  const std::string quoted = "\"" + key + "\"";
  for (size_t p = json.find(quoted, from); p != std::string::npos; p = json.find(quoted, p + 1)) {
    const size_t colon = skip_space(json, p + quoted.size());
    if (colon < json.size() && json[colon] == ':') return skip_space(json, colon + 1);
  }
  return std::string::npos;
}

/// The string starting at the quote at `p`; `p` moves past its closing quote.
std::string read_string(const std::string& s, size_t& p) {
  if (p >= s.size() || s[p] != '"') fail("expected a string at offset " + std::to_string(p));
  std::string out;
  for (++p; p < s.size() && s[p] != '"'; ++p) {
    if (s[p] == '\\' && p + 1 < s.size()) ++p;  // names here carry no escapes worth decoding
    out += s[p];
  }
  ++p;
  return out;
}

/// The integers of the array starting at the '[' at `p`.
std::vector<int64_t> read_ints(const std::string& s, size_t p) {
  if (p >= s.size() || s[p] != '[') fail("expected an array at offset " + std::to_string(p));
  std::vector<int64_t> out;
  p = skip_space(s, p + 1);
  while (p < s.size() && s[p] != ']') {
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str() + p, &end, 10);
    if (end == s.c_str() + p) fail("expected an integer at offset " + std::to_string(p));
    out.push_back(v);
    p = skip_space(s, static_cast<size_t>(end - s.c_str()));
    if (p < s.size() && s[p] == ',') p = skip_space(s, p + 1);
  }
  return out;
}

/// Index of the brace closing the object that opens at `p`, strings skipped.
size_t closing_brace(const std::string& s, size_t p) {
  int depth = 0;
  for (; p < s.size(); ++p) {
    if (s[p] == '"') {
      read_string(s, p);
      --p;
    } else if (s[p] == '{') {
      ++depth;
    } else if (s[p] == '}' && --depth == 0) {
      return p;
    }
  }
  fail("unbalanced braces in a JSON object");
}

struct config_reader {
  const std::string& json;
  bool has(const std::string& key) const { return find_value(json, key) != std::string::npos; }
  double number(const std::string& key) const {
    const size_t p = find_value(json, key);
    if (p == std::string::npos) fail("config.json: no field " + key);
    char* end = nullptr;
    const double v = std::strtod(json.c_str() + p, &end);
    if (end == json.c_str() + p) fail("config.json: field " + key + " is not a number");
    return v;
  }
  double number(const std::string& key, double fallback) const {
    return has(key) ? number(key) : fallback;
  }
  bool flag(const std::string& key, bool fallback) const {
    const size_t p = find_value(json, key);
    if (p == std::string::npos) return fallback;
    return json.compare(p, 4, "true") == 0;
  }
};

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    const float f = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
    return sign ? -f : f;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  // rebias 15 -> 127
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

class safetensors_file {
 public:
  explicit safetensors_file(const std::string& path) : path_(path), bytes_(read_text(path)) {
    if (bytes_.size() < 8) fail(path + ": too short for a safetensors file");
    uint64_t header_len = 0;
    std::memcpy(&header_len, bytes_.data(), 8);  // little-endian u64
    if (header_len > bytes_.size() - 8) fail(path + ": header length past the end");
    data_begin_ = 8 + header_len;
    const std::string header = bytes_.substr(8, header_len);
    size_t p = skip_space(header, 0);
    if (p >= header.size() || header[p] != '{') fail(path + ": header is not a JSON object");
    p = skip_space(header, p + 1);
    while (p < header.size() && header[p] != '}') {
      const std::string name = read_string(header, p);
      p = skip_space(header, p);
      if (p >= header.size() || header[p] != ':') fail(path + ": bad header near " + name);
      p = skip_space(header, p + 1);
      const size_t end = closing_brace(header, p);
      const std::string obj = header.substr(p, end - p + 1);
      p = skip_space(header, end + 1);
      if (p < header.size() && header[p] == ',') p = skip_space(header, p + 1);
      if (name == "__metadata__") continue;
      tensor t;
      size_t q = find_value(obj, "dtype");
      if (q == std::string::npos) fail(path + ": no dtype for " + name);
      t.dtype = read_string(obj, q);
      q = find_value(obj, "shape");
      if (q == std::string::npos) fail(path + ": no shape for " + name);
      t.shape = read_ints(obj, q);
      q = find_value(obj, "data_offsets");
      if (q == std::string::npos) fail(path + ": no data_offsets for " + name);
      const auto offsets = read_ints(obj, q);
      if (offsets.size() != 2 || offsets[0] < 0 || offsets[1] < offsets[0] ||
          data_begin_ + static_cast<uint64_t>(offsets[1]) > bytes_.size())
        fail(path + ": bad data_offsets for " + name);
      t.begin = offsets[0];
      t.end = offsets[1];
      tensors_[name] = t;
    }
  }

  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }

  /// The tensor as float32; throws unless it exists with exactly `shape`.
  std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) fail(path_ + ": no tensor " + name);
    const tensor& t = it->second;
    if (t.shape != shape) {
      std::ostringstream msg;
      msg << path_ << ": tensor " << name << " has shape [";
      for (auto d : t.shape) msg << d << ' ';
      msg << "], expected [";
      for (auto d : shape) msg << d << ' ';
      msg << "]";
      fail(msg.str());
    }
    int64_t numel = 1;
    for (auto d : shape) numel *= d;
    const char* src = bytes_.data() + data_begin_ + t.begin;
    const int64_t elem = t.dtype == "F32" ? 4 : (t.dtype == "F16" || t.dtype == "BF16") ? 2 : 0;
    if (elem == 0) fail(path_ + ": tensor " + name + " has unsupported dtype " + t.dtype);
    if (static_cast<int64_t>(t.end - t.begin) != numel * elem)
      fail(path_ + ": tensor " + name + " has a byte size that does not match its shape");
    std::vector<float> out(numel);
    for (int64_t i = 0; i < numel; ++i) {
      if (elem == 4) {
        std::memcpy(&out[i], src + 4 * i, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        if (t.dtype == "F16") {
          out[i] = half_to_float(h);
        } else {
          const uint32_t bits = static_cast<uint32_t>(h) << 16;
          std::memcpy(&out[i], &bits, 4);
        }
      }
    }
    return out;
  }

 private:
  struct tensor {
    std::string dtype;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;
  };
  std::string path_;
  std::string bytes_;
  uint64_t data_begin_ = 0;
  std::map<std::string, tensor> tensors_;
};

std::vector<float> concat(std::vector<std::vector<float>> parts) {
  std::vector<float> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<int32_t> int_array(const std::string& json, const std::string& key) {
  const size_t p = find_value(json, key);
  if (p == std::string::npos) fail("no field " + key);
  const auto values = read_ints(json, p);
  return std::vector<int32_t>(values.begin(), values.end());
}

std::vector<float> rotary_table(double rope_theta, int64_t head_dim, int64_t max_position) {
  const int64_t half = head_dim / 2;
  std::vector<double> inv_freq(half);
  for (int64_t i = 0; i < half; ++i)
    inv_freq[i] = 1.0 / std::pow(rope_theta, static_cast<double>(2 * i) / head_dim);
  std::vector<float> table(max_position * head_dim);
  for (int64_t pos = 0; pos < max_position; ++pos) {
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(pos) * static_cast<float>(inv_freq[i]);
      table[pos * head_dim + i] = std::cos(angle);
      table[pos * head_dim + half + i] = std::sin(angle);
    }
  }
  return table;
}

host_model load_model(const std::string& dir) {
  const std::string json = read_text(dir + "/config.json");
  const config_reader r{json};
  if (size_t p = find_value(json, "rope_scaling");
      p != std::string::npos && json.compare(p, 4, "null") != 0)
    fail("config.json: rope_scaling is not supported by this loader");
  host_model m;
  auto& c = m.config;
  c.hidden_size = static_cast<int64_t>(r.number("hidden_size"));
  c.intermediate_size = static_cast<int64_t>(r.number("intermediate_size"));
  c.num_layers = static_cast<int64_t>(r.number("num_hidden_layers"));
  c.num_heads = static_cast<int64_t>(r.number("num_attention_heads"));
  c.num_kv_heads = static_cast<int64_t>(r.number("num_key_value_heads", c.num_heads));
  c.head_dim = static_cast<int64_t>(r.number("head_dim", c.hidden_size / c.num_heads));
  c.vocab_size = static_cast<int64_t>(r.number("vocab_size"));
  c.max_position = static_cast<int64_t>(r.number("max_position_embeddings"));
  c.rms_norm_eps = static_cast<float>(r.number("rms_norm_eps", 1e-6));
  const double rope_theta = r.number("rope_theta", 10000.0);
  const bool tied = r.flag("tie_word_embeddings", false);
  const bool bias = r.flag("attention_bias", false);
  c.validate();

  const safetensors_file st(dir + "/model.safetensors");
  const int64_t dim = c.hidden_size, hidden = c.intermediate_size;
  const int64_t q = c.q_size(), kv = c.kv_size();
  m.embed = st.load("model.embed_tokens.weight", {c.vocab_size, dim});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    host_layer lw;
    lw.input_norm = st.load(p + "input_layernorm.weight", {dim});
    lw.qkv = concat({st.load(p + "self_attn.q_proj.weight", {q, dim}),
                     st.load(p + "self_attn.k_proj.weight", {kv, dim}),
                     st.load(p + "self_attn.v_proj.weight", {kv, dim})});
    if (bias)
      lw.qkv_bias = concat({st.load(p + "self_attn.q_proj.bias", {q}),
                            st.load(p + "self_attn.k_proj.bias", {kv}),
                            st.load(p + "self_attn.v_proj.bias", {kv})});
    lw.o = st.load(p + "self_attn.o_proj.weight", {dim, q});
    lw.post_norm = st.load(p + "post_attention_layernorm.weight", {dim});
    lw.gate_up = concat({st.load(p + "mlp.gate_proj.weight", {hidden, dim}),
                         st.load(p + "mlp.up_proj.weight", {hidden, dim})});
    lw.down = st.load(p + "mlp.down_proj.weight", {dim, hidden});
    m.layers.push_back(std::move(lw));
  }
  m.final_norm = st.load("model.norm.weight", {dim});
  // As llama_model: a stored lm_head wins; without one the head is the embedding if tied.
  if (st.contains("lm_head.weight") || !tied)
    m.lm_head = st.load("lm_head.weight", {c.vocab_size, dim});
  m.cos_sin = rotary_table(rope_theta, c.head_dim, c.max_position);
  return m;
}

cuda::llama_host_weights host_model::view() const {
  cuda::llama_host_weights w;
  w.embed = embed.data();
  for (const auto& l : layers) {
    cuda::llama_host_layer h;
    h.input_norm = l.input_norm.data();
    h.qkv = l.qkv.data();
    h.qkv_bias = l.qkv_bias.empty() ? nullptr : l.qkv_bias.data();
    h.o = l.o.data();
    h.post_norm = l.post_norm.data();
    h.gate_up = l.gate_up.data();
    h.down = l.down.data();
    w.layers.push_back(h);
  }
  w.final_norm = final_norm.data();
  w.lm_head = lm_head.empty() ? nullptr : lm_head.data();
  w.cos_sin = cos_sin.data();
  return w;
}

}  // namespace actorllm::golden
