// PNG through libpng. libpng reports errors through a callback that must not return: ours records
// the message and longjmps to the setjmp on png_jmpbuf in the calling function. Warnings (a known-incorrect
// sRGB profile, a bad ancillary chunk libpng discards) leave the pixels intact and are ignored.
#include <bit>
#include <csetjmp>
#include <cstring>

#include <fmt/format.h>
#include <png.h>

#include "io/image_codec_internal.h"

namespace fovea::io::detail {
namespace {

constexpr std::string_view kPng = "PNG";

struct PngErrors {
  char message[256] = {};
};

[[noreturn]] void jump_on_error(png_structp png, png_const_charp message) {
  auto* errors = static_cast<PngErrors*>(png_get_error_ptr(png));
  std::snprintf(errors->message, sizeof(errors->message), "%s", message);
  png_longjmp(png, 1);
}

void ignore_warning(png_structp, png_const_charp) {}

struct MemoryReader {
  std::span<const std::uint8_t> bytes;
  std::size_t offset = 0;
};

void read_from_memory(png_structp png, png_bytep out, png_size_t count) {
  auto* reader = static_cast<MemoryReader*>(png_get_io_ptr(png));
  if (count > reader->bytes.size() - reader->offset) png_error(png, "file truncated (read past its end)");
  std::memcpy(out, reader->bytes.data() + reader->offset, count);
  reader->offset += count;
}

void append_to_string(png_structp png, png_bytep data, png_size_t count) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), count);
}

void flush_nothing(png_structp) {}

class PngReader {
 public:
  PngReader() {
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &errors, jump_on_error, ignore_warning);
    info = png ? png_create_info_struct(png) : nullptr;
  }
  ~PngReader() { png_destroy_read_struct(png ? &png : nullptr, info ? &info : nullptr, nullptr); }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;

  png_structp png = nullptr;
  png_infop info = nullptr;
  PngErrors errors;
};

class PngWriter {
 public:
  PngWriter() {
    png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &errors, jump_on_error, ignore_warning);
    info = png ? png_create_info_struct(png) : nullptr;
  }
  ~PngWriter() { png_destroy_write_struct(png ? &png : nullptr, info ? &info : nullptr); }
  PngWriter(const PngWriter&) = delete;
  PngWriter& operator=(const PngWriter&) = delete;

  png_structp png = nullptr;
  png_infop info = nullptr;
  PngErrors errors;
};

constexpr bool kLittleEndianHost = std::endian::native == std::endian::little;

// Sets libpng's transforms so every kind of PNG arrives as 8- or 16-bit RGB or RGBA; returns the
// pixel format the rows will have.
PixelFormat set_transforms(png_structp png, png_infop info, const ImageDecodeOptions& options,
                           bool* has_alpha) {
  const int color_type = png_get_color_type(png, info);
  const int bit_depth = png_get_bit_depth(png, info);
  const bool trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  *has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0 || trns;
  const bool alpha = options.keep_alpha && *has_alpha;
  const bool wide = options.keep_16bit && bit_depth == 16;
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0 && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (trns && alpha) png_set_tRNS_to_alpha(png);
  if (bit_depth == 16 && !wide) png_set_scale_16(png);
  if (wide && kLittleEndianHost) png_set_swap(png);  // PNG stores 16-bit samples big-endian
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(png);
  // palette_to_rgb expands a palette's tRNS to alpha by itself, so that alpha is stripped too.
  if (*has_alpha && !alpha) png_set_strip_alpha(png);
  if (wide) return alpha ? PixelFormat::kRGBA16 : PixelFormat::kRGB16;
  return alpha ? PixelFormat::kRGBA8 : PixelFormat::kRGB8;
}

// The functions that call setjmp hold only trivially destructible locals, so the jump from
// libpng's error callback skips no destructor; each returns false after an error, whose message
// is in errors.message.
// Reads the chunks up to the image data (IHDR gives the size); no pixel memory is taken yet, so
// the size check that follows refuses an oversized image before anything large is allocated.
bool read_info(PngReader* reader, MemoryReader* source) {
  if (setjmp(png_jmpbuf(reader->png))) return false;
  png_set_read_fn(reader->png, source, read_from_memory);
  png_read_info(reader->png, reader->info);
  return true;
}

bool prepare_rows(PngReader* reader, const ImageDecodeOptions* options, PixelFormat* format, bool* has_alpha,
                  int* passes) {
  if (setjmp(png_jmpbuf(reader->png))) return false;
  *format = set_transforms(reader->png, reader->info, *options, has_alpha);
  *passes = png_set_interlace_handling(reader->png);
  png_read_update_info(reader->png, reader->info);
  return true;
}

