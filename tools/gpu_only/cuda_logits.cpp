// cuda_logits MODEL_DIR --ids 1,2,3 --out LOGITS.f32 [--dtype f32|f16|bf16] [--greedy N] [--cpu]
//
// One prompt through a model on the GPU as the server runs it (llama_model loads the folder,
// the worker's cuda_decoder computes), for comparison with an independent implementation
// (scripts/transformers_reference.py runs Hugging Face transformers on the same device):
// the logits at every position of the prompt, written to LOGITS.f32 as little-endian float32
// rows (positions x vocab), then N tokens decoded greedily one step at a time. Prints one JSON
// line: {"model", "backend", "dtype", "positions", "vocab", "greedy": [ids]}.
// --cpu runs llama_model::forward on the CPU instead (the project's own reference, and a way to
// run this tool without a device). Without a CUDA device (and without --cpu) it prints
// {"skipped": "no CUDA device"} and exits 0. Exit status 1 on any error, named on stderr.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/gpu_only/model_under_test.hpp"

namespace actorllm::golden {
namespace {

/// "1,2,3" as ids; each must index the vocabulary.
tokens_t parse_ids(const std::string& text, int64_t vocab) {
  tokens_t ids;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const long long id = std::stoll(text.substr(at, end - at));
    if (id < 0 || id >= vocab)
      throw std::runtime_error("--ids: " + std::to_string(id) + " is outside the vocabulary of " +
                               std::to_string(vocab));
    ids.push_back(static_cast<int32_t>(id));
    at = end + 1;
  }
  if (ids.empty()) throw std::runtime_error("--ids: no ids");
  return ids;
}

cuda::dtype dtype_of(const std::string& name) {
  if (name == "f32") return cuda::dtype::f32;
  if (name == "bf16") return cuda::dtype::bf16;
  if (name == "f16") return cuda::dtype::f16;
  throw std::runtime_error("unknown --dtype " + name + " (f32, f16 or bf16)");
}

int run(int argc, char** argv) {
  std::string model_dir, ids_text, out_path, dtype_name = "f32";
  int greedy_tokens = 0;
  bool use_cpu = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--cpu") {
      use_cpu = true;
    } else if (a == "--ids" && has_value) {
      ids_text = argv[++i];
    } else if (a == "--out" && has_value) {
      out_path = argv[++i];
    } else if (a == "--dtype" && has_value) {
      dtype_name = argv[++i];
    } else if (a == "--greedy" && has_value) {
      greedy_tokens = std::stoi(argv[++i]);
    } else if (model_dir.empty() && a.rfind("--", 0) != 0) {
      model_dir = a;
    } else {
      throw std::runtime_error("unexpected argument " + a);
    }
  }
  if (model_dir.empty() || ids_text.empty() || out_path.empty()) {
    std::fprintf(stderr,
                 "usage: cuda_logits MODEL_DIR --ids 1,2,3 --out LOGITS.f32 "
                 "[--dtype f32|f16|bf16] [--greedy N] [--cpu]\n");
    return 2;
  }
  const cuda::dtype storage = dtype_of(dtype_name);
  if (!use_cpu && cuda::cuda_device_count() == 0) {
    std::printf("{\"skipped\": \"no CUDA device\"}\n");
    return 0;
  }

  const llama_model model(model_dir);
  const int64_t vocab = model.config().vocab_size;
  const tokens_t prompt = parse_ids(ids_text, vocab);
  const int64_t max_position = max_position_of(model);
  if (static_cast<int64_t>(prompt.size()) + greedy_tokens > max_position)
    throw std::runtime_error("the prompt and --greedy pass the model's " +
                             std::to_string(max_position) + " positions");
  std::unique_ptr<model_under_test> dut;
  if (use_cpu) {
    dut = std::make_unique<cpu_model>(model);
  } else {
    dut = std::make_unique<cuda_model>(model, storage, false);
  }

  // Every position's logits, from one prefill.
  tokens_t table(static_cast<size_t>((max_position + block_size - 1) / block_size));
  std::iota(table.begin(), table.end(), 0);
  forward_batch batch;
  batch.add_sequence(prompt, 0, table, block_size, static_cast<int32_t>(prompt.size()));
  batch.finalize();
  dut->reset(static_cast<int64_t>(table.size()), block_size);
  std::vector<float> logits;
  dut->forward(batch, logits);
  if (logits.size() != prompt.size() * static_cast<size_t>(vocab))
    throw std::runtime_error("the forward returned " + std::to_string(logits.size()) +
                             " logits, not positions x vocab");
  std::ofstream out(out_path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(logits.data()),
            static_cast<std::streamsize>(logits.size() * sizeof(float)));
  if (!out) throw std::runtime_error("cannot write " + out_path);

  // The greedy continuation, prefill then one token a step (the decode kernels).
  tokens_t greedy;
  if (greedy_tokens > 0) greedy = greedy_run(*dut, max_position, {prompt}, greedy_tokens, 0)[0];

  const nlohmann::json line = {
      {"model", model_dir},
      {"backend", use_cpu ? std::string("cpu") : "cuda " + cuda::device_description()},
      {"dtype", use_cpu ? std::string("f32") : dtype_name},
      {"positions", prompt.size()},
      {"vocab", vocab},
      {"greedy", greedy}};
  std::printf("%s\n", line.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace actorllm::golden

int main(int argc, char** argv) {
  try {
    return actorllm::golden::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_logits: %s\n", e.what());
    return 1;
  }
}
