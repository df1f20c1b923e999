// CUDA kernel benchmark: paged-attention decode and the quantized GEMV in GB/s, the cuBLAS GEMMs
// (and dequantize-then-GEMM) in TFLOP/s, each
// set against what this device measurably does (device-to-device copy bandwidth, the best
// large bf16 GEMM rate). Prints a table, then one JSON line. Without a device it says so and
// exits 0.
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/fill.cuh"
#include "kernels/cuda/fp8_gemm.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/paged_attention.cuh"
#include "kernels/cuda/paged_attention_decode.cuh"
#include "kernels/cuda/paged_attention_prefill.cuh"
#include "kernels/cuda/quantized_linear.cuh"

namespace {

using namespace actorllm::cuda;

/// Mean milliseconds of `iters` runs of fn after `warmup` runs, timed with events.
template <typename F>
double time_ms(F&& fn, int warmup = 3, int iters = 10) {
  for (int i = 0; i < warmup; ++i) fn();
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < iters; ++i) fn();
  CUDA_CHECK(cudaEventRecord(stop));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return ms / iters;
}

struct row {
  std::string name;
  double ms;
  double rate;  // GB/s or TFLOP/s
  const char* unit;
  double fraction;  // of the measured ceiling
};

std::vector<row> rows;
double copy_gbs = 0.0;  // the measured ceiling of memory-bound rows

void report(const std::string& name, double ms, double rate, const char* unit, double ceiling) {
  rows.push_back({name, ms, rate, unit, ceiling > 0 ? rate / ceiling : 0.0});
  std::printf("%-48s %9.3f ms %10.1f %-7s %6.1f%%\n", name.c_str(), ms, rate, unit,
              100.0 * rows.back().fraction);
  std::fflush(stdout);
}

double measure_copy_bandwidth() {
  const size_t bytes = size_t{2} << 30;
  device_buffer a(bytes), b(bytes);
  CUDA_CHECK(cudaMemset(a.get(), 1, bytes));
  const double ms = time_ms(
      [&] { CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice)); });
  const double gbs = 2.0 * bytes / (ms * 1e6);  // bytes read plus bytes written
  report("memcpy d2d 2 GiB (read + write)", ms, gbs, "GB/s", gbs);
  return gbs;
}

double gemm_tflops(gemm_context& gemm, int64_t n, int64_t in, int64_t out, dtype t, double peak,
                   bool is_peak_probe = false) {
  device_buffer x(n * in * dtype_size(t)), w(out * in * dtype_size(t)), y(n * out * dtype_size(t));
  fill_uniform(x.get(), n * in, -1.0f, 1.0f, 1, t, nullptr);
  fill_uniform(w.get(), out * in, -1.0f, 1.0f, 2, t, nullptr);
  const double ms =
      time_ms([&] { gemm.linear(x.get(), w.get(), nullptr, n, in, out, y.get(), t, nullptr); });
  const double tflops = 2.0 * n * in * out / (ms * 1e9);
  const std::string name = std::string("gemm ") + dtype_name(t) + " n=" + std::to_string(n) +
                           " in=" + std::to_string(in) + " out=" + std::to_string(out);
  report(name, ms, tflops, "TFLOP/s", is_peak_probe ? tflops : peak);
  // Decode-like shapes are bound by reading the weights: say that rate too.
  if (n <= 64) {
    const double gb = double(out * in + n * in + n * out) * dtype_size(t) / (ms * 1e6);
    report("  (same, weight bytes read)", ms, gb, "GB/s", copy_gbs);
  }
  return tflops;
}

