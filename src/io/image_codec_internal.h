// What the per-format image decoders and encoders share (src/io/image_*.cpp); not for use outside
// src/io.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/image.h"
#include "core/status.h"
#include "io/image_codec.h"

namespace fovea::io::detail {

// "photo.jpg: JPEG: reason" with `code`.
Status image_error(StatusCode code, std::string_view name, std::string_view format, std::string_view reason);

Result<DecodedImage> decode_jpeg(std::span<const std::uint8_t> bytes, std::string_view name,
                                 const ImageDecodeOptions& options);
Result<DecodedImage> decode_png(std::span<const std::uint8_t> bytes, std::string_view name,
                                const ImageDecodeOptions& options);
Result<DecodedImage> decode_bmp(std::span<const std::uint8_t> bytes, std::string_view name,
                                const ImageDecodeOptions& options);
Result<DecodedImage> decode_webp(std::span<const std::uint8_t> bytes, std::string_view name,
                                 const ImageDecodeOptions& options);

Result<std::string> encode_jpeg(const ImageView& image, int quality);
Result<std::string> encode_png(const ImageView& image, int level);

// The orientation (1..8) in an APP1 payload that starts with "Exif\0\0" and a TIFF header; 1 when
// the payload has no valid orientation tag (a damaged EXIF block never fails a decode: the
// picture is still there).
int exif_orientation(std::span<const std::uint8_t> app1);
// `image` turned upright for EXIF orientation 2..8 (5..8 swap width and height); 1 moves it.
Result<HostImage> apply_orientation(HostImage image, int orientation);

}  // namespace fovea::io::detail
