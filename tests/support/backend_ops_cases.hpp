#pragma once
/// The backend-ops table's cases: each forward op run on a backend_under_test over one step
/// of three sequences (a prefill from position 0, a decode at position 9, a chunk at 4..6; 4
/// query heads over 2 KV heads, blocks of 4), compared with the float64 reference. Shared by
/// the CPU table (tests/kernels) and the CUDA one (tests/cuda).
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/forward_ops.hpp"
#include "tests/support/backend_ops_harness.hpp"

namespace actorllm::testing::backend_ops {

constexpr int64_t num_layers = 2, num_blocks = 12, block_size = 4;
constexpr float eps = 1e-5f;

inline forward_dims dims() {
  forward_dims d;
  d.hidden = 64;
  d.num_heads = 4;
  d.num_kv_heads = 2;
  d.head_dim = 16;
  d.intermediate = 64;
  d.vocab = 40;
  return d;
}

/// The step's rows and the arrays they point into (not copyable: rows point into it).
struct step {
  std::vector<int32_t> tokens, positions, query_start{0}, seq_lens, tables, logits_rows,
      hidden_rows, adapters;
  std::vector<int64_t> slots;
  int64_t max_blocks = 3;
  step_rows rows;

  step() {
    struct sequence {
      int32_t new_tokens, start;
      std::vector<int32_t> blocks;
    };
    const sequence seqs[] = {{5, 0, {0, 1}}, {1, 9, {2, 3, 4}}, {3, 4, {5, 6}}};
    for (const auto& s : seqs) {
      for (int32_t i = 0; i < s.new_tokens; ++i) {
        const int32_t pos = s.start + i;
        tokens.push_back((7 * static_cast<int32_t>(tokens.size()) + 3) % 40);
        positions.push_back(pos);
        slots.push_back(int64_t{s.blocks[pos / block_size]} * block_size + pos % block_size);
      }
      query_start.push_back(static_cast<int32_t>(tokens.size()));
      seq_lens.push_back(s.start + s.new_tokens);
      for (int64_t b = 0; b < max_blocks; ++b)
        tables.push_back(b < static_cast<int64_t>(s.blocks.size()) ? s.blocks[b] : 0);
    }
    logits_rows = {4, 5, 8};
    hidden_rows = {0, 8};
    point_rows();
  }
  step(const step&) = delete;
  step& operator=(const step&) = delete;
  int64_t n() const { return rows.num_tokens; }
  /// A plain decode step instead: each of three sequences takes one token at the end of its
  /// context, `round` tokens longer than at round 0 (5, 9 and 2), and every row samples.
  void as_decode(int32_t round) {
    const int32_t lens[] = {5 + round, 9 + round, 2 + round};
    tokens.clear();
    positions.clear();
    slots.clear();
    query_start = {0};
    seq_lens.clear();
    tables.clear();
    for (int32_t seq = 0; seq < 3; ++seq) {
      const int32_t pos = lens[seq] - 1, first_block = 3 * seq;
      tokens.push_back((11 * seq + 5 * round + 1) % 40);
      positions.push_back(pos);
      slots.push_back(int64_t{first_block + pos / block_size} * block_size + pos % block_size);
      query_start.push_back(seq + 1);
      seq_lens.push_back(lens[seq]);
      for (int32_t b = 0; b < max_blocks; ++b) tables.push_back(first_block + b);
    }
    logits_rows = {0, 1, 2};
    hidden_rows.clear();
    point_rows();
  }

 private:
  void point_rows() {
    rows = step_rows{};
    rows.token_ids = tokens.data();
    rows.positions = positions.data();
    rows.slot_mapping = slots.data();
    rows.query_start_loc = query_start.data();
    rows.seq_lens = seq_lens.data();
    rows.block_tables = tables.data();
    rows.num_tokens = static_cast<int64_t>(tokens.size());
    rows.num_seqs = static_cast<int64_t>(seq_lens.size());
    rows.max_blocks_per_seq = max_blocks;
    rows.logits_indices = logits_rows.data();
    rows.num_logits = static_cast<int64_t>(logits_rows.size());
    rows.hidden_indices = hidden_rows.data();
    rows.num_hidden = static_cast<int64_t>(hidden_rows.size());
  }