/// A linear layer on int8 or int4 codes (groups of 128), bf16 activations: quantized_gemv for
/// n rows up to quantized_gemv_max_rows, reported as the bytes of codes and scales read
/// against the copy bandwidth; and, for more rows, dequantize then cuBLAS in TFLOP/s.
void bench_quantized(weight_code code, int64_t n, int64_t in, int64_t out, double peak) {
  std::mt19937 rng(3);
  quantized_matrix host;
  host.code = code;
  host.out_features = out;
  host.in_features = in;
  host.group_size = 128;
  std::vector<uint8_t> codes(static_cast<size_t>(host.code_bytes())), zeros;
  for (auto& c : codes) c = static_cast<uint8_t>(rng());
  std::vector<float> scales(static_cast<size_t>(out * host.num_groups()), 0.01f);
  if (code == weight_code::q4) zeros.assign(scales.size(), 8);
  host.codes = codes.data();
  host.scales = scales.data();
  host.zeros = zeros.empty() ? nullptr : zeros.data();
  const device_quantized_matrix w(host);
  device_buffer x(n * in * 2), y(n * out * 2), dense(out * in * 2);
  fill_uniform(x.get(), n * in, -1.0f, 1.0f, 4, dtype::bf16, nullptr);
  const std::string name = std::string(weight_code_name(code)) + " n=" + std::to_string(n) +
                           " in=" + std::to_string(in) + " out=" + std::to_string(out);
  if (n <= quantized_gemv_max_rows) {
    const double ms = time_ms(
        [&] { quantized_gemv(x.get(), w.view(), nullptr, n, y.get(), dtype::bf16, nullptr); });
    report("quantized_gemv " + name, ms, double(w.bytes()) / (ms * 1e6), "GB/s", copy_gbs);
  } else {
    gemm_context gemm;
    const double ms = time_ms([&] {
      dequantize(w.view(), dense.get(), dtype::bf16, nullptr);
      gemm.linear(x.get(), dense.get(), nullptr, n, in, out, y.get(), dtype::bf16, nullptr);
    });
    report("dequantize + gemm " + name, ms, 2.0 * n * in * out / (ms * 1e9), "TFLOP/s", peak);
  }
}

/// A float8-weight linear layer (one scale per row) on a prefill-sized batch: W8A8 through
/// cuBLASLt, activation quantization and column scaling included, against the peak above;
/// and the weight-only path (dequantize, then the bf16 GEMM) on the same layer.
void bench_fp8(int64_t n, int64_t in, int64_t out, double peak) {
  std::mt19937 rng(5);
  std::vector<uint8_t> codes(static_cast<size_t>(out * in));
  for (auto& c : codes) c = static_cast<uint8_t>(rng() % 0x70);  // finite, moderate values
  std::vector<float> scales(static_cast<size_t>(out), 0.01f);
  quantized_matrix host{weight_code::fp8, out,           in,      in,
                        codes.data(),     scales.data(), nullptr, nullptr};
  const device_quantized_matrix w(host);
  device_buffer x(n * in * 2), y(n * out * 2), dense(out * in * 2);
  fill_uniform(x.get(), n * in, -1.0f, 1.0f, 9, dtype::bf16, nullptr);
  const std::string shape =
      " n=" + std::to_string(n) + " in=" + std::to_string(in) + " out=" + std::to_string(out);
  fp8_gemm w8a8;
  const double ms =
      time_ms([&] { w8a8.linear(x.get(), w.view(), nullptr, n, y.get(), dtype::bf16, nullptr); });
  report("fp8 W8A8 (cuBLASLt)" + shape, ms, 2.0 * n * in * out / (ms * 1e9), "TFLOP/s", peak);
  gemm_context gemm;
  const double dense_ms = time_ms([&] {
    dequantize(w.view(), dense.get(), dtype::bf16, nullptr);
    gemm.linear(x.get(), dense.get(), nullptr, n, in, out, y.get(), dtype::bf16, nullptr);
  });
  report("fp8 dequantize + bf16 gemm" + shape, dense_ms, 2.0 * n * in * out / (dense_ms * 1e9),
         "TFLOP/s", peak);
}