bool read_rows(PngReader* reader, const ImageView* image, int passes) {
  if (setjmp(png_jmpbuf(reader->png))) return false;
  for (int pass = 0; pass < passes; ++pass) {
    for (int y = 0; y < image->height; ++y) png_read_row(reader->png, image->row(0, y), nullptr);
  }
  png_read_end(reader->png, nullptr);
  return true;
}

struct PngLayout {
  int color_type = PNG_COLOR_TYPE_RGB;
  int bit_depth = 8;
  int level = 6;
};

bool write_png(PngWriter* writer, std::string* out, const ImageView* image, const PngLayout* layout) {
  if (setjmp(png_jmpbuf(writer->png))) return false;
  png_set_write_fn(writer->png, out, append_to_string, flush_nothing);
  png_set_compression_level(writer->png, layout->level);
  png_set_IHDR(writer->png, writer->info, static_cast<png_uint_32>(image->width),
               static_cast<png_uint_32>(image->height), layout->bit_depth, layout->color_type,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(writer->png, writer->info);
  if (image->format == PixelFormat::kBGR8) png_set_bgr(writer->png);
  if (layout->bit_depth == 16 && kLittleEndianHost) png_set_swap(writer->png);
  for (int y = 0; y < image->height; ++y) png_write_row(writer->png, image->row(0, y));
  png_write_end(writer->png, nullptr);
  return true;
}

}  // namespace

Result<DecodedImage> decode_png(std::span<const std::uint8_t> bytes, std::string_view name,
                                const ImageDecodeOptions& options) {
  PngReader reader;
  if (reader.info == nullptr) {
    return image_error(StatusCode::kResourceExhausted, name, kPng, "cannot create libpng's decoder");
  }
  const auto damaged = [&] {
    return image_error(StatusCode::kCorruptData, name, kPng, reader.errors.message);
  };
  MemoryReader source{bytes};
  if (!read_info(&reader, &source)) return damaged();
  const int width = static_cast<int>(png_get_image_width(reader.png, reader.info));
  const int height = static_cast<int>(png_get_image_height(reader.png, reader.info));
  FOVEA_TRY(check_image_size(name, width, height, options.limits));
  DecodedImage decoded;
  decoded.file_format = ImageFileFormat::kPng;
  decoded.source_bit_depth = png_get_bit_depth(reader.png, reader.info);
  PixelFormat format = PixelFormat::kRGB8;
  int passes = 1;
  if (!prepare_rows(&reader, &options, &format, &decoded.source_has_alpha, &passes)) return damaged();
  Result<HostImage> image = HostImage::allocate(format, width, height);
  if (!image.is_ok()) return image.status().with_context(name);
  if (png_get_rowbytes(reader.png, reader.info) != image->view().planes[0].pitch) {
    return image_error(StatusCode::kInternal, name, kPng, "libpng's row size differs from the image's");
  }
  if (!read_rows(&reader, &image->view(), passes)) return damaged();
  decoded.image = std::move(image).value();
  return decoded;
}

Result<std::string> encode_png(const ImageView& image, int level) {
  PngLayout layout;
  layout.level = level;
  switch (image.format) {
    case PixelFormat::kRGB8:
    case PixelFormat::kBGR8: break;
    case PixelFormat::kRGBA8: layout.color_type = PNG_COLOR_TYPE_RGB_ALPHA; break;
    case PixelFormat::kGRAY8: layout.color_type = PNG_COLOR_TYPE_GRAY; break;
    case PixelFormat::kRGB16: layout.bit_depth = 16; break;
    case PixelFormat::kRGBA16:
      layout.color_type = PNG_COLOR_TYPE_RGB_ALPHA;
      layout.bit_depth = 16;
      break;
    default:
      return make_error(StatusCode::kUnsupported,
                        "PNG encoding takes rgb8, bgr8, rgba8, gray8, rgb16 or rgba16 images, not ",
                        std::string(pixel_format_name(image.format)));
  }
  PngWriter writer;
  if (writer.info == nullptr)
    return make_error(StatusCode::kResourceExhausted, "cannot create libpng's encoder");
  std::string out;
  if (!write_png(&writer, &out, &image, &layout)) {
    return make_error(StatusCode::kInternal, "PNG encoding failed: ", std::string(writer.errors.message));
  }
  return out;
}

}  // namespace fovea::io::detail
