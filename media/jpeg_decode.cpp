// JPEG through libjpeg-turbo with the settings PIL's decoder keeps (ISLOW DCT, fancy
// upsampling: libjpeg's defaults), so the pixels equal PIL's to the byte. PIL picks the output
// by the component count alone (JpegImagePlugin): 1 is gray, 3 is RGB (YCbCr or Adobe RGB as
// libjpeg detects it), 4 is CMYK read inverted ("CMYK;I") and converted by PIL's cmyk2rgb.
#include <csetjmp>
#include <cstdio>
// jpeglib.h needs FILE and size_t declared before it.
#include <jerror.h>
#include <jpeglib.h>

#include <algorithm>
#include <string>
#include <vector>

#include "media/image_decoders.hpp"
#include "media/rgb_convert.hpp"

namespace actorllm::media::detail {

namespace {

// A progressive file may hold any number of scans, each a pass over the whole image; real
// encoders write about ten. Beyond this many the file is refused rather than decoded slowly.
constexpr int max_jpeg_scans = 500;

// What libjpeg needs alive across a longjmp (see decode_jpeg).
struct jpeg_session {
  jpeg_decompress_struct cinfo{};
  jpeg_error_mgr errors{};
  jpeg_progress_mgr progress{};
  std::jmp_buf jump{};
  char error[JMSG_LENGTH_MAX] = {};
  std::vector<uint8_t> row;  // one scanline as libjpeg gives it: (width, components)

  // A no-op while jpeg_create_decompress has not succeeded (cinfo.mem stays null).
  ~jpeg_session() { jpeg_destroy_decompress(&cinfo); }
};

jpeg_session& session_of(j_common_ptr cinfo) {
  return *static_cast<jpeg_session*>(cinfo->client_data);
}

// libjpeg's default error_exit calls exit(): this one keeps the message and jumps back.
[[noreturn]] void jpeg_fail(j_common_ptr cinfo) {
  jpeg_session& s = session_of(cinfo);
  cinfo->err->format_message(cinfo, s.error);
  std::longjmp(s.jump, 1);
}

// Warnings are not printed (PIL is silent too) and decoding goes on past corrupt segments as
// PIL's does, except at the end of the data: PIL calls a file that ends early truncated.
void jpeg_message(j_common_ptr cinfo, int level) {
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_fail(cinfo);
}

void jpeg_count_scans(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (cinfo->is_decompressor && d->input_scan_number > max_jpeg_scans) {
    std::snprintf(session_of(cinfo).error, JMSG_LENGTH_MAX, "more than %d scans", max_jpeg_scans);
    std::longjmp(session_of(cinfo).jump, 1);
  }
}

// The two functions below call setjmp; libjpeg may longjmp back into them from any jpeg_*
// call, so they hold no local with a destructor (what they fill lives in jpeg_session or the
// caller).

bool read_jpeg_header(jpeg_session& s, std::span<const uint8_t> bytes) {
  if (setjmp(s.jump)) return false;
  jpeg_create_decompress(&s.cinfo);
  s.progress.progress_monitor = jpeg_count_scans;
  s.cinfo.progress = &s.progress;
  jpeg_mem_src(&s.cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&s.cinfo, TRUE);
  return true;
}

bool read_jpeg_rows(jpeg_session& s, rgb_image& image) {
  if (setjmp(s.jump)) return false;
  const int components = s.cinfo.num_components;
  s.cinfo.out_color_space = components == 1 ? JCS_GRAYSCALE : components == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_start_decompress(&s.cinfo);
  const std::size_t width = s.cinfo.output_width;
  s.row.resize(width * static_cast<std::size_t>(s.cinfo.output_components));
  while (s.cinfo.output_scanline < s.cinfo.output_height) {
    const std::size_t y = s.cinfo.output_scanline;
    JSAMPROW rows[1] = {s.row.data()};
    jpeg_read_scanlines(&s.cinfo, rows, 1);
    const std::span<uint8_t> rgb(image.pixels.data() + y * width * 3, width * 3);
    if (components == 1) {
      gray_row_to_rgb(s.row, rgb);
    } else if (components == 3) {
      std::copy(s.row.begin(), s.row.end(), rgb.begin());
    } else {
      adobe_cmyk_row_to_rgb(s.row, rgb);
    }
  }
  // jpeg_finish_decompress is not called: the pixels are all read, and data after them (a
  // missing EOI marker, trailing bytes) does not stop PIL either.
  return true;
}

}  // namespace

decoded_image decode_jpeg(std::span<const uint8_t> bytes, const image_limits& limits) {
  jpeg_session s;
  s.cinfo.err = jpeg_std_error(&s.errors);
  s.errors.error_exit = jpeg_fail;
  s.errors.emit_message = jpeg_message;
  s.cinfo.client_data = &s;
  auto corrupt = [&] {
    return decoded_image{{}, std::string("truncated or corrupt data (") + s.error + ")"};
  };
  if (!read_jpeg_header(s, bytes)) return corrupt();
  const int components = s.cinfo.num_components;
  if (components != 1 && components != 3 && components != 4) {
    return {{}, "JPEG with " + std::to_string(components) + " components (PIL reads 1, 3 or 4)"};
  }
  const int64_t width = s.cinfo.image_width, height = s.cinfo.image_height;
  if (std::string error = check_dimensions(width, height, limits); !error.empty()) {
    return {{}, error};
  }
  decoded_image out;
  out.image.width = static_cast<int32_t>(width);
  out.image.height = static_cast<int32_t>(height);
  out.image.pixels.resize(static_cast<std::size_t>(width * height) * 3);
  if (!read_jpeg_rows(s, out.image)) return corrupt();
  return out;
}

}  // namespace actorllm::media::detail