/// Decode attention over a batch of `num_seqs` contexts of `context` tokens each.
void bench_decode(int64_t num_seqs, int64_t context, decode_path path, int64_t num_heads = 32) {
  const int64_t num_kv_heads = 8, head_dim = 128, block_size = 16;
  const dtype t = dtype::bf16;
  const int64_t blocks_per_seq = (context + block_size - 1) / block_size;
  const int64_t num_blocks = num_seqs * blocks_per_seq;
  const int64_t cache_elems = num_blocks * num_kv_heads * block_size * head_dim;
  device_buffer k(cache_elems * 2), v(cache_elems * 2);
  device_buffer q(num_seqs * num_heads * head_dim * 2), out(num_seqs * num_heads * head_dim * 2);
  fill_uniform(k.get(), cache_elems, -1.0f, 1.0f, 3, t, nullptr);
  fill_uniform(v.get(), cache_elems, -1.0f, 1.0f, 4, t, nullptr);
  fill_uniform(q.get(), num_seqs * num_heads * head_dim, -1.0f, 1.0f, 5, t, nullptr);
  // Each sequence's blocks interleaved with the others', as after a while of serving.
  std::vector<int32_t> tables(num_seqs * blocks_per_seq), seq_lens(num_seqs, int32_t(context)),
      qsl(num_seqs + 1);
  for (int64_t s = 0; s < num_seqs; ++s)
    for (int64_t b = 0; b < blocks_per_seq; ++b)
      tables[s * blocks_per_seq + b] = int32_t(b * num_seqs + s);
  for (int64_t s = 0; s <= num_seqs; ++s) qsl[s] = int32_t(s);
  device_buffer d_tables(tables.size() * 4), d_lens(seq_lens.size() * 4), d_qsl(qsl.size() * 4);
  d_tables.upload(tables.data(), tables.size() * 4);
  d_lens.upload(seq_lens.data(), seq_lens.size() * 4);
  d_qsl.upload(qsl.data(), qsl.size() * 4);
  paged_batch batch;
  batch.query_start_loc = d_qsl.as<int32_t>();
  batch.seq_lens = d_lens.as<int32_t>();
  batch.block_tables = d_tables.as<int32_t>();
  batch.num_seqs = num_seqs;
  batch.max_blocks_per_seq = blocks_per_seq;
  batch.num_tokens = num_seqs;
  batch.max_query_len = 1;
  batch.max_seq_len = context;
  device_buffer workspace(
      paged_attention_decode_workspace_bytes(num_seqs, num_heads, head_dim, context));
  const float scale = 0.08838834764831845f;
  const double ms = time_ms([&] {
    paged_attention_decode(q.get(), k.get(), v.get(), batch, num_heads, num_kv_heads, head_dim,
                           block_size, scale, out.get(), t, nullptr, path, workspace.get(),
                           workspace.size());
  });
  const double bytes = 2.0 * num_seqs * context * num_kv_heads * head_dim * 2;  // K and V
  const char* path_name = path == decode_path::v1 ? "v1" : path == decode_path::v2 ? "v2" : "auto";
  report("decode bf16 " + std::string(path_name) + " batch=" + std::to_string(num_seqs) +
             " ctx=" + std::to_string(context) + " " + std::to_string(num_heads) + "/8 heads d128",
         ms, bytes / (ms * 1e6), "GB/s", copy_gbs);
}

/// Prefill attention: `num_seqs` prompts of `len` tokens, causal, bf16, on `kernel`.
void bench_prefill(int64_t num_seqs, int64_t len, double peak_tflops, prefill_path kernel) {
  const int64_t num_heads = 32, num_kv_heads = 8, head_dim = 128, block_size = 16;
  const dtype t = dtype::bf16;
  const int64_t blocks_per_seq = (len + block_size - 1) / block_size;
  const int64_t cache_elems = num_seqs * blocks_per_seq * num_kv_heads * block_size * head_dim;
  const int64_t q_elems = num_seqs * len * num_heads * head_dim;
  device_buffer k(cache_elems * 2), v(cache_elems * 2), q(q_elems * 2), out(q_elems * 2);
  fill_uniform(k.get(), cache_elems, -1.0f, 1.0f, 6, t, nullptr);
  fill_uniform(v.get(), cache_elems, -1.0f, 1.0f, 7, t, nullptr);
  fill_uniform(q.get(), q_elems, -1.0f, 1.0f, 8, t, nullptr);
  std::vector<int32_t> tables(num_seqs * blocks_per_seq), lens(num_seqs, int32_t(len)),
      qsl(num_seqs + 1);
  for (size_t i = 0; i < tables.size(); ++i) tables[i] = int32_t(i);
  for (int64_t s = 0; s <= num_seqs; ++s) qsl[s] = int32_t(s * len);
  device_buffer d_tables(tables.size() * 4), d_lens(lens.size() * 4), d_qsl(qsl.size() * 4);
  d_tables.upload(tables.data(), tables.size() * 4);
  d_lens.upload(lens.data(), lens.size() * 4);
  d_qsl.upload(qsl.data(), qsl.size() * 4);
  paged_batch batch;
  batch.query_start_loc = d_qsl.as<int32_t>();
  batch.seq_lens = d_lens.as<int32_t>();
  batch.block_tables = d_tables.as<int32_t>();
  batch.num_seqs = num_seqs;
  batch.max_blocks_per_seq = blocks_per_seq;
  batch.num_tokens = num_seqs * len;
  batch.max_query_len = len;
  batch.max_seq_len = len;
  const double ms = time_ms(
      [&] {
        paged_attention_prefill(q.get(), k.get(), v.get(), batch, num_heads, num_kv_heads, head_dim,
                                block_size, 0.0884f, out.get(), t, nullptr, kernel);
      },
      1, 3);
  // Causal: about half of the len x len scores, two matmuls of 2 * head_dim flops each.
  const double flops = 4.0 * num_seqs * num_heads * head_dim * (len * (len + 1) / 2.0);
  report("prefill bf16 " + std::to_string(num_seqs) + "x" + std::to_string(len) +
             " 32/8 heads d128 (" +
             (kernel == prefill_path::tensor_cores ? "tensor cores" : "cuda cores") + ")",
         ms, flops / (ms * 1e9), "TFLOP/s", peak_tflops);
}

}  // namespace

