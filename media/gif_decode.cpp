// GIF through giflib: the first frame as PIL's GifImagePlugin gives it. The canvas is the
// logical screen, grown to hold the frame if it reaches past it; outside the frame it holds the
// transparent index of the frame's graphic control extension, else index 0. Every index takes
// its colour from the local palette, else the global one, else gray (i, i, i) (PIL's "L"
// mode), and indices past a short palette take PIL's gray ramp. Transparency changes no colour:
// PIL keeps frame 0 in mode "P" and vLLM converts it to RGB.
#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "media/image_decoders.hpp"
#include "media/rgb_convert.hpp"

namespace actorllm::media::detail {

namespace {

struct gif_source {
  std::span<const uint8_t> bytes;
  std::size_t offset = 0;
};

int gif_read_from_span(GifFileType* gif, GifByteType* out, int length) {
  auto* source = static_cast<gif_source*>(gif->UserData);
  const std::size_t count = std::min(static_cast<std::size_t>(std::max(length, 0)),
                                     source->bytes.size() - source->offset);
  std::memcpy(out, source->bytes.data() + source->offset, count);
  source->offset += count;
  return static_cast<int>(count);
}

struct gif_closer {
  void operator()(GifFileType* gif) const {
    int ignored = 0;
    DGifCloseFile(gif, &ignored);
  }
};
using gif_handle = std::unique_ptr<GifFileType, gif_closer>;

std::string gif_error(int code) {
  const char* text = GifErrorString(code);
  return std::string("truncated or corrupt data (") + (text ? text : "unknown error") + ")";
}

// Skips to the first image descriptor, reading the transparent index of the graphic control
// extensions before it (the last one that sets it wins, as in PIL); -1 when none does.
bool find_first_image(GifFileType* gif, int& transparent, std::string& error) {
  transparent = -1;
  for (;;) {
    GifRecordType type = UNDEFINED_RECORD_TYPE;
    if (DGifGetRecordType(gif, &type) == GIF_ERROR) {
      error = gif_error(gif->Error);
      return false;
    }
    if (type == IMAGE_DESC_RECORD_TYPE) {
      if (DGifGetImageDesc(gif) == GIF_ERROR) {
        error = gif_error(gif->Error);
        return false;
      }
      return true;
    }
    if (type == TERMINATE_RECORD_TYPE) {
      error = "no image in the file";
      return false;
    }
    if (type != EXTENSION_RECORD_TYPE) continue;
    int code = 0;
    GifByteType* block = nullptr;
    if (DGifGetExtension(gif, &code, &block) == GIF_ERROR) {
      error = gif_error(gif->Error);
      return false;
    }
    if (code == GRAPHICS_EXT_FUNC_CODE && block && block[0] >= 4 && (block[1] & 1)) {
      transparent = block[4];
    }
    while (block) {
      if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) {
        error = gif_error(gif->Error);
        return false;
      }
    }
  }
}

rgb_palette palette_of(const ColorMapObject* map) {
  std::vector<uint8_t> triplets;
  if (map) {
    for (int i = 0; i < map->ColorCount; ++i) {
      triplets.insert(triplets.end(),
                      {map->Colors[i].Red, map->Colors[i].Green, map->Colors[i].Blue});
    }
  }
  return make_palette(triplets);
}

}  // namespace

decoded_image decode_gif(std::span<const uint8_t> bytes, const image_limits& limits) {
  gif_source source{bytes};
  int open_error = 0;
  const gif_handle gif(DGifOpen(&source, gif_read_from_span, &open_error));
  if (!gif) return {{}, gif_error(open_error)};
  int transparent = -1;
  std::string error;
  if (!find_first_image(gif.get(), transparent, error)) return {{}, error};

  const GifImageDesc& frame = gif->Image;
  const int64_t width = std::max<int64_t>(gif->SWidth, int64_t{frame.Left} + frame.Width);
  const int64_t height = std::max<int64_t>(gif->SHeight, int64_t{frame.Top} + frame.Height);
  if (error = check_dimensions(width, height, limits); !error.empty()) return {{}, error};

  const auto w = static_cast<std::size_t>(width), h = static_cast<std::size_t>(height);
  std::vector<uint8_t> canvas(w * h, static_cast<uint8_t>(std::max(transparent, 0)));
  // Interlaced frames store rows 0, 8, 16, ..., then 4, 12, ..., then 2, 6, ..., then 1, 3, ...
  const int starts[] = {0, 4, 2, 1}, steps[] = {8, 8, 4, 2};
  const int passes = frame.Width == 0 ? 0 : frame.Interlace ? 4 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    const int first = frame.Interlace ? starts[pass] : 0, step = frame.Interlace ? steps[pass] : 1;
    for (int row = first; row < frame.Height; row += step) {
      uint8_t* line = canvas.data() + (frame.Top + row) * w + frame.Left;
      if (DGifGetLine(gif.get(), line, frame.Width) == GIF_ERROR) {
        return {{}, gif_error(gif->Error)};
      }
    }
  }
  const rgb_palette palette = palette_of(frame.ColorMap ? frame.ColorMap : gif->SColorMap);
  decoded_image out;
  out.image.width = static_cast<int32_t>(width);
  out.image.height = static_cast<int32_t>(height);
  out.image.pixels.resize(w * h * 3);
  indexed_row_to_rgb(canvas, palette, out.image.pixels);
  return out;
}

}  // namespace actorllm::media::detail
