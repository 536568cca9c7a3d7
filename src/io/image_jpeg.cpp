// JPEG through libjpeg's API (libjpeg-turbo): decode to RGB with EXIF orientation, encode from RGB,
// BGR or gray. libjpeg reports errors by calling error_exit, which would exit() the process by
// default: ours records the message and longjmps back to the setjmp in the calling function.
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

extern "C" {
#include <jerror.h>
#include <jpeglib.h>
}

#include "io/image_codec_internal.h"

namespace fovea::io::detail {
namespace {

constexpr std::string_view kJpeg = "JPEG";

struct JpegErrors {
  jpeg_error_mgr manager{};
  std::jmp_buf jump{};
  char message[JMSG_LENGTH_MAX] = {};
};

[[noreturn]] void jump_on_error(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  errors->manager.format_message(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

// libjpeg reports damaged entropy-coded data as warnings and fills the rest of the picture with
// grey; these make the decode fail instead. Other warnings (an unknown JFIF revision, a bogus
// ICC profile) leave the pixels intact and are ignored, as is libjpeg's trace output.
bool is_damage_warning(int code) {
  switch (code) {
    case JWRN_HIT_MARKER:       // "Corrupt JPEG data: premature end of data segment"
    case JWRN_HUFF_BAD_CODE:    // "Corrupt JPEG data: bad Huffman code"
    case JWRN_JPEG_EOF:         // "Premature end of JPEG file" (truncated)
    case JWRN_MUST_RESYNC:      // "Corrupt JPEG data: found marker ... instead of RST"
    case JWRN_EXTRANEOUS_DATA:  // "Corrupt JPEG data: N extraneous bytes before marker"
      return true;
    default: return false;
  }
}

// Whether running out of data (JWRN_JPEG_EOF) can only mean a missing EOI marker: in a sequential,
// Huffman-coded scan that codes every component, a coefficient the data lacks is JWRN_HIT_MARKER
// (damage), so a file whose writer left the EOI off (some cameras do; PIL and OpenCV decode such
// files) decodes whole. Progressive, arithmetic-coded and multi-scan files cannot tell a missing EOI
// from missing scans: for them the warning stays damage.
bool only_eoi_can_be_missing(j_common_ptr cinfo) {
  if (cinfo->is_decompressor == FALSE) return false;
  const auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  return d->progressive_mode == FALSE && d->arith_code == FALSE && d->comps_in_scan == d->num_components;
}

void fail_on_damage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  const int code = cinfo->err->msg_code;
  if (code == JWRN_JPEG_EOF && only_eoi_can_be_missing(cinfo)) return;
  if (is_damage_warning(code)) jump_on_error(cinfo);
}

void route_errors(j_common_ptr cinfo, JpegErrors* errors) {
  cinfo->err = jpeg_std_error(&errors->manager);
  errors->manager.error_exit = jump_on_error;
  errors->manager.emit_message = fail_on_damage;
}

// Owns a decompress object; destroying a never-created (zeroed) one is a no-op in libjpeg.
class JpegDecompressor {
 public:
  JpegDecompressor() { route_errors(reinterpret_cast<j_common_ptr>(&cinfo), &errors); }
  ~JpegDecompressor() { jpeg_destroy_decompress(&cinfo); }
  JpegDecompressor(const JpegDecompressor&) = delete;
  JpegDecompressor& operator=(const JpegDecompressor&) = delete;

  jpeg_decompress_struct cinfo{};
  JpegErrors errors;
};

class JpegCompressor {
 public:
  JpegCompressor() { route_errors(reinterpret_cast<j_common_ptr>(&cinfo), &errors); }
  ~JpegCompressor() {
    jpeg_destroy_compress(&cinfo);
    std::free(output);  // jpeg_mem_dest's buffer is malloc'ed and left to the caller
  }
  JpegCompressor(const JpegCompressor&) = delete;
  JpegCompressor& operator=(const JpegCompressor&) = delete;

  jpeg_compress_struct cinfo{};
  JpegErrors errors;
  unsigned char* output = nullptr;
  unsigned long output_bytes = 0;
};

int orientation_of(const jpeg_decompress_struct& cinfo) {
  for (jpeg_saved_marker_ptr marker = cinfo.marker_list; marker != nullptr; marker = marker->next) {
    if (marker->marker == JPEG_APP0 + 1) {
      const int orientation = exif_orientation({marker->data, marker->data_length});
      if (orientation != 1) return orientation;
    }
  }
  return 1;
}

// CMYK and YCCK files (libjpeg turns YCCK into CMYK) to RGB. Adobe's writers store the inks
// inverted (255 = no ink) and mark the file with an APP14 "Adobe" segment, so R = C * K / 255;
// without the marker the samples are ink amounts, R = (255 - C) * (255 - K) / 255. Rounded to
// nearest, as PIL and OpenCV do.
void cmyk_row_to_rgb(const JSAMPLE* cmyk, std::uint8_t* rgb, int width, bool adobe_inverted) {
  for (int x = 0; x < width; ++x, cmyk += 4, rgb += 3) {
    const int k = adobe_inverted ? cmyk[3] : 255 - cmyk[3];
    for (int c = 0; c < 3; ++c) {
      const int ink = adobe_inverted ? cmyk[c] : 255 - cmyk[c];
      rgb[c] = static_cast<std::uint8_t>((ink * k + 127) / 255);
    }
  }
}

bool is_cmyk(J_COLOR_SPACE space) {
  return space == JCS_CMYK || space == JCS_YCCK;
}

// The functions that call setjmp hold only trivially destructible locals, so the jump from
// libjpeg's error_exit skips no destructor; each returns false after an error, whose message is
// in errors.message.
bool read_header(JpegDecompressor* decoder, std::span<const std::uint8_t> bytes) {
  jpeg_decompress_struct* cinfo = &decoder->cinfo;
  if (setjmp(decoder->errors.jump)) return false;
  jpeg_create_decompress(cinfo);
  jpeg_mem_src(cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xFFFF);  // EXIF (APP1) is at most one 64 KiB segment
  jpeg_read_header(cinfo, TRUE);
  return true;
}

bool start_decompress(JpegDecompressor* decoder, long max_memory, bool fancy_upsampling) {
  jpeg_decompress_struct* cinfo = &decoder->cinfo;
  if (setjmp(decoder->errors.jump)) return false;
  cinfo->mem->max_memory_to_use = max_memory;
  cinfo->do_fancy_upsampling = fancy_upsampling ? TRUE : FALSE;
  // libjpeg-turbo expands gray to RGB itself; CMYK is converted here (cmyk_row_to_rgb).
  cinfo->out_color_space = is_cmyk(cinfo->jpeg_color_space) ? JCS_CMYK : JCS_RGB;
  cinfo->dct_method = JDCT_ISLOW;
  jpeg_start_decompress(cinfo);
  return true;
}

bool read_pixels(JpegDecompressor* decoder, const ImageView* image) {
  jpeg_decompress_struct* cinfo = &decoder->cinfo;
  if (setjmp(decoder->errors.jump)) return false;
  const bool cmyk = cinfo->out_color_space == JCS_CMYK;
  JSAMPARRAY cmyk_row = cmyk ? (*cinfo->mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(cinfo), JPOOL_IMAGE,
                                                           cinfo->output_width * 4, 1)
                             : nullptr;
  while (cinfo->output_scanline < cinfo->output_height) {
    std::uint8_t* row = image->row(0, static_cast<int>(cinfo->output_scanline));
    JSAMPROW target = cmyk ? cmyk_row[0] : row;
    jpeg_read_scanlines(cinfo, &target, 1);
    if (cmyk)
      cmyk_row_to_rgb(cmyk_row[0], row, static_cast<int>(cinfo->output_width), cinfo->saw_Adobe_marker);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

struct CompressSettings {
  J_COLOR_SPACE space = JCS_RGB;
  int components = 3;
  int quality = 90;
};

bool compress(JpegCompressor* encoder, const ImageView* image, const CompressSettings* settings) {
  jpeg_compress_struct* cinfo = &encoder->cinfo;
  if (setjmp(encoder->errors.jump)) return false;
  jpeg_create_compress(cinfo);
  jpeg_mem_dest(cinfo, &encoder->output, &encoder->output_bytes);
  cinfo->image_width = static_cast<JDIMENSION>(image->width);
  cinfo->image_height = static_cast<JDIMENSION>(image->height);
  cinfo->input_components = settings->components;
  cinfo->in_color_space = settings->space;
  jpeg_set_defaults(cinfo);
  jpeg_set_quality(cinfo, settings->quality, TRUE);
  cinfo->dct_method = JDCT_ISLOW;
  jpeg_start_compress(cinfo, TRUE);
  while (cinfo->next_scanline < cinfo->image_height) {
    JSAMPROW row = image->row(0, static_cast<int>(cinfo->next_scanline));
    jpeg_write_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_compress(cinfo);
  return true;
}

}  // namespace

Result<DecodedImage> decode_jpeg(std::span<const std::uint8_t> bytes, std::string_view name,
                                 const ImageDecodeOptions& options) {
  JpegDecompressor decoder;
  const auto damaged = [&] {
    return image_error(StatusCode::kCorruptData, name, kJpeg, decoder.errors.message);
  };
  if (!read_header(&decoder, bytes)) return damaged();
  const jpeg_decompress_struct& cinfo = decoder.cinfo;
  // The saved markers live in libjpeg's image pool, which jpeg_finish_decompress frees.
  const int orientation = orientation_of(cinfo);
  FOVEA_TRY(check_image_size(name, static_cast<int>(cinfo.image_width), static_cast<int>(cinfo.image_height),
                             options.limits));
  // Progressive files keep every coefficient (2 bytes per sample) until the end; 8 bytes per
  // pixel covers three 4:4:4 components with room to spare, and beyond that libjpeg fails
  // ("backing store not supported") instead of taking the machine's memory.
  if (!start_decompress(&decoder, static_cast<long>(options.limits.max_pixels * 8), options.fancy_upsampling))
    return damaged();
  Result<HostImage> image = HostImage::allocate(PixelFormat::kRGB8, static_cast<int>(cinfo.output_width),
                                                static_cast<int>(cinfo.output_height));
  if (!image.is_ok()) return image.status().with_context(name);
  if (!read_pixels(&decoder, &image->view())) return damaged();
  DecodedImage decoded;
  decoded.file_format = ImageFileFormat::kJpeg;
  decoded.orientation = orientation;
  decoded.image = std::move(image).value();
  if (options.apply_orientation) {
    Result<HostImage> upright = apply_orientation(std::move(decoded.image), decoded.orientation);
    if (!upright.is_ok()) return upright.status().with_context(name);
    decoded.image = std::move(upright).value();
  }
  return decoded;
}

Result<std::string> encode_jpeg(const ImageView& image, int quality) {
  CompressSettings settings;
  settings.quality = quality;
  switch (image.format) {
    case PixelFormat::kRGB8: break;
    case PixelFormat::kBGR8: settings.space = JCS_EXT_BGR; break;
    case PixelFormat::kGRAY8:
      settings.space = JCS_GRAYSCALE;
      settings.components = 1;
      break;
    default:
      return make_error(StatusCode::kUnsupported, "JPEG encoding takes rgb8, bgr8 or gray8 images, not ",
                        std::string(pixel_format_name(image.format)),
                        image.format == PixelFormat::kRGBA8 ? " (a JPEG has no alpha channel)" : "");
  }
  JpegCompressor encoder;
  if (!compress(&encoder, &image, &settings)) {
    return make_error(StatusCode::kInternal, "JPEG encoding failed: ", std::string(encoder.errors.message));
  }
  return std::string(reinterpret_cast<const char*>(encoder.output), encoder.output_bytes);
}

}  // namespace fovea::io::detail