int main() {
  if (cuda_device_count() == 0) {
    std::printf("cuda_kernels_bench: no CUDA device here; nothing to measure\n");
    std::printf("{\"bench\":\"cuda_kernels\",\"skipped\":\"no CUDA device\"}\n");
    return 0;
  }
  try {
    std::printf("device: %s\n", device_description().c_str());
    std::printf("%-48s %12s %18s %7s\n", "case", "time", "rate", "of peak");
    copy_gbs = measure_copy_bandwidth();

    gemm_context gemm;
    const double peak = gemm_tflops(gemm, 8192, 8192, 8192, dtype::bf16, 0.0, true);
    gemm_tflops(gemm, 4096, 4096, 4096, dtype::bf16, peak);
    gemm_tflops(gemm, 4096, 4096, 4096, dtype::f16, peak);
    gemm_tflops(gemm, 2048, 2048, 2048, dtype::f32, peak);
    for (int64_t n : {1, 8, 64, 256}) gemm_tflops(gemm, n, 4096, 4096, dtype::bf16, peak);
    gemm_tflops(gemm, 64, 4096, 28672, dtype::bf16, peak);  // Llama-3-8B gate_up, batch 64
    for (weight_code code : {weight_code::q8, weight_code::q4}) {
      for (int64_t n : {1, 8, 16}) bench_quantized(code, n, 4096, 4096, peak);
      bench_quantized(code, 1, 4096, 28672, peak);
      bench_quantized(code, 256, 4096, 4096, peak);
    }

    if (fp8_gemm_supported()) {
      bench_fp8(2048, 4096, 4096, peak);
      bench_fp8(2048, 4096, 14336, peak);
    }

    for (int64_t context : {1024, 2048, 4096}) {
      bench_decode(64, context, decode_path::automatic);
      bench_decode(64, context, decode_path::v1);
      bench_decode(64, context, decode_path::v2);
    }
    bench_decode(8, 4096, decode_path::automatic);
    for (int64_t context : {1024, 4096}) bench_decode(64, context, decode_path::automatic, 64);
    bench_prefill(4, 2048, peak, prefill_path::cuda_cores);
    if (tensor_core_prefill_takes(dtype::bf16, 128)) {
      bench_prefill(4, 2048, peak, prefill_path::tensor_cores);
      bench_prefill(1, 8192, peak, prefill_path::tensor_cores);
    }

    std::printf(
        "{\"bench\":\"cuda_kernels\",\"device\":\"%s\",\"copy_gbs\":%.1f,"
        "\"gemm_peak_tflops\":%.1f,\"rows\":[",
        device_description().c_str(), copy_gbs, peak);
    for (size_t i = 0; i < rows.size(); ++i)
      std::printf("%s{\"name\":\"%s\",\"ms\":%.4f,\"rate\":%.2f,\"unit\":\"%s\",\"fraction\":%.4f}",
                  i ? "," : "", rows[i].name.c_str(), rows[i].ms, rows[i].rate, rows[i].unit,
                  rows[i].fraction);
    std::printf("]}\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_kernels_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