 public:
  /// Two adapters: rows alternate adapter 0, the base model, adapter 1.
  void use_adapters() {
    adapters.clear();
    for (int64_t t = 0; t < n(); ++t) adapters.push_back(static_cast<int32_t>(t % 3) - 1);
    rows.adapter_of_row = adapters.data();
    rows.num_adapters = 2;
  }
};

/// A rotary table (rows, head_dim): head_dim / 2 cosines then as many sines per position.
inline std::vector<float> rotary_table(int64_t rows, int64_t head_dim) {
  std::vector<float> t(rows * head_dim);
  const int64_t half = head_dim / 2;
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * std::pow(10000.0, -2.0 * i / head_dim);
      t[p * head_dim + i] = static_cast<float>(std::cos(angle));
      t[p * head_dim + half + i] = static_cast<float>(std::sin(angle));
    }
  return t;
}

inline std::vector<float> read_rows(forward_ops& ops, act_buffer b, int64_t rows, int64_t width) {
  std::vector<float> out(rows * width);
  ops.read(b, out.data(), rows);
  return out;
}

/// An op's result: its error over the reference's RMS and the bound it must meet.
struct verdict {
  double error;
  double bound;
};
using op_case = std::function<std::vector<verdict>(backend_under_test&)>;

/// LoRA pairs of `count` adapters for a projection (out, in); adapter 1's rank is 0 where
/// `second_empty` (it leaves the projection alone).
struct lora_set {
  std::vector<std::vector<float>> a, b_t;
  std::vector<op_lora_pair> pairs;
  int64_t in = 0, out = 0;

  lora_set(int64_t in_features, int64_t out_features, uint32_t seed, bool second_empty = false)
      : in(in_features), out(out_features) {
    for (int adapter = 0; adapter < 2; ++adapter) {
      const int64_t rank = adapter == 1 && second_empty ? 0 : 2 + adapter;
      a.push_back(random_values(rank * in, seed + adapter, 0.3f));
      b_t.push_back(random_values(rank * out, seed + 10 + adapter, 0.3f));
      pairs.push_back({rank ? a.back().data() : nullptr, rank ? b_t.back().data() : nullptr, rank,
                       0.5f + adapter});
    }
  }
  /// y (rows, out at stride) += each row's adapter update for x (rows, in).
  void apply(const std::vector<double>& x, const std::vector<int32_t>& adapter_of_row,
             std::vector<double>& y, int64_t y_stride, int64_t y_offset = 0) const {
    for (size_t t = 0; t < adapter_of_row.size(); ++t) {
      const int32_t k = adapter_of_row[t];
      if (k < 0 || pairs[k].rank == 0) continue;
      const op_lora_pair& p = pairs[k];
      for (int64_t r = 0; r < p.rank; ++r) {
        double shrunk = 0;
        for (int64_t i = 0; i < in; ++i) shrunk += x[t * in + i] * p.a[r * in + i];
        for (int64_t o = 0; o < out; ++o)
          y[t * y_stride + y_offset + o] += p.scaling * shrunk * p.b_t[r * out + o];
      }
    }
  }
};

