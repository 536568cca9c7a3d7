#include "io/image_codec.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "core/output_file.h"
#include "io/image_codec_internal.h"

namespace fovea::io {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

Status file_error(const std::filesystem::path& path, int error_number, std::string_view doing) {
  const StatusCode code = error_number == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError;
  return make_error(code,
                    fmt::format("{}: cannot {} it: {}", path.string(), doing, std::strerror(error_number)));
}

// The file's size once it is known to be a regular, non-empty file within the limits.
Result<std::size_t> checked_file_size(std::FILE* file, const std::filesystem::path& path,
                                      const ImageLimits& limits) {
  struct stat info {};
  if (::fstat(::fileno(file), &info) != 0) return file_error(path, errno, "stat");
  if (!S_ISREG(info.st_mode)) {
    return make_error(StatusCode::kInvalidArgument, path.string(),
                      ": not a regular file (a folder or a device)");
  }
  if (info.st_size == 0) return make_error(StatusCode::kCorruptData, path.string(), ": empty file (0 bytes)");
  if (info.st_size > limits.max_file_bytes) {
    return make_error(StatusCode::kResourceExhausted,
                      fmt::format("{}: file of {} bytes is larger than the limit of {} bytes", path.string(),
                                  info.st_size, limits.max_file_bytes));
  }
  return static_cast<std::size_t>(info.st_size);
}

Result<std::span<std::uint8_t>> read_whole_file(const std::filesystem::path& path,
                                                const ByteAllocator& allocate, const ImageLimits& limits) {
  FilePtr file(std::fopen(path.c_str(), "rb"));
  if (!file) return file_error(path, errno, "open");
  FOVEA_ASSIGN_OR_RETURN(const std::size_t size, checked_file_size(file.get(), path, limits));
  Result<std::span<std::uint8_t>> bytes = allocate(size);
  if (!bytes.is_ok()) return bytes.status().with_context(path.string());
  if (std::fread(bytes->data(), 1, size, file.get()) != size) {
    return file_error(path, std::ferror(file.get()) ? errno : EIO, "read");
  }
  return bytes;
}

Result<std::vector<std::uint8_t>> read_whole_file(const std::filesystem::path& path,
                                                  const ImageLimits& limits) {
  std::vector<std::uint8_t> bytes;
  const ByteAllocator into_vector = [&](std::size_t size) -> Result<std::span<std::uint8_t>> {
    bytes.resize(size);
    return std::span<std::uint8_t>(bytes);
  };
  FOVEA_TRY(read_whole_file(path, into_vector, limits).status());
  return bytes;
}

// The first bytes as hex, so "not an image" shows what the file is instead.
std::string head_hex(std::span<const std::uint8_t> bytes) {
  constexpr std::size_t kShown = 8;
  std::string hex;
  for (std::size_t i = 0; i < std::min(kShown, bytes.size()); ++i) {
    hex += fmt::format("{}{:02x}", i ? " " : "", bytes[i]);
  }
  return hex;
}

Status check_encodable(const ImageView& image) {
  if (image.memory != MemoryKind::kHost && image.memory != MemoryKind::kPinnedHost) {
    return make_error(StatusCode::kInvalidArgument, "image encoders take host images, not ",
                      std::string(memory_kind_name(image.memory)), " memory");
  }
  if (image.width <= 0 || image.height <= 0 || image.num_planes < 1 || image.planes[0].data == nullptr) {
    return make_error(StatusCode::kInvalidArgument, "image to encode is empty (", std::to_string(image.width),
                      "x", std::to_string(image.height), ")");
  }
  return Status::ok();
}

}  // namespace

namespace detail {

Status image_error(StatusCode code, std::string_view name, std::string_view format, std::string_view reason) {
  return make_error(code, fmt::format("{}: {}: {}", name, format, reason));
}

}  // namespace detail

std::string_view image_file_format_name(ImageFileFormat format) {
  switch (format) {
    case ImageFileFormat::kJpeg: return "JPEG";
    case ImageFileFormat::kPng: return "PNG";
    case ImageFileFormat::kBmp: return "BMP";
    case ImageFileFormat::kWebp: return "WebP";
  }
  return "unknown";
}

std::optional<ImageFileFormat> sniff_image_format(std::span<const std::uint8_t> head) {
  auto starts_with = [head](std::size_t offset, std::string_view signature) {
    return head.size() >= offset + signature.size() &&
           std::equal(signature.begin(), signature.end(), head.begin() + static_cast<std::ptrdiff_t>(offset),
                      [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; });
  };
  // Signatures: JPEG's SOI marker and the first byte of the next marker (ITU T.81 B.1.1.3), PNG's
  // 8-byte signature (PNG spec 5.2), BMP's "BM" file type, WebP's RIFF container with form "WEBP".
  if (starts_with(0, "\xFF\xD8\xFF")) return ImageFileFormat::kJpeg;
  if (starts_with(0, "\x89PNG\r\n\x1A\n")) return ImageFileFormat::kPng;
  if (starts_with(0, "RIFF") && starts_with(8, "WEBP")) return ImageFileFormat::kWebp;
  if (starts_with(0, "BM")) return ImageFileFormat::kBmp;
  return std::nullopt;
}

