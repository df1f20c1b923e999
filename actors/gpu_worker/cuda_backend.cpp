#include "actors/gpu_worker/cuda_backend.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "actors/gpu_worker/cuda_decoder.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/kv_cache.cuh"
#include "kernels/cuda/nccl_comm.cuh"
#include "model/packed_weights.hpp"

namespace actorllm {

namespace {

cuda::dtype to_dtype(cuda_storage s) {
  switch (s) {
    case cuda_storage::f16:
      return cuda::dtype::f16;
    case cuda_storage::bf16:
      return cuda::dtype::bf16;
    case cuda_storage::f32:
      break;
  }
  return cuda::dtype::f32;
}

std::vector<std::pair<int32_t, int32_t>> as_pairs(const std::vector<block_copy>& copies) {
  std::vector<std::pair<int32_t, int32_t>> pairs;
  pairs.reserve(copies.size());
  for (const auto& c : copies) pairs.emplace_back(c.src, c.dst);
  return pairs;
}

/// The CUDA runtime's current device is per host thread: every entry point sets it.
void use_device(int index) {
  CUDA_CHECK(cudaSetDevice(index));
}

/// The device's view of the caller's deferred masks (none when the caller has none).
std::function<cuda::host_token_masks()> device_masks_of(
    const std::function<const row_token_masks&()>& masks) {
  if (!masks) return {};
  return [&masks] {
    const row_token_masks& m = masks();
    return cuda::host_token_masks{m.rows.data(), m.words.data(),
                                  static_cast<int64_t>(m.rows.size()), m.words_per_row};
  };
}

/// Blocks of `block_size` for `tokens` tokens.
int64_t blocks_for(int64_t tokens, int64_t block_size) {
  return (tokens + block_size - 1) / block_size;
}

}  // namespace

cuda_storage cuda_storage_for(const std::string& dtype, const std::string& checkpoint_dtype) {
  if (dtype == "auto") {
    if (checkpoint_dtype == "bfloat16") return cuda_storage::bf16;
    if (checkpoint_dtype == "float16") return cuda_storage::f16;
    return cuda_storage::f32;
  }
  if (dtype == "float32" || dtype == "float") return cuda_storage::f32;
  if (dtype == "float16" || dtype == "half") return cuda_storage::f16;
  if (dtype == "bfloat16") return cuda_storage::bf16;
  throw std::invalid_argument("--dtype: expected auto, float32, float16 or bfloat16 (got '" +
                              dtype + "')");
}

cuda_cache cuda_cache_for(const std::string& cache_dtype, cuda_storage storage) {
  if (cache_dtype == "fp8" || cache_dtype == "fp8_e4m3") return cuda_cache::fp8_e4m3;
  const std::string own = storage_name(storage);
  if (cache_dtype == "auto" || cache_dtype == own) return cuda_cache::activations;
  throw std::invalid_argument("--kv-cache-dtype " + cache_dtype +
                              ": the CUDA backend keeps its cache in the activations' type (" +
                              own +
                              ", set by --dtype) or in fp8; use --kv-cache-dtype auto or "
                              "fp8, or --device cpu");
}

const char* storage_name(cuda_storage storage) {
  switch (storage) {
    case cuda_storage::f16:
      return "float16";
    case cuda_storage::bf16:
      return "bfloat16";
    case cuda_storage::f32:
      break;
  }
  return "float32";
}

namespace {

cuda::kv_format to_kv_format(cuda_cache cache) {
  return cache == cuda_cache::fp8_e4m3 ? cuda::kv_format::fp8_e4m3 : cuda::kv_format::activations;
}

/// This rank's communicator of its replica's tensor-parallel group (null: one rank). The
/// ranks meet in the host group once: rank 0 makes the NCCL id and the others receive it
/// (with a first byte that says whether rank 0 could make one, so that no rank waits for a
/// join that will not come), then every rank joins on its own device.
std::unique_ptr<cuda::nccl_comm> join_tensor_parallel_group(const model_runner_config& config) {
  const auto& group = config.all_reduce;
  if (!group || group->num_ranks() == 1) return nullptr;
  std::array<uint8_t, 1 + sizeof(cuda::nccl_id)> message{};
  std::string failure;
  if (config.tp_rank == 0) {
    try {
      const cuda::nccl_id id = cuda::nccl_comm::new_id();
      message[0] = 1;
      std::copy(id.begin(), id.end(), message.begin() + 1);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  group->broadcast(config.tp_rank, 0, message.data(), static_cast<int64_t>(message.size()));
  if (message[0] != 1)
    throw std::runtime_error("tensor parallelism on CUDA: rank 0 could not make a NCCL group" +
                             (failure.empty() ? std::string() : ": " + failure));
  cuda::nccl_id id;
  std::copy(message.begin() + 1, message.end(), id.begin());
  return std::make_unique<cuda::nccl_comm>(id, group->num_ranks(), config.tp_rank);
}

cuda_decoder_options decoder_options_for(const model_runner_config& config, cuda::dtype storage,
                                         cuda::nccl_comm* tensor_parallel) {
  cuda_decoder_options options;
  options.storage = storage;
  options.graphs.max_batch = config.cuda_graph_max_batch;
  options.graphs.max_context = config.cuda_graph_max_context;
  if (tensor_parallel) {
    options.all_reduce = [tensor_parallel](void* data, int64_t n, cuda::dtype t,
                                           cudaStream_t stream) {
      tensor_parallel->all_reduce_sum(data, n, t, stream);
    };
    options.tp_size = config.all_reduce->num_ranks();
  }
  return options;
}

}  // namespace

/// While it lives, an abort of the host group (a rank of the replica is gone) also aborts this
/// rank's NCCL communicator, so that collectives waiting on the device for the lost rank end.
class abort_with_host_group {
 public:
  abort_with_host_group(const model_runner_config& config, cuda::nccl_comm* comm)
      : group_(comm ? config.all_reduce : nullptr) {
    if (group_) id_ = group_->add_abort_hook([comm] { comm->abort(); });
  }
  ~abort_with_host_group() {
    if (group_) group_->remove_abort_hook(id_);
  }
  abort_with_host_group(const abort_with_host_group&) = delete;
  abort_with_host_group& operator=(const abort_with_host_group&) = delete;

 private:
  std::shared_ptr<cpu::host_all_reduce> group_;
  int64_t id_ = 0;
};

// Members in construction order: the stream outlives the decoder that uses it.
struct cuda_backend::impl {
  // The engine resolved --kv-cache-dtype (plan_kv refused what the device cannot hold), so a
  // float8 pool here is the only other format.
  impl(const llama_model& model, const model_runner_config& config, cuda::dtype storage)
      : tensor_parallel(join_tensor_parallel_group(config)),
        aborts_with_group(config, tensor_parallel.get()),
        decoder(model, decoder_options_for(config, storage, tensor_parallel.get()), stream.get()) {
    decoder.use_cache(
        config.num_device_blocks, config.block_size,
        to_kv_format(config.cache_dtype == kv_cache_dtype::float8 ? cuda_cache::fp8_e4m3
                                                                  : cuda_cache::activations),
        config.num_cpu_blocks);
  }

  /// A captured graph would replay its collectives on an aborted communicator: no step runs
  /// once the group is gone.
  void require_live_group() const {
    if (tensor_parallel && tensor_parallel->aborted())
      throw std::runtime_error("tensor-parallel group aborted: a rank of this replica is gone");
  }

  // The worker's own stream; non-blocking, so that workers on one device do not wait for each
  // other through the legacy default stream.
  cuda::device_stream stream;
  // Joined before the weights upload, so that a rank failing there cannot leave its peers
  // waiting in the join.
  std::unique_ptr<cuda::nccl_comm> tensor_parallel;
  abort_with_host_group aborts_with_group;  // removed before the communicator goes
  cuda_decoder decoder;
};

cuda_backend::cuda_backend(std::shared_ptr<const llama_model> model,
                           const model_runner_config& config, int device_index,
                           cuda_storage storage)
    : model_(std::move(model)), device_index_(device_index) {
  use_device(device_index_);
  impl_ = std::make_unique<impl>(*model_, config, to_dtype(storage));
}

cuda_backend::~cuda_backend() {
  if (cudaSetDevice(device_index_) != cudaSuccess) cudaGetLastError();  // free where allocated
  // A kernel fault (illegal address, trap) leaves the context unusable, and every later call
  // on this device fails with it: the worker that replaces this one would fail too. This
  // worker owns the device alone (one worker per device), so once its memory is released
  // the device is reset and the next worker starts on a fresh context.
  const cudaError_t state = cudaDeviceSynchronize();
  impl_.reset();
  if (cuda::is_sticky_error(state)) {
    std::fprintf(stderr, "cuda:%d: %s left the context unusable; resetting the device\n",
                 device_index_, cudaGetErrorName(state));
    if (cudaDeviceReset() != cudaSuccess) cudaGetLastError();
  }
}

std::string cuda_backend::device() const {
  return "cuda:" + std::to_string(device_index_);
}

int64_t cuda_backend::graphs_captured() const {
  return impl_->decoder.graphs().captured;
}

int64_t cuda_backend::graph_replays() const {
  return impl_->decoder.graphs().replayed;
}

std::vector<block_copy> cuda_backend::move_blocks(const step_plan& plan) {
  if (!plan.blocks_to_store.empty() || !plan.blocks_to_load.empty())
    throw std::runtime_error(
        "step plan moves blocks of a KV offload tier, which the CUDA "
        "backend does not hold");
  if (plan.blocks_to_swap_out.empty() && plan.blocks_to_swap_in.empty() &&
      plan.blocks_to_copy.empty())
    return {};
  use_device(device_index_);
  // Queued on the cache's copy stream: the forward that follows waits for each layer's blocks
  // just before that layer's attention (device_kv_cache::wait_for_layer), and a failed copy
  // surfaces when it synchronizes.
  impl_->decoder.cache().move_blocks(as_pairs(plan.blocks_to_swap_out),
                                     as_pairs(plan.blocks_to_swap_in),
                                     as_pairs(plan.blocks_to_copy));
  return {};
}

void cuda_backend::forward(const forward_batch& batch, std::vector<float>& logits) {
  use_device(device_index_);
  impl_->require_live_group();
  impl_->decoder.forward(batch, logits);
}

bool cuda_backend::try_forward_greedy(const forward_batch& batch, std::vector<int32_t>& tokens,
                                      const std::function<const row_token_masks&()>& masks) {
  use_device(device_index_);
  impl_->require_live_group();
  const auto device_masks = device_masks_of(masks);
  impl_->decoder.forward_greedy(batch, tokens, device_masks);
  return true;
}

bool cuda_backend::try_forward_sample(const forward_batch& batch,
                                      const std::function<const device_draws&()>& draws,
                                      std::vector<int32_t>& tokens,
                                      const std::function<const row_token_masks&()>& masks) {
  use_device(device_index_);
  impl_->require_live_group();
  // The kernels read the packed rows and edits as they are (kernels/row_sampling.hpp).
  auto device_rows = [&]() {
    const device_draws& d = draws();
    if (d.edit_offsets.size() != d.rows.size() + 1)
      throw std::invalid_argument("device_draws: one edit offset per row, and one more");
    return cuda::host_draws{d.rows.data(), d.edit_offsets.data(), d.edits.data(),
                            static_cast<int64_t>(d.rows.size())};
  };
  const auto device_masks = device_masks_of(masks);
  impl_->decoder.forward_sample(batch, device_rows, tokens, device_masks);
  return true;
}

cuda_memory_profile profile_peak_memory(const llama_model& model, const engine_config& config,
                                        int32_t max_model_len, int device_index,
                                        cuda_storage storage, cuda_cache cache_format) {
  use_device(device_index);
  cuda_memory_profile p;
  p.total = cuda::device_memory_info().total_bytes;
  p.in_use_before = cuda::device_memory_in_use();
  cuda_decoder_options options;
  options.storage = to_dtype(storage);
  cuda_decoder decoder(model, options, nullptr);
  const size_t with_weights = cuda::device_memory_in_use();
  p.weights = with_weights - std::min(p.in_use_before, with_weights);

  // As vLLM's profile run: max_num_batched_tokens tokens split evenly over max_num_seqs
  // sequences (more where one would pass the context limit), every sequence sampling.
  const int64_t block_size = config.cache.block_size;
  const int64_t num_tokens = std::max<int64_t>(1, config.scheduler.max_num_batched_tokens);
  const int64_t max_len =
      std::max<int64_t>(1, std::min<int64_t>(max_model_len, decoder.max_position()));
  const int64_t num_seqs = std::clamp<int64_t>(config.scheduler.max_num_seqs,
                                               (num_tokens + max_len - 1) / max_len, num_tokens);
  forward_batch batch;
  std::vector<int32_t> tokens, table;
  int32_t next_block = 0;
  for (int64_t s = 0; s < num_seqs; ++s) {
    const int64_t len = num_tokens / num_seqs + (s < num_tokens % num_seqs ? 1 : 0);
    tokens.assign(static_cast<size_t>(len), 0);
    table.resize(static_cast<size_t>(blocks_for(len, block_size)));
    for (auto& b : table) b = next_block++;
    batch.add_sequence(tokens, 0, table, static_cast<int32_t>(block_size), true);
  }
  batch.finalize();
  decoder.use_cache(next_block, block_size, to_kv_format(cache_format), 0);
  std::vector<float> logits;
  decoder.forward(batch, logits);
  const cuda::kv_cache_layout& layout = decoder.cache().layout();
  const auto cache_bytes = static_cast<size_t>(layout.num_blocks * layout.bytes_per_block());
  const size_t at_peak = cuda::device_memory_in_use();
  p.in_use_at_peak = at_peak - std::min(cache_bytes, at_peak);
  return p;
}

cuda_backend_provider::cuda_backend_provider(int32_t num_devices, std::string dtype)
    : num_devices_(num_devices), dtype_(std::move(dtype)) {
  cuda_storage_for(dtype_);  // a bad name fails here, before any model loads
}

cuda_storage cuda_backend_provider::storage_for(const llama_model& model) const {
  return cuda_storage_for(dtype_, model.config().torch_dtype);
}

std::string cuda_backend_provider::describe_weights(const llama_model& model) const {
  const cuda_storage storage = storage_for(model);
  std::string kept;
  // Quantized projections stay so on the device (make_cuda_weight_table), read by the W8A16, W4A16
  // and float8-weight kernels; the rest is stored as `storage`.
  if (const auto* packed = model.packed_only() ? model.cpu_weights() : nullptr;
      packed && !packed->layers.empty()) {
    const cpu::weight_format projections = packed->layers.front().qkv.format;
    if (projections == cpu::weight_format::q8 || projections == cpu::weight_format::q4 ||
        projections == cpu::weight_format::fp8)
      kept = std::string("; the ") + cpu::to_string(projections) +
             " projections stay so on the device (where their rows are a multiple of 16 wide)";
  }
  return std::string(storage_name(storage)) + " on the device (--dtype " + dtype_ +
         "; the checkpoint's " + model.config().torch_dtype + ")" + kept +
         ", uploaded from the host's " + model.storage().description;
}

std::string cuda_backend_provider::tensor_parallel_refusal() const {
  return cuda::nccl_available()
             ? std::string()
             : "this build has no NCCL, which tensor parallelism on CUDA needs (install "
               "libnccl-dev and rebuild, or use --device cpu)";
}

std::string cuda_backend_provider::describe_kv_cache(const llama_model& model,
                                                     const engine_config& config) const {
  const cuda_storage storage = storage_for(model);
  if (cuda_cache_for(config.cache.cache_dtype, storage) == cuda_cache::fp8_e4m3)
    return "float8 (E4M3) on the device";
  return std::string(storage_name(storage)) + " on the device (the activations' type)";
}

kv_budget cuda_backend_provider::plan_kv(const llama_model& model, const engine_config& config,
                                         int32_t max_model_len) const {
  const cuda_storage storage = storage_for(model);
  cuda_cache cache_format = cuda_cache::activations;
  try {
    cache_format = cuda_cache_for(config.cache.cache_dtype, storage);
  } catch (const std::invalid_argument& e) {
    kv_budget refused;
    refused.error = e.what();
    return refused;
  }
  const model_config_hf& mc = model.config();
  cuda::kv_cache_layout layout;
  layout.num_layers = mc.num_layers;
  layout.num_blocks = 1;
  layout.block_size = config.cache.block_size;
  layout.num_kv_heads = mc.num_kv_heads;
  layout.head_dim = mc.head_dim;
  layout.type = to_dtype(storage);
  layout.format = to_kv_format(cache_format);
  const int64_t block_bytes = layout.bytes_per_block();
  constexpr int64_t max_blocks = int64_t(1) << 30;

  kv_budget budget;
  budget.block_bytes = block_bytes;
  int64_t weight_bytes = model.num_weights_read_per_token() * cuda::dtype_size(layout.type);
  if (config.cache.num_gpu_blocks_override >= 0) {
    budget.num_device_blocks =
        static_cast<int32_t>(std::min(config.cache.num_gpu_blocks_override, max_blocks));
  } else if (config.cache.kv_cache_memory_bytes >= 0) {
    budget.num_device_blocks = static_cast<int32_t>(
        std::min(config.cache.kv_cache_memory_bytes / block_bytes, max_blocks));
  } else {
    const cuda_memory_profile p =
        profile_peak_memory(model, config, max_model_len, 0, storage, cache_format);
    weight_bytes = static_cast<int64_t>(p.weights);
    const int64_t blocks = cuda::num_gpu_blocks_for(p.total, config.cache.gpu_memory_utilization,
                                                    p.in_use_at_peak, block_bytes);
    budget.num_device_blocks = static_cast<int32_t>(std::min(blocks, max_blocks));
  }
  if (config.cache.num_cpu_blocks_override >= 0) {
    budget.num_cpu_blocks =
        static_cast<int32_t>(std::min(config.cache.num_cpu_blocks_override, max_blocks));
  } else {
    const auto swap_blocks =
        static_cast<int64_t>(config.cache.swap_space_gib * double(int64_t(1) << 30) / block_bytes);
    budget.num_cpu_blocks = static_cast<int32_t>(std::min(swap_blocks, max_blocks));
  }
  check_kv_budget(budget, config.cache.block_size, weight_bytes, max_model_len);
  return budget;
}

std::unique_ptr<forward_backend> cuda_backend_provider::make_backend(
    std::shared_ptr<const llama_model> model, const model_runner_config& config) const {
  if (config.device_index < 0 || config.device_index >= num_devices_)
    throw std::out_of_range("worker placed on cuda:" + std::to_string(config.device_index) +
                            ", and " + std::to_string(num_devices_) + " device(s) are visible");
  const cuda_storage storage = storage_for(*model);
  return std::make_unique<cuda_backend>(std::move(model), config, config.device_index, storage);
}

}  // namespace actorllm
