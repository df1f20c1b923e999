#include "model/vision_config.hpp"

#include <cmath>
#include <map>
#include <stdexcept>

#include "model/config_fields.hpp"

namespace actorllm {

namespace {

using json = nlohmann::json;

/// Bounds far above any released tower that keep a hostile config.json from asking for
/// unbounded memory (the position table is num_positions x hidden floats).
constexpr int64_t max_vision_hidden = 1 << 14;
constexpr int64_t max_vision_intermediate = 1 << 16;
constexpr int64_t max_vision_layers = 256;
constexpr int64_t max_image_size = 4096;

/// The decoder architecture of a text_config's model_type.
const std::map<std::string, std::string>& text_architectures() {
  static const std::map<std::string, std::string> names = {
      {"llama", "LlamaForCausalLM"},
      {"mistral", "MistralForCausalLM"},
      {"qwen2", "Qwen2ForCausalLM"},
      {"gemma3_text", "Gemma3ForCausalLM"},
  };
  return names;
}

/// transformers' LlamaConfig defaults: llava-hf's configs give only the keys that differ.
void fill_llama_defaults(json& text) {
  const json defaults = {
      {"vocab_size", 32000},     {"hidden_size", 4096},       {"intermediate_size", 11008},
      {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"max_position_embeddings", 2048},
      {"rms_norm_eps", 1e-6},    {"rope_theta", 10000.0},     {"tie_word_embeddings", false}};
  for (const auto& [key, value] : defaults.items())
    if (!text.contains(key) || text[key].is_null()) text[key] = value;
}

vision_activation read_vision_activation(const field_reader& f, const char* key,
                                         const char* fallback) {
  const std::string act = f.string(key, fallback);
  if (act == "quick_gelu") return vision_activation::quick_gelu;
  if (act == "gelu") return vision_activation::gelu;
  if (act == "gelu_pytorch_tanh" || act == "gelu_new") return vision_activation::gelu_tanh;
  if (act == "silu") return vision_activation::silu;
  f.fail(key, "'" + act + "' is not supported (quick_gelu, gelu, gelu_pytorch_tanh, silu)");
}

/// A ViT config's keys (CLIPVisionConfig's, SiglipVisionConfig's), with the defaults of the
/// `model_type` it must name; `tower` names the model in errors.
void read_vit(const field_reader& f, const char* model_type, const char* tower, int64_t patch,
              double eps, const char* activation, vision_config& v) {
  const std::string type = f.string("model_type", model_type);
  if (type != model_type)
    f.fail("model_type",
           "'" + type + "' is not supported as " + tower + "'s tower (" + model_type + ")");
  v.hidden_size = f.integer("hidden_size", 768, 1, max_vision_hidden);
  v.intermediate_size = f.integer("intermediate_size", 3072, 1, max_vision_intermediate);
  v.num_layers = f.integer("num_hidden_layers", 12, 1, max_vision_layers);
  v.num_heads = f.integer("num_attention_heads", 12, 1, v.hidden_size);
  if (v.hidden_size % v.num_heads != 0)
    f.fail("num_attention_heads",
           "must divide hidden_size (" + std::to_string(v.hidden_size) + ")");
  v.image_size = f.integer("image_size", 224, 1, max_image_size);
  v.patch_size = f.integer("patch_size", patch, 1, v.image_size);
  v.num_channels = f.integer("num_channels", 3, 3, 3);
  v.layer_norm_eps = f.number("layer_norm_eps", eps, 0.0, 1.0);
  v.activation = read_vision_activation(f, "hidden_act", activation);
}

/// vision_feature_layer indexes the tower's hidden states (the embeddings, then each
/// layer's output); the layers past it never need to run.
int64_t layers_through(const field_reader& top, int64_t num_layers) {
  if (top.has("vision_feature_layer") && top.json()["vision_feature_layer"].is_array())
    top.fail("vision_feature_layer", "as a list of layers is not supported");
  const int64_t index = top.integer("vision_feature_layer", -2, -(num_layers + 1), num_layers);
  const int64_t layers = index >= 0 ? index : num_layers + 1 + index;
  if (layers < 1) top.fail("vision_feature_layer", "selects the embeddings, not a layer's output");
  return layers;
}

/// transformers' Gemma3TextConfig defaults: Gemma 3's configs give only the keys that differ.
void fill_gemma3_text_defaults(json& text) {
  const json defaults = {{"vocab_size", 262208},
                         {"hidden_size", 2304},
                         {"intermediate_size", 9216},
                         {"num_hidden_layers", 26},
                         {"num_attention_heads", 8},
                         {"num_key_value_heads", 4},
                         {"head_dim", 256},
                         {"hidden_activation", "gelu_pytorch_tanh"},
                         {"max_position_embeddings", 131072},
                         {"rms_norm_eps", 1e-6},
                         {"rope_theta", 1000000.0},
                         {"rope_local_base_freq", 10000.0},
                         {"query_pre_attn_scalar", 256},
                         {"sliding_window", 4096},
                         {"sliding_window_pattern", 6},
                         {"tie_word_embeddings", true}};
  for (const auto& [key, value] : defaults.items())
    if (!text.contains(key) || text[key].is_null()) text[key] = value;
}

/// LLaVA: CLIP through vision_feature_layer, its two-layer projector.
void read_llava_vision(const field_reader& top, const json& vision_json, vision_config& v) {
  read_vit(field_reader(vision_json, top.path().string() + " (vision_config)"), "clip_vision_model",
           "LLaVA", 32, 1e-5, "quick_gelu", v);
  v.num_layers = layers_through(top, v.num_layers);
  const std::string strategy = top.string("vision_feature_select_strategy", "default");
  if (strategy != "default" && strategy != "full")
    top.fail("vision_feature_select_strategy",
             "'" + strategy + "' is not supported (default, full)");
  v.keep_class_token = strategy == "full";
  v.projector_activation = read_vision_activation(top, "projector_hidden_act", "gelu");
  if (!top.boolean("multimodal_projector_bias", true))
    top.fail("multimodal_projector_bias", "false is not supported");
}

/// Gemma 3: SigLIP's last layer normalised, pooled to mm_tokens_per_image rows, projected;
/// the decoder attends both ways within an image.
void read_gemma3_vision(const field_reader& top, const json& vision_json, vision_config& v) {
  const field_reader f(vision_json, top.path().string() + " (vision_config)");
  read_vit(f, "siglip_vision_model", "Gemma 3", 16, 1e-6, "gelu_pytorch_tanh", v);
  if (f.boolean("vision_use_head", false)) f.fail("vision_use_head", "true is not supported");
  v.tower = "siglip";
  v.class_token = false;
  v.pre_norm = false;
  v.post_norm = true;
  v.patch_bias = true;
  v.projector = vision_projector::pooled;
  v.projector_norm_eps = v.layer_norm_eps;
  v.pooled_tokens = top.integer("mm_tokens_per_image", 256, 1, v.num_patches());
  const auto side =
      static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(v.pooled_tokens))));
  if (side * side != v.pooled_tokens || v.patches_per_side() % side != 0)
    top.fail("mm_tokens_per_image", "must be a square whose side divides the " +
                                        std::to_string(v.patches_per_side()) + " patches a side");
  v.bidirectional_image_attention = true;
}

