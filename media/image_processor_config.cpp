#include "media/image_processor_config.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace actorllm::media {

namespace {

using nlohmann::json;

// Readers for one key each: absent or null leaves `out` as it is (the class default), a value
// of the wrong type is an error naming the key.
std::string read_bool(const json& j, const char* key, bool& out) {
  if (!j.contains(key) || j[key].is_null()) return {};
  if (!j[key].is_boolean()) return std::string(key) + " must be true or false";
  out = j[key].get<bool>();
  return {};
}

template <typename Int>
std::string read_int(const json& j, const char* key, Int& out) {
  if (!j.contains(key) || j[key].is_null()) return {};
  if (!j[key].is_number_integer()) return std::string(key) + " must be an integer";
  const int64_t value = j[key].get<int64_t>();
  if (value < 0 || value > std::numeric_limits<Int>::max())
    return std::string(key) + " is out of range";
  out = static_cast<Int>(value);
  return {};
}

std::string read_double(const json& j, const char* key, double& out) {
  if (!j.contains(key) || j[key].is_null()) return {};
  if (!j[key].is_number()) return std::string(key) + " must be a number";
  out = j[key].get<double>();
  return {};
}

// A number for every channel, or a list of three.
std::string read_triplet(const json& j, const char* key, std::array<double, 3>& out) {
  if (!j.contains(key) || j[key].is_null()) return {};
  const json& v = j[key];
  if (v.is_number()) {
    out.fill(v.get<double>());
    return {};
  }
  if (!v.is_array() || v.size() != 3) return std::string(key) + " must be a number or 3 numbers";
  for (std::size_t c = 0; c < 3; ++c) {
    if (!v[c].is_number()) return std::string(key) + " must be a number or 3 numbers";
    out[c] = v[c].get<double>();
  }
  return {};
}

// `size` and `crop_size`: an integer (CLIP: the shortest edge; the others: a square) or an
// object with shortest_edge or height and width. Qwen2-VL's {shortest_edge, longest_edge} are
// its pixel-area bounds.
std::string read_size(const json& j, image_processor_config& c) {
  if (!j.contains("size") || j["size"].is_null()) return {};
  const json& size = j["size"];
  if (c.kind == image_processor_kind::qwen2_vl) {
    if (!size.is_object()) return "size must be an object";
    std::string error = read_int(size, "shortest_edge", c.min_pixels);
    return error.empty() ? read_int(size, "longest_edge", c.max_pixels) : error;
  }
  if (size.is_number_integer()) {
    int32_t n = 0;
    if (std::string error = read_int(j, "size", n); !error.empty()) return error;
    if (c.kind == image_processor_kind::clip) {
      c.shortest_edge = n, c.height = c.width = 0;
    } else {
      c.shortest_edge = 0, c.height = c.width = n;
    }
    return {};
  }
  if (!size.is_object()) return "size must be an integer or an object";
  if (size.contains("shortest_edge")) {
    c.height = c.width = 0;
    return read_int(size, "shortest_edge", c.shortest_edge);
  }
  if (!size.contains("height") || !size.contains("width")) {
    return "size must have shortest_edge, or height and width";
  }
  c.shortest_edge = 0;
  std::string error = read_int(size, "height", c.height);
  return error.empty() ? read_int(size, "width", c.width) : error;
}

std::string read_crop_size(const json& j, image_processor_config& c) {
  if (!j.contains("crop_size") || j["crop_size"].is_null()) return {};
  const json& crop = j["crop_size"];
  if (crop.is_number_integer()) {
    std::string error = read_int(j, "crop_size", c.crop_height);
    c.crop_width = c.crop_height;
    return error;
  }
  if (!crop.is_object()) return "crop_size must be an integer or an object";
  std::string error = read_int(crop, "height", c.crop_height);
  return error.empty() ? read_int(crop, "width", c.crop_width) : error;
}

std::optional<image_processor_kind> kind_of(const std::string& type) {
  // The *Fast classes resize with torchvision instead of PIL; the values here are those of the
  // PIL classes they stand in for.
  std::string name = type;
  if (name.ends_with("Fast")) name.resize(name.size() - 4);
  if (name == "CLIPImageProcessor") return image_processor_kind::clip;
  if (name == "SiglipImageProcessor" || name == "Gemma3ImageProcessor") {
    return image_processor_kind::siglip;
  }
  if (name == "Qwen2VLImageProcessor") return image_processor_kind::qwen2_vl;
  return std::nullopt;
}

std::string read_keys(const json& j, image_processor_config& c) {
  const std::string errors[] = {
      read_bool(j, "do_resize", c.do_resize),
      read_size(j, c),
      read_bool(j, "do_center_crop", c.do_center_crop),
      read_crop_size(j, c),
      read_bool(j, "do_rescale", c.do_rescale),
      read_double(j, "rescale_factor", c.rescale_factor),
      read_bool(j, "do_normalize", c.do_normalize),
      read_triplet(j, "image_mean", c.image_mean),
      read_triplet(j, "image_std", c.image_std),
      read_bool(j, "do_convert_rgb", c.do_convert_rgb),
      read_int(j, "min_pixels", c.min_pixels),
      read_int(j, "max_pixels", c.max_pixels),
      read_int(j, "patch_size", c.patch_size),
      read_int(j, "merge_size", c.merge_size),
      read_int(j, "temporal_patch_size", c.temporal_patch_size),
  };
  for (const std::string& error : errors) {
    if (!error.empty()) return error;
  }
  if (j.contains("resample") && !j["resample"].is_null()) {
    if (!j["resample"].is_number_integer()) return "resample must be an integer";
    const int64_t r = j["resample"].get<int64_t>();
    if (r != 0 && r != 2 && r != 3) {
      return "resample " + std::to_string(r) +
             " is not supported (0 nearest, 2 bilinear and 3 bicubic are)";
    }
    c.resample = static_cast<resample_filter>(r);
  }
  bool pan_and_scan = false;
  if (std::string error = read_bool(j, "do_pan_and_scan", pan_and_scan); !error.empty()) {
    return error;
  }
  if (pan_and_scan) return "do_pan_and_scan (Gemma 3's crops) is not supported";
  return {};
}

}  // namespace