/// The reference attention of the step's queries over a float32 copy of one layer's cache.
inline std::vector<double> attention_reference(const step& s, const std::vector<float>& q,
                                               const std::vector<float>& k_cache,
                                               const std::vector<float>& v_cache,
                                               const attention_params& p) {
  const forward_dims d = dims();
  const int64_t group = d.num_heads / d.num_kv_heads, hd = d.head_dim;
  std::vector<double> out(s.n() * d.q_size(), 0.0);
  auto at = [&](const std::vector<float>& cache, int64_t seq, int64_t pos, int64_t kv) {
    const int64_t block = s.tables[seq * s.max_blocks + pos / block_size];
    return cache.data() + ((block * d.num_kv_heads + kv) * block_size + pos % block_size) * hd;
  };
  for (int64_t seq = 0; seq < s.rows.num_seqs; ++seq) {
    const int32_t first = s.query_start[seq], last = s.query_start[seq + 1];
    for (int32_t t = first; t < last; ++t) {
      const int64_t pos = s.seq_lens[seq] - (last - t);
      const int64_t lo =
          p.sliding_window > 0 ? std::max<int64_t>(0, pos - p.sliding_window + 1) : 0;
      for (int64_t h = 0; h < d.num_heads; ++h) {
        const float* qh = q.data() + (t * d.num_heads + h) * hd;
        std::vector<double> scores;
        double top = -INFINITY;
        for (int64_t j = lo; j <= pos; ++j) {
          const float* kj = at(k_cache, seq, j, h / group);
          double dot = 0;
          for (int64_t i = 0; i < hd; ++i) dot += double{qh[i]} * kj[i];
          double score = dot * p.scale;
          if (p.softcap > 0) score = p.softcap * std::tanh(score / p.softcap);
          scores.push_back(score);
          top = std::max(top, score);
        }
        double sum = 0;
        for (double& sc : scores) sum += sc = std::exp(sc - top);
        double* o = out.data() + (t * d.num_heads + h) * hd;
        for (int64_t j = lo; j <= pos; ++j) {
          const float* vj = at(v_cache, seq, j, h / group);
          for (int64_t i = 0; i < hd; ++i) o[i] += scores[j - lo] / sum * vj[i];
        }
      }
    }
  }
  return out;
}