/// transformers' Qwen2_5_VLTextConfig defaults. The published configs give the text model's
/// keys at the top level beside vision_config; transformers >= 4.52 saves a text_config.
json qwen2_5_vl_text(const json& top) {
  json text = json::object();
  if (top.contains("text_config") && !top["text_config"].is_null()) {
    text = top["text_config"];
  } else {
    for (const auto& [key, value] : top.items())
      if (key != "vision_config" && key != "architectures" && key != "model_type")
        text[key] = value;
  }
  if (!text.is_object()) return text;
  const json defaults = {{"vocab_size", 152064},         {"hidden_size", 8192},
                         {"intermediate_size", 29568},   {"num_hidden_layers", 80},
                         {"num_attention_heads", 64},    {"num_key_value_heads", 8},
                         {"hidden_act", "silu"},         {"max_position_embeddings", 32768},
                         {"rms_norm_eps", 1e-5},         {"rope_theta", 1000000.0},
                         {"tie_word_embeddings", false}, {"use_sliding_window", false}};
  for (const auto& [key, value] : defaults.items())
    if (!text.contains(key) || text[key].is_null()) text[key] = value;
  if (top.contains("tie_word_embeddings")) text["tie_word_embeddings"] = top["tie_word_embeddings"];
  text["model_type"] = "qwen2";
  return text;
}