std::string image_processor_config::validate() const {
  if (do_resize && kind == image_processor_kind::qwen2_vl) {
    if (max_pixels < 1 || min_pixels > max_pixels) {
      return "min_pixels and max_pixels must satisfy 0 <= min_pixels <= max_pixels, 1 <= "
             "max_pixels";
    }
  } else if (do_resize) {
    const bool shortest = shortest_edge >= 1 && height == 0 && width == 0;
    const bool fixed = shortest_edge == 0 && height >= 1 && width >= 1;
    if (!shortest && !fixed)
      return "size must be a shortest_edge or a height and width of at least 1";
    if (shortest && kind != image_processor_kind::clip) return "size needs a height and width";
  }
  if (do_center_crop && (crop_height < 1 || crop_width < 1)) {
    return "crop_size must be at least 1 by 1";
  }
  if (kind == image_processor_kind::qwen2_vl &&
      (patch_size < 1 || merge_size < 1 || temporal_patch_size < 1)) {
    return "patch_size, merge_size and temporal_patch_size must be at least 1";
  }
  if (do_rescale && !std::isfinite(rescale_factor)) return "rescale_factor must be finite";
  if (do_normalize) {
    for (std::size_t c = 0; c < 3; ++c) {
      if (!std::isfinite(image_mean[c]) || !std::isfinite(image_std[c]) || image_std[c] == 0) {
        return "image_mean must be finite and image_std finite and not 0";
      }
    }
  }
  return {};
}

image_processor_config default_image_processor_config(image_processor_kind kind) {
  image_processor_config c;  // CLIPImageProcessor's defaults
  c.kind = kind;
  if (kind == image_processor_kind::siglip) {
    c.shortest_edge = 0;
    c.height = c.width = 224;
    c.resample = resample_filter::bilinear;
    c.do_center_crop = false;
    c.image_mean = {0.5, 0.5, 0.5};  // IMAGENET_STANDARD_MEAN / _STD
    c.image_std = {0.5, 0.5, 0.5};
  } else if (kind == image_processor_kind::qwen2_vl) {
    c.shortest_edge = 0;
    c.do_center_crop = false;
  }
  return c;
}

parsed_image_processor_config parse_image_processor_config(
    std::string_view json_text, std::optional<image_processor_kind> fallback) {
  const json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return {{}, "preprocessor config is not a JSON object"};
  std::optional<image_processor_kind> kind = fallback;
  if (j.contains("image_processor_type") && j["image_processor_type"].is_string()) {
    const std::string type = j["image_processor_type"].get<std::string>();
    kind = kind_of(type);
    if (!kind) return {{}, "image processor " + type + " is not supported"};
  }
  if (!kind) return {{}, "preprocessor config names no image_processor_type"};
  parsed_image_processor_config out{default_image_processor_config(*kind), {}};
  out.error = read_keys(j, out.config);
  if (out.error.empty()) out.error = out.config.validate();
  if (!out.error.empty()) out.error = "preprocessor config: " + out.error;
  return out;
}

std::optional<parsed_image_processor_config> read_image_processor_config(
    const std::filesystem::path& model_dir, std::optional<image_processor_kind> fallback) {
  const std::filesystem::path path = model_dir / "preprocessor_config.json";
  std::error_code ignored;
  if (!std::filesystem::exists(path, ignored)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) return parsed_image_processor_config{{}, "cannot read " + path.string()};
  std::ostringstream text;
  text << in.rdbuf();
  return parse_image_processor_config(text.str(), fallback);
}

}  // namespace actorllm::media