Status check_image_size(std::string_view name, int width, int height, const ImageLimits& limits) {
  const std::int64_t pixels = static_cast<std::int64_t>(width) * height;
  if (width <= 0 || height <= 0) {
    return make_error(StatusCode::kCorruptData,
                      fmt::format("{}: image size {}x{} is empty", name, width, height));
  }
  if (width > limits.max_side || height > limits.max_side || pixels > limits.max_pixels) {
    return make_error(StatusCode::kResourceExhausted,
                      fmt::format("{}: image of {}x{} ({} pixels) is beyond the limit of {} per side and {} "
                                  "pixels; refused before decoding",
                                  name, width, height, pixels, limits.max_side, limits.max_pixels));
  }
  return Status::ok();
}

Result<HostImage> HostImage::allocate(PixelFormat format, int width, int height) {
  FOVEA_ASSIGN_OR_RETURN(const FormatLayout layout, format_layout(format, width, height));
  if (layout.num_planes != 1) {
    return make_error(StatusCode::kInvalidArgument, "host images are packed, not ",
                      std::string(pixel_format_name(format)));
  }
  const std::size_t pitch = static_cast<std::size_t>(layout.planes[0].width_bytes);
  const std::size_t bytes = pitch * static_cast<std::size_t>(height);
  HostImage image;
  image.data_.reset(new (std::nothrow) std::uint8_t[bytes]);
  if (!image.data_) {
    return make_error(StatusCode::kResourceExhausted,
                      fmt::format("cannot allocate {} bytes for a {}x{} {} image", bytes, width, height,
                                  pixel_format_name(format)));
  }
  image.view_.format = format;
  image.view_.width = width;
  image.view_.height = height;
  image.view_.memory = MemoryKind::kHost;
  image.view_.num_planes = 1;
  image.view_.planes[0] = {image.data_.get(), pitch};
  return image;
}

Result<DecodedImage> decode_image(std::span<const std::uint8_t> bytes, std::string_view name,
                                  const ImageDecodeOptions& options) {
  if (bytes.empty()) return make_error(StatusCode::kCorruptData, name, ": empty file (0 bytes)");
  const std::optional<ImageFileFormat> format = sniff_image_format(bytes);
  if (!format) {
    return make_error(StatusCode::kCorruptData,
                      fmt::format("{}: not an image fovea reads (JPEG, PNG, BMP, WebP): the file starts with "
                                  "bytes {}",
                                  name, head_hex(bytes)));
  }
  switch (*format) {
    case ImageFileFormat::kJpeg: return detail::decode_jpeg(bytes, name, options);
    case ImageFileFormat::kPng: return detail::decode_png(bytes, name, options);
    case ImageFileFormat::kBmp: return detail::decode_bmp(bytes, name, options);
    case ImageFileFormat::kWebp: return detail::decode_webp(bytes, name, options);
  }
  return make_error(StatusCode::kInternal, name, ": unknown image format");
}

Result<std::vector<std::uint8_t>> read_image_bytes(const std::filesystem::path& path,
                                                   const ImageLimits& limits) {
  return read_whole_file(path, limits);
}

Result<std::span<std::uint8_t>> read_image_bytes(const std::filesystem::path& path,
                                                 const ByteAllocator& allocate, const ImageLimits& limits) {
  return read_whole_file(path, allocate, limits);
}

Result<DecodedImage> decode_image_file(const std::filesystem::path& path, const ImageDecodeOptions& options) {
  FOVEA_ASSIGN_OR_RETURN(const std::vector<std::uint8_t> bytes, read_whole_file(path, options.limits));
  return decode_image(bytes, path.string(), options);
}

Result<std::string> encode_image(const ImageView& image, const ImageEncodeOptions& options) {
  FOVEA_TRY(check_encodable(image));
  switch (options.format) {
    case ImageFileFormat::kJpeg:
      if (options.jpeg_quality < 1 || options.jpeg_quality > 100) {
        return make_error(StatusCode::kInvalidArgument, "JPEG quality ", std::to_string(options.jpeg_quality),
                          " is outside 1..100");
      }
      return detail::encode_jpeg(image, options.jpeg_quality);
    case ImageFileFormat::kPng:
      if (options.png_level < 0 || options.png_level > 9) {
        return make_error(StatusCode::kInvalidArgument, "PNG compression level ",
                          std::to_string(options.png_level), " is outside 0..9");
      }
      return detail::encode_png(image, options.png_level);
    case ImageFileFormat::kBmp:
    case ImageFileFormat::kWebp: break;
  }
  return make_error(StatusCode::kUnsupported, "fovea writes JPEG and PNG images, not ",
                    std::string(image_file_format_name(options.format)));
}

Status write_image_file(const std::filesystem::path& path, const ImageView& image,
                        const ImageEncodeOptions& options, const std::vector<std::string>& inputs) {
  FOVEA_TRY(check_not_an_input({"image", path}, inputs));
  Result<std::string> bytes = encode_image(image, options);
  if (!bytes.is_ok()) return bytes.status().with_context(path.string());
  return write_file_atomically(path, *bytes, "image");
}

}  // namespace fovea::io