/// Every op's case, by name.
inline std::vector<std::pair<std::string, op_case>> op_cases() {
  std::vector<std::pair<std::string, op_case>> cases;
  const forward_dims d = dims();
  const int64_t dim = d.hidden;

  cases.emplace_back("embed", [d, dim](backend_under_test& be) {
    step s;
    std::vector<float> effective;
    const op_weight table = be.embedding(random_values(d.vocab * dim, 1), d.vocab, dim, effective);
    forward_ops& ops = be.ops(d, num_layers, num_blocks, block_size);
    ops.begin_step(s.rows);
    ops.embed(table, 1.5f);
    std::vector<double> want(s.n() * dim);
    for (int64_t t = 0; t < s.n(); ++t)
      for (int64_t i = 0; i < dim; ++i) want[t * dim + i] = 1.5 * effective[s.tokens[t] * dim + i];
    double x_max = 0;
    for (float v : read_rows(ops, act_buffer::x, s.n(), dim))
      x_max = std::max(x_max, double{std::fabs(v)});
    return std::vector<verdict>{
        {error_over_rms(read_rows(ops, act_buffer::residual, s.n(), dim), want),
         be.tolerance(false, false)},
        {x_max, 0.0}};
  });

  cases.emplace_back("add_rms_norm", [d, dim](backend_under_test& be) {
    step s;
    const auto w = random_values(dim, 2, 2.0f);
    const op_weight weight = be.vector(w);
    forward_ops& ops = be.ops(d, num_layers, num_blocks, block_size);
    ops.begin_step(s.rows);
    const auto x = random_values(s.n() * dim, 3), residual = random_values(s.n() * dim, 4);
    ops.write(act_buffer::x, x.data(), s.n());
    ops.write(act_buffer::residual, residual.data(), s.n());
    ops.add_rms_norm(weight, eps);
    std::vector<double> sum(x.size());
    for (size_t i = 0; i < x.size(); ++i) sum[i] = double{x[i]} + residual[i];
    const double tol = be.tolerance(false, false);
    return std::vector<verdict>{
        {error_over_rms(read_rows(ops, act_buffer::residual, s.n(), dim), sum), tol},
        {error_over_rms(read_rows(ops, act_buffer::x, s.n(), dim),
                        reference::rms_norm(sum, w, s.n(), dim, eps)),
         tol}};
  });

  cases.emplace_back("rms_norm", [d, dim](backend_under_test& be) {
    step s;
    const auto w = random_values(dim, 5, 2.0f);
    const op_weight weight = be.vector(w);
    forward_ops& ops = be.ops(d, num_layers, num_blocks, block_size);
    ops.begin_step(s.rows);
    const auto x = random_values(s.n() * dim, 6);
    ops.write(act_buffer::x, x.data(), s.n());
    ops.rms_norm(act_buffer::x, weight, eps);
    return std::vector<verdict>{
        {error_over_rms(read_rows(ops, act_buffer::x, s.n(), dim),
                        reference::rms_norm(reference::widen(x), w, s.n(), dim, eps)),
         be.tolerance(false, false)}};
  });

  cases.emplace_back("qkv_to_cache", [d, dim](backend_under_test& be) {
    step s;
    if (be.serves_lora()) s.use_adapters();
    const int64_t q_size = d.q_size(), kv_size = d.kv_size(), hd = d.head_dim;
    const int64_t out = q_size + 2 * kv_size;
    std::vector<float> w_eff;
    const auto bias = random_values(out, 8, 0.5f);
    const op_linear qkv = be.linear(random_values(out * dim, 7, 0.3f), out, dim, &bias, w_eff);
    const auto q_norm = random_values(hd, 9, 1.5f), k_norm = random_values(hd, 10, 1.5f);
    const auto table = rotary_table(16, hd);
    const lora_set q_lora(dim, q_size, 20), v_lora(dim, kv_size, 30, true);
    qkv_params p;
    p.q_norm = be.vector(q_norm);
    p.k_norm = be.vector(k_norm);
    p.rotary = be.rotary(table);
    p.eps = eps;
    p.q_lora = q_lora.pairs.data();
    p.v_lora = v_lora.pairs.data();
    forward_ops& ops = be.ops(d, num_layers, num_blocks, block_size);
    ops.begin_step(s.rows);
    const auto x = random_values(s.n() * dim, 11);
    ops.write(act_buffer::x, x.data(), s.n());
    ops.qkv_to_cache(1, qkv, p);

    const auto xd = reference::widen(x);
    auto y = reference::linear(xd, w_eff, &bias, s.n(), dim, out);
    q_lora.apply(xd, s.adapters, y, out, 0);
    v_lora.apply(xd, s.adapters, y, out, q_size + kv_size);
    std::vector<double> q(s.n() * q_size), k(s.n() * kv_size), v(s.n() * kv_size);
    for (int64_t t = 0; t < s.n(); ++t) {
      std::copy_n(y.begin() + t * out, q_size, q.begin() + t * q_size);
      std::copy_n(y.begin() + t * out + q_size, kv_size, k.begin() + t * kv_size);
      std::copy_n(y.begin() + t * out + q_size + kv_size, kv_size, v.begin() + t * kv_size);
    }
    q = reference::rms_norm(q, q_norm, s.n() * d.num_heads, hd, eps);
    k = reference::rms_norm(k, k_norm, s.n() * d.num_kv_heads, hd, eps);
    reference::rotate(q, s.n(), d.num_heads, hd, s.positions, table);
    reference::rotate(k, s.n(), d.num_kv_heads, hd, s.positions, table);
    // The cache rows of the step's slots, (tokens, kv_heads, head_dim).
    auto slot_rows = [&](const std::vector<float>& cache) {
      std::vector<float> rows(s.n() * kv_size);
      for (int64_t t = 0; t < s.n(); ++t) {
        const int64_t block = s.slots[t] / block_size, offset = s.slots[t] % block_size;
        for (int64_t h = 0; h < d.num_kv_heads; ++h)
          for (int64_t i = 0; i < hd; ++i)
            rows[(t * d.num_kv_heads + h) * hd + i] =
                cache[((block * d.num_kv_heads + h) * block_size + offset) * hd + i];
      }
      return rows;
    };
    return std::vector<verdict>{
        {error_over_rms(read_rows(ops, act_buffer::q, s.n(), q_size), q),
         be.tolerance(false, true)},
        {error_over_rms(slot_rows(be.read_cache(1, false)), k), be.tolerance(true, true)},
        {error_over_rms(slot_rows(be.read_cache(1, true)), v), be.tolerance(true, true)}};
  });

  for (const attention_params p :
       {attention_params{0.25f, 0, 0.0f}, attention_params{0.25f, 3, 5.0f}}) {
    const std::string name = p.sliding_window > 0 ? "attention-win" : "attention";
    cases.emplace_back(name, [d, p](backend_under_test& be) {
      step s;
      forward_ops& ops = be.ops(d, num_layers, num_blocks, block_size);
      const int64_t cache_size = num_blocks * d.num_kv_heads * block_size * d.head_dim;
      be.write_cache(0, false, random_values(cache_size, 12, 2.0f));
      be.write_cache(0, true, random_values(cache_size, 13));
      ops.begin_step(s.rows);
      const auto q = random_values(s.n() * d.q_size(), 14);
      ops.write(act_buffer::q, q.data(), s.n());
      ops.attention(0, p);
      const auto want =
          attention_reference(s, q, be.read_cache(0, false), be.read_cache(0, true), p);
      return std::vector<verdict>{
          {error_over_rms(read_rows(ops, act_buffer::attention, s.n(), d.q_size()), want),
           be.tolerance(false, false)}};
    });
  }

  cases.emplace_back("linear", [d, dim](backend_under_test& be) {
    step s;
    if (be.serves_lora()) s.use_adapters();
    const int64_t in = d.q_size();
    std::vector<float> w_eff;
    const op_linear o = be.linear(random_values(dim * in, 15, 0.3f), dim, in, nullptr, w_eff);
    const lora_set lora(in, dim, 40);
    forward_ops& ops = be.ops(d, num_layers, num_blocks, block_size);
    ops.begin_step(s.rows);
    const auto a = random_values(s.n() * in, 16);
    ops.write(act_buffer::attention, a.data(), s.n());
    ops.linear(act_buffer::attention, o, act_buffer::x, lora.pairs.data());
    const auto ad = reference::widen(a);
    auto want = reference::linear(ad, w_eff, nullptr, s.n(), in, dim);
    lora.apply(ad, s.adapters, want, dim);
    return std::vector<verdict>{{error_over_rms(read_rows(ops, act_buffer::x, s.n(), dim), want),
                                 be.tolerance(false, true)}};
  });

  for (const gate_activation activation : {gate_activation::silu, gate_activation::gelu_tanh}) {
    const std::string name = activation == gate_activation::silu ? "mlp-silu" : "mlp-gelu";
    cases.emplace_back(name, [d, dim, activation](backend_under_test& be) {
      step s;
      if (be.serves_lora()) s.use_adapters();
      const int64_t width = d.intermediate;
      std::vector<float> gu_eff, down_eff;
      mlp_params p;
      p.gate_up =
          be.linear(random_values(2 * width * dim, 17, 0.3f), 2 * width, dim, nullptr, gu_eff);
      p.down = be.linear(random_values(dim * width, 18, 0.3f), dim, width, nullptr, down_eff);
      p.width = width;
      p.activation = activation;
      const lora_set gate(dim, width, 50), down(width, dim, 60);
      p.gate_lora = gate.pairs.data();
      p.down_lora = down.pairs.data();
      forward_ops& ops = be.ops(d, num_layers, num_blocks, block_size);
      ops.begin_step(s.rows);
      const auto x = random_values(s.n() * dim, 19);
      ops.write(act_buffer::x, x.data(), s.n());
      ops.mlp(p);
      const auto xd = reference::widen(x);
      auto gu = reference::linear(xd, gu_eff, nullptr, s.n(), dim, 2 * width);
      gate.apply(xd, s.adapters, gu, 2 * width, 0);
      std::vector<double> act(s.n() * width);
      for (int64_t t = 0; t < s.n(); ++t)
        for (int64_t i = 0; i < width; ++i) {
          const double g = gu[t * 2 * width + i], u = gu[t * 2 * width + width + i];
          act[t * width + i] = (activation == gate_activation::gelu_tanh ? reference::gelu_tanh(g)
                                                                         : reference::silu(g)) *
                               u;
        }
      auto want = reference::linear(act, down_eff, nullptr, s.n(), width, dim);
      down.apply(act, s.adapters, want, dim);
      return std::vector<verdict>{{error_over_rms(read_rows(ops, act_buffer::x, s.n(), dim), want),
                                   be.tolerance(false, true)}};
    });
  }

  cases.emplace_back("experts", [d, dim](backend_under_test& be) {
    step s;
    const int64_t num_experts = 4, k = 2, width = 32;
    const auto router = random_values(num_experts * dim, 21, 0.5f);
    std::vector<mlp_params> experts(num_experts);
    std::vector<std::vector<float>> gu_eff(num_experts), down_eff(num_experts);
    for (int64_t e = 0; e < num_experts; ++e) {
      experts[e].gate_up =
          be.expert_linear(random_values(2 * width * dim, 22 + e, 0.3f), 2 * width, dim, gu_eff[e]);
      experts[e].down =
          be.expert_linear(random_values(dim * width, 32 + e, 0.3f), dim, width, down_eff[e]);
      experts[e].width = width;
    }
    std::vector<float> shared_gu, shared_down;
    experts_params p;
    p.router = be.vector(router);
    p.experts = experts.data();
    p.num_experts = num_experts;
    p.top_k = k;
    p.shared.gate_up =
        be.expert_linear(random_values(2 * width * dim, 41, 0.3f), 2 * width, dim, shared_gu);
    p.shared.down = be.expert_linear(random_values(dim * width, 42, 0.3f), dim, width, shared_down);
    p.shared.width = width;
    const auto gate = random_values(dim, 43, 0.5f);
    p.shared_gate = be.vector(gate);
    // The two largest logits, weighted by their softmax over the pair.
    const expert_router top_two = [](const float* logits, int64_t n, int32_t* chosen,
                                     float* weights) {
      for (int64_t t = 0; t < n; ++t) {
        const float* l = logits + t * 4;
        int32_t a = 0;
        for (int32_t e = 1; e < 4; ++e) a = l[e] > l[a] ? e : a;
        int32_t b = a == 0 ? 1 : 0;
        for (int32_t e = 0; e < 4; ++e) b = e != a && l[e] > l[b] ? e : b;
        const float wb = 1.0f / (1.0f + std::exp(l[a] - l[b]));
        chosen[2 * t] = a, chosen[2 * t + 1] = b;
        weights[2 * t] = 1.0f - wb, weights[2 * t + 1] = wb;
      }
    };
    p.route = &top_two;
    forward_ops& ops = be.ops(d, num_layers, num_blocks, block_size);
    ops.begin_step(s.rows);
    const auto x = random_values(s.n() * dim, 44);
    ops.write(act_buffer::x, x.data(), s.n());
    ops.experts(p, gate_activation::silu);

    const auto xd = reference::widen(x);
    const auto logits = reference::linear(xd, router, nullptr, s.n(), dim, num_experts);
    std::vector<float> logits32(logits.begin(), logits.end());
    std::vector<int32_t> chosen(s.n() * k);
    std::vector<float> weights(s.n() * k);
    top_two(logits32.data(), s.n(), chosen.data(), weights.data());
    std::vector<double> want(s.n() * dim, 0.0);
    for (int64_t t = 0; t < s.n(); ++t) {
      const std::vector<double> row(xd.begin() + t * dim, xd.begin() + (t + 1) * dim);
      for (int64_t c = 0; c < k; ++c) {
        const int32_t e = chosen[t * k + c];
        const auto y =
            reference::mlp(row, gu_eff[e], down_eff[e], 1, dim, width, gate_activation::silu);
        for (int64_t i = 0; i < dim; ++i) want[t * dim + i] += weights[t * k + c] * y[i];
      }
      const auto shared =
          reference::mlp(row, shared_gu, shared_down, 1, dim, width, gate_activation::silu);
      double g = 0;
      for (int64_t i = 0; i < dim; ++i) g += row[i] * gate[i];
      for (int64_t i = 0; i < dim; ++i) want[t * dim + i] += shared[i] / (1.0 + std::exp(-g));
    }
    return std::vector<verdict>{{error_over_rms(read_rows(ops, act_buffer::x, s.n(), dim), want),
                                 be.tolerance(false, true)}};
  });

  // Three decode steps of one shape, every op between begin_step and end_step and nothing read
  // before the step ends: what a backend that records a step's ops must compute like any other
  // (CUDA graphs: the first step runs op by op, the second is captured, the third replays).
  cases.emplace_back("decode_steps", [d, dim](backend_under_test& be) {
    const int64_t q_size = d.q_size(), kv_size = d.kv_size(), hd = d.head_dim;
    const int64_t out = q_size + 2 * kv_size;
    std::vector<float> embed_eff, qkv_eff, o_eff, head_eff;
    const op_weight table = be.embedding(random_values(d.vocab * dim, 60), d.vocab, dim, embed_eff);
    const auto input_norm = random_values(dim, 61, 2.0f), final_norm = random_values(dim, 62, 2.0f);
    const op_weight input_norm_w = be.vector(input_norm), final_norm_w = be.vector(final_norm);
    const op_linear qkv = be.linear(random_values(out * dim, 63, 0.3f), out, dim, nullptr, qkv_eff);
    const op_linear o =
        be.linear(random_values(dim * q_size, 64, 0.3f), dim, q_size, nullptr, o_eff);
    const op_linear head =
        be.linear(random_values(d.vocab * dim, 65, 0.3f), d.vocab, dim, nullptr, head_eff);
    const auto rotary = rotary_table(16, hd);
    qkv_params qp;
    qp.rotary = be.rotary(rotary);
    qp.eps = eps;
    const attention_params ap{0.25f, 0, 0.0f};
    forward_ops& ops = be.ops(d, num_layers, num_blocks, block_size);
    const int64_t cache_size = num_blocks * d.num_kv_heads * block_size * hd;
    be.write_cache(0, false, random_values(cache_size, 66, 2.0f));
    be.write_cache(0, true, random_values(cache_size, 67));
    // The reference's own cache: the contexts as written, then each step's k and v.
    std::vector<float> k_cache = be.read_cache(0, false), v_cache = be.read_cache(0, true);
    std::vector<verdict> verdicts;
    for (int32_t round = 0; round < 3; ++round) {
      step s;
      s.as_decode(round);
      ops.begin_step(s.rows);
      ops.embed(table, 1.0f);
      ops.add_rms_norm(input_norm_w, eps);
      ops.qkv_to_cache(0, qkv, qp);
      ops.attention(0, ap);
      ops.linear(act_buffer::attention, o, act_buffer::x, nullptr);
      ops.logits(final_norm_w, eps, head, 0.0f);
      ops.end_step();
      std::vector<float> got(s.rows.num_logits * d.vocab);
      ops.read_logits(got.data());

      const int64_t n = s.n();
      std::vector<double> residual(n * dim);
      for (int64_t t = 0; t < n; ++t)
        std::copy_n(embed_eff.begin() + s.tokens[t] * dim, dim, residual.begin() + t * dim);
      const auto x = reference::rms_norm(residual, input_norm, n, dim, eps);
      const auto y = reference::linear(x, qkv_eff, nullptr, n, dim, out);
      std::vector<double> q(n * q_size), k(n * kv_size), v(n * kv_size);
      for (int64_t t = 0; t < n; ++t) {
        std::copy_n(y.begin() + t * out, q_size, q.begin() + t * q_size);
        std::copy_n(y.begin() + t * out + q_size, kv_size, k.begin() + t * kv_size);
        std::copy_n(y.begin() + t * out + q_size + kv_size, kv_size, v.begin() + t * kv_size);
      }
      reference::rotate(q, n, d.num_heads, hd, s.positions, rotary);
      reference::rotate(k, n, d.num_kv_heads, hd, s.positions, rotary);
      for (int64_t t = 0; t < n; ++t) {
        const int64_t block = s.slots[t] / block_size, offset = s.slots[t] % block_size;
        for (int64_t h = 0; h < d.num_kv_heads; ++h)
          for (int64_t i = 0; i < hd; ++i) {
            const int64_t at = ((block * d.num_kv_heads + h) * block_size + offset) * hd + i;
            k_cache[at] = static_cast<float>(k[(t * d.num_kv_heads + h) * hd + i]);
            v_cache[at] = static_cast<float>(v[(t * d.num_kv_heads + h) * hd + i]);
          }
      }
      // Rounded as the backend's cache holds its elements: through layer 1, which the steps
      // leave alone.
      be.write_cache(1, false, k_cache);
      be.write_cache(1, true, v_cache);
      k_cache = be.read_cache(1, false);
      v_cache = be.read_cache(1, true);
      const std::vector<float> q_rows(q.begin(), q.end());
      const auto attended = attention_reference(s, q_rows, k_cache, v_cache, ap);
      auto summed = reference::linear(attended, o_eff, nullptr, n, q_size, dim);
      for (int64_t i = 0; i < n * dim; ++i) summed[i] += residual[i];
      const auto last = reference::rms_norm(summed, final_norm, n, dim, eps);
      verdicts.push_back(
          {error_over_rms(got, reference::linear(last, head_eff, nullptr, n, dim, d.vocab)),
           be.tolerance(true, true)});
    }
    return verdicts;
  });

  cases.emplace_back("all_reduce", [d, dim](backend_under_test& be) {
    step s;
    forward_ops& ops = be.ops(d, num_layers, num_blocks, block_size);
    ops.begin_step(s.rows);
    const auto x = random_values(s.n() * dim, 45);
    ops.write(act_buffer::x, x.data(), s.n());
    ops.all_reduce();  // one rank: x unchanged
    return std::vector<verdict>{
        {error_over_rms(read_rows(ops, act_buffer::x, s.n(), dim), reference::widen(x)), 0.0}};
  });

  for (const float softcap : {0.0f, 3.0f}) {
    const std::string name = softcap > 0 ? "logits-capped" : "logits";
    cases.emplace_back(name, [d, dim, softcap](backend_under_test& be) {
      step s;
      const auto norm = random_values(dim, 46, 2.0f);
      std::vector<float> head_eff;
      const op_linear head =
          be.linear(random_values(d.vocab * dim, 47, 0.3f), d.vocab, dim, nullptr, head_eff);
      const op_weight final_norm = be.vector(norm);
      forward_ops& ops = be.ops(d, num_layers, num_blocks, block_size);
      ops.begin_step(s.rows);
      const auto x = random_values(s.n() * dim, 48), residual = random_values(s.n() * dim, 49);
      ops.write(act_buffer::x, x.data(), s.n());
      ops.write(act_buffer::residual, residual.data(), s.n());
      ops.logits(final_norm, eps, head, softcap);
      ops.final_hidden(final_norm, eps);
      ops.end_step();
      // x + residual at the given rows, as the final norm reads them.
      const auto summed = [&](const std::vector<int32_t>& rows) {
        std::vector<double> out(rows.size() * dim);
        for (size_t i = 0; i < rows.size(); ++i)
          for (int64_t c = 0; c < dim; ++c)
            out[i * dim + c] = double{x[rows[i] * dim + c]} + residual[rows[i] * dim + c];
        return out;
      };
      const auto hidden = summed(s.hidden_rows);
      const auto last =
          reference::rms_norm(summed(s.logits_rows), norm, s.rows.num_logits, dim, eps);
      auto want = reference::linear(last, head_eff, nullptr, s.rows.num_logits, dim, d.vocab);
      if (softcap > 0)
        for (double& v : want) v = softcap * std::tanh(v / softcap);
      std::vector<float> got(s.rows.num_logits * d.vocab);
      ops.read_logits(got.data());
      return std::vector<verdict>{
          {error_over_rms(got, want), be.tolerance(false, true)},
          {error_over_rms(read_rows(ops, act_buffer::hidden, s.rows.num_hidden, dim),
                          reference::rms_norm(hidden, norm, s.rows.num_hidden, dim, eps)),
           be.tolerance(false, false)}};
    });
  }
  return cases;
}

}  // namespace actorllm::testing::backend_ops
