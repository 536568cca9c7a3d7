// Image files on the CPU: decode JPEG, PNG, BMP and WebP into an owned host image, encode JPEG and
// PNG, write them without ever destroying data. The CPU path of the image flow and the reference
// the GPU JPEG decoder is compared with.
//
// | file | library                | decodes                                         | output            |
// |------|------------------------|-------------------------------------------------|-------------------|
// | JPEG | libjpeg (libjpeg-turbo) | baseline, progressive; RGB, gray, CMYK, YCCK;  | kRGB8             |
// |      |                        | EXIF orientation applied (all 8)                 |                   |
// | PNG  | libpng                 | 1/2/4/8/16-bit gray, gray+alpha, RGB, RGBA,      | kRGB8, kRGBA8,    |
// |      |                        | palette (+tRNS), interlaced                      | kRGB16, kRGBA16   |
// | BMP  | fovea's reader         | uncompressed 24-bit, 32-bit (BI_RGB, BITFIELDS)  | kRGB8, kRGBA8     |
// | WebP | libwebp                | lossy, lossless, with alpha (not animated)       | kRGB8, kRGBA8     |
//
// Gray, palette and CMYK files become RGB, so every model sees three channels. The format comes
// from the file's first bytes, never from its name. JPEG is decoded with libjpeg's accurate
// integer IDCT (JDCT_ISLOW), the one nvJPEG is compared against.
//
// Damage is an error, not a grey picture: libjpeg's warnings about the entropy-coded data
// (truncated file, bad Huffman code, premature marker) fail the decode, as do libpng's CRC and
// read errors. Every error names the file and the reason.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/image.h"
#include "core/status.h"

namespace fovea::io {

enum class ImageFileFormat { kJpeg, kPng, kBmp, kWebp };
std::string_view image_file_format_name(ImageFileFormat format);
// The format whose signature `head` (the file's first bytes; 12 suffice) starts with.
std::optional<ImageFileFormat> sniff_image_format(std::span<const std::uint8_t> head);

// Refused before any pixel memory is allocated; the error names the file and its size.
// 16384 per side is WebP's own maximum (16383) rounded up and libjpeg-turbo's TurboJPEG limit for
// buffers; 2^27 pixels (e.g. 16384 x 8192) bounds one decoded image to 512 MiB as RGBA8 (1 GiB as
// RGBA16), so a pool of decode threads stays within a few GiB. A 20000 x 20000 image is refused.
struct ImageLimits {
  int max_side = 16384;
  std::int64_t max_pixels = std::int64_t{1} << 27;
  // Files are read whole: 1 GiB is far above any image within max_pixels (a 16-bit RGBA PNG
  // stored uncompressed at the pixel cap is 1 GiB).
  std::int64_t max_file_bytes = std::int64_t{1} << 30;
};

// kResourceExhausted naming `name`, the size and the limit when width x
// height is beyond `limits`; ok otherwise. Decoders call it after reading the header.
Status check_image_size(std::string_view name, int width, int height, const ImageLimits& limits);

struct ImageDecodeOptions {
  // An alpha channel (PNG, BMP, WebP) is kept as kRGBA8/kRGBA16; when false it is dropped.
  bool keep_alpha = false;
  // A 16-bit PNG is kept as kRGB16/kRGBA16; when false it is scaled to 8 bits (v * 255 / 65535,
  // rounded: libpng's png_set_scale_16).
  bool keep_16bit = false;
  // JPEG's EXIF orientation tag turns the picture upright; false leaves the stored orientation.
  bool apply_orientation = true;
  // JPEG's subsampled chroma: interpolated (libjpeg's "fancy" upsampling, its default and PIL's) or
  // replicated (nvJPEG's way: the reference a GPU-decoded JPEG is held to).
  bool fancy_upsampling = true;
  ImageLimits limits;
};

// An image in host memory that owns its pixels (tight rows: pitch = width x pixel bytes).
// Non-copyable; movable.
class HostImage {
 public:
  // kResourceExhausted when the memory cannot be had (an error, never an abort).
  static Result<HostImage> allocate(PixelFormat format, int width, int height);
  HostImage() = default;
  HostImage(HostImage&&) noexcept = default;
  HostImage& operator=(HostImage&&) noexcept = default;
  HostImage(const HostImage&) = delete;
  HostImage& operator=(const HostImage&) = delete;

  const ImageView& view() const { return view_; }
  std::uint8_t* row(int y) const { return view_.row(0, y); }
  std::size_t size_bytes() const { return view_.planes[0].pitch * static_cast<std::size_t>(view_.height); }

 private:
  std::unique_ptr<std::uint8_t[]> data_;
  ImageView view_;
};

struct DecodedImage {
  HostImage image;
  ImageFileFormat file_format = ImageFileFormat::kJpeg;
  int source_bit_depth = 8;  // bits per sample in the file (16 for a 16-bit PNG kept or narrowed)
  bool source_has_alpha = false;
  int orientation = 1;  // the EXIF orientation found (1 when none); applied if the options say so
};

// The file's bytes, read whole, for a decoder that takes them from memory (the GPU's): kNotFound /
// kIoError (cannot read it), kInvalidArgument (not a regular file), kCorruptData (empty),
// kResourceExhausted (beyond limits.max_file_bytes). Errors name the file.
Result<std::vector<std::uint8_t>> read_image_bytes(const std::filesystem::path& path,
                                                   const ImageLimits& limits = {});

// The same, into memory of the caller's: `allocate(size)` gives `size` bytes that stay the caller's
// (e.g. pinned host memory, which a GPU copies from without staging it); its error, with the file's
// name, is the read's.
using ByteAllocator = std::function<Result<std::span<std::uint8_t>>(std::size_t size)>;
Result<std::span<std::uint8_t>> read_image_bytes(const std::filesystem::path& path,
                                                 const ByteAllocator& allocate,
                                                 const ImageLimits& limits = {});

// Decodes the file at `path` (read whole). Errors: kNotFound / kIoError (cannot read it),
// kCorruptData (empty, not an image, truncated, damaged), kUnsupported (a form of a format fovea
// does not decode), kResourceExhausted (beyond the limits).
Result<DecodedImage> decode_image_file(const std::filesystem::path& path,
                                       const ImageDecodeOptions& options = {});
// Decodes bytes already in memory; `name` (the file) prefixes every error.
Result<DecodedImage> decode_image(std::span<const std::uint8_t> bytes, std::string_view name,
                                  const ImageDecodeOptions& options = {});

// Encoders take host images: JPEG kRGB8, kBGR8, kGRAY8 (a JPEG has no alpha: RGBA is refused, not
// silently flattened); PNG kRGB8, kBGR8, kRGBA8, kGRAY8, kRGB16, kRGBA16.
struct ImageEncodeOptions {
  ImageFileFormat format = ImageFileFormat::kPng;
  int jpeg_quality = 90;  // 1..100, libjpeg's scale; 4:2:0 chroma as libjpeg's defaults set it
  int png_level = 6;      // zlib level 0..9; 6 is zlib's default and PIL's
};
Result<std::string> encode_image(const ImageView& image, const ImageEncodeOptions& options);

// Encodes `image` and writes it to `path` under a temporary name, renamed into place when
// complete (core/output_file.h). Refuses (kInvalidArgument, nothing written) when `path` is one of
// `inputs` (the same file, links included): an image is never written over an input.
Status write_image_file(const std::filesystem::path& path, const ImageView& image,
                        const ImageEncodeOptions& options, const std::vector<std::string>& inputs);

}  // namespace fovea::io