/// Qwen2.5-VL's tower (Qwen2_5_VisionTransformerPretrainedModel's config keys, with
/// Qwen2_5_VLVisionConfig's defaults) and its merger.
void read_qwen2_5_vl_vision(const field_reader& top, const json& vision_json, vision_config& v) {
  const field_reader f(vision_json, top.path().string() + " (vision_config)");
  v.tower = "qwen2_5_vl";
  v.hidden_size = f.integer("hidden_size", 3584, 1, max_vision_hidden);
  v.intermediate_size = f.integer("intermediate_size", 3420, 1, max_vision_intermediate);
  v.num_layers = f.integer("depth", 32, 1, max_vision_layers);
  v.num_heads = f.integer("num_heads", 16, 1, v.hidden_size);
  if (v.hidden_size % v.num_heads != 0 || v.head_dim() % 4 != 0)
    f.fail("num_heads", "must divide hidden_size (" + std::to_string(v.hidden_size) +
                            ") into heads of a multiple of 4 (2-D rotary pairs)");
  v.num_channels = f.integer("in_channels", f.integer("in_chans", 3, 3, 3), 3, 3);
  v.patch_size = f.integer("patch_size", 14, 1, 64);
  v.merge_size = f.integer("spatial_merge_size", 2, 1, 8);
  v.temporal_patch_size = f.integer("temporal_patch_size", 2, 1, 4);
  v.window_size = f.integer("window_size", 112, 1, max_image_size);
  if (v.window_size % (v.patch_size * v.merge_size) != 0)
    f.fail("window_size", "must be a multiple of patch_size * spatial_merge_size (" +
                              std::to_string(v.patch_size * v.merge_size) + ")");
  v.activation = read_vision_activation(f, "hidden_act", "silu");
  for (int32_t layer : f.integers("fullatt_block_indexes", 0, v.num_layers - 1))
    v.full_attention_layers.push_back(layer);
  if (!f.has("fullatt_block_indexes")) {
    for (int64_t layer : {7, 15, 23, 31})
      if (layer < v.num_layers) v.full_attention_layers.push_back(layer);
  }
  v.class_token = false;
  v.pre_norm = false;
  v.projector = vision_projector::merger;
  v.projector_activation = vision_activation::gelu;
  v.layer_norm_eps = 1e-6;  // the blocks' and the merger's RMSNorm
  v.text_hidden_size = f.integer("out_hidden_size", 3584, 1, int64_t{1} << 16);
}

/// Qwen2_5_VLForConditionalGeneration: a Qwen2 decoder with M-RoPE, the tower and merger.
multimodal_config_parts split_qwen2_5_vl_config(const field_reader& top) {
  multimodal_config_parts parts;
  parts.text = qwen2_5_vl_text(top.json());
  if (!parts.text.is_object()) top.fail("text_config", "must be an object");
  json& text = parts.text;
  if ((!text.contains("rope_scaling") || text["rope_scaling"].is_null()) &&
      text.contains("rope_parameters"))
    text["rope_scaling"] = text["rope_parameters"];
  if (!text.contains("rope_scaling") || !text["rope_scaling"].is_object() ||
      !text["rope_scaling"].contains("mrope_section"))
    top.fail("rope_scaling", "must give mrope_section (M-RoPE's rotary pairs per axis)");
  text["architectures"] = json::array({"Qwen2ForCausalLM"});
  const json vision_json = top.has("vision_config") ? top.json()["vision_config"] : json::object();
  if (!vision_json.is_object()) top.fail("vision_config", "must be an object");
  vision_config& v = parts.vision;
  read_qwen2_5_vl_vision(top, vision_json, v);
  const field_reader t(text, top.path().string() + " (text_config)");
  if (v.text_hidden_size != t.integer("hidden_size", std::nullopt, 1, int64_t{1} << 16))
    top.fail("vision_config", "out_hidden_size (" + std::to_string(v.text_hidden_size) +
                                  ") must equal the language model's hidden_size");
  const int64_t vocab = t.integer("vocab_size", std::nullopt, 1, int64_t{1} << 22);
  v.image_token_id = static_cast<int32_t>(top.integer("image_token_id", 151655, 0, vocab - 1));
  v.vision_start_token_id =
      static_cast<int32_t>(top.integer("vision_start_token_id", 151652, 0, vocab - 1));
  return parts;
}

}  // namespace

bool is_multimodal_architecture(const std::string& architecture) {
  return architecture == "LlavaForConditionalGeneration" ||
         architecture == "Gemma3ForConditionalGeneration" ||
         architecture == "Qwen2_5_VLForConditionalGeneration";
}

multimodal_config_parts split_multimodal_config(const json& j, const std::filesystem::path& path) {
  const field_reader top(j, path);
  if (j["architectures"][0] == "Qwen2_5_VLForConditionalGeneration")
    return split_qwen2_5_vl_config(top);
  const bool gemma3 = j["architectures"][0] == "Gemma3ForConditionalGeneration";
  multimodal_config_parts parts;
  parts.text =
      j.contains("text_config") && !j["text_config"].is_null() ? j["text_config"] : json::object();
  if (!parts.text.is_object()) top.fail("text_config", "must be an object");
  const std::string text_type = field_reader(parts.text, path.string() + " (text_config)")
                                    .string("model_type", gemma3 ? "gemma3_text" : "llama");
  const auto arch = text_architectures().find(text_type);
  if (arch == text_architectures().end() || gemma3 != (text_type == "gemma3_text"))
    top.fail("text_config", "has model_type '" + text_type + "', not a supported language model (" +
                                (gemma3 ? "gemma3_text" : "llama, mistral, qwen2") + ")");
  if (text_type == "llama") fill_llama_defaults(parts.text);
  if (text_type == "gemma3_text") fill_gemma3_text_defaults(parts.text);
  parts.text["architectures"] = json::array({arch->second});
  // Keys a wrapper may give once at its top level for the whole model.
  for (const char* key : {"torch_dtype", "quantization_config", "bos_token_id", "eos_token_id"})
    if (j.contains(key) && !parts.text.contains(key)) parts.text[key] = j[key];

  vision_config& v = parts.vision;
  const json vision_json = j.contains("vision_config") && !j["vision_config"].is_null()
                               ? j["vision_config"]
                               : json::object();
  if (!vision_json.is_object()) top.fail("vision_config", "must be an object");
  if (gemma3)
    read_gemma3_vision(top, vision_json, v);
  else
    read_llava_vision(top, vision_json, v);
  const field_reader text(parts.text, path.string() + " (text_config)");
  v.text_hidden_size = text.integer("hidden_size", std::nullopt, 1, int64_t{1} << 16);
  const int64_t vocab = text.integer("vocab_size", std::nullopt, 1, int64_t{1} << 22);
  const char* token_key = top.has("image_token_id") ? "image_token_id" : "image_token_index";
  v.image_token_id =
      static_cast<int32_t>(top.integer(token_key, gemma3 ? 262144 : 32000, 0, vocab - 1));
  if (gemma3) {
    v.boi_token_id = static_cast<int32_t>(top.integer("boi_token_index", 255999, 0, vocab - 1));
    v.eoi_token_id = static_cast<int32_t>(top.integer("eoi_token_index", 256000, 0, vocab - 1));
  }
  return parts;
}

}  // namespace actorllm
