// WebP through libwebp's simple decoding API (lossy, lossless, alpha); animated files are refused,
// since one file must give one picture here.
#include <fmt/format.h>
#include <webp/decode.h>

#include "io/image_codec_internal.h"

namespace fovea::io::detail {
namespace {

constexpr std::string_view kWebp = "WebP";

std::string_view describe(VP8StatusCode code) {
  switch (code) {
    case VP8_STATUS_OK: return "ok";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "damaged bitstream";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "file truncated (not enough data)";
  }
  return "unknown error";
}

}  // namespace

Result<DecodedImage> decode_webp(std::span<const std::uint8_t> bytes, std::string_view name,
                                 const ImageDecodeOptions& options) {
  WebPBitstreamFeatures features{};
  const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (status != VP8_STATUS_OK) {
    return image_error(StatusCode::kCorruptData, name, kWebp,
                       fmt::format("cannot read its header: {}", describe(status)));
  }
  if (features.has_animation) {
    return image_error(StatusCode::kUnsupported, name, kWebp,
                       "animated WebP is not supported (one picture per file)");
  }
  FOVEA_TRY(check_image_size(name, features.width, features.height, options.limits));
  DecodedImage decoded;
  decoded.file_format = ImageFileFormat::kWebp;
  decoded.source_has_alpha = features.has_alpha != 0;
  const bool alpha = options.keep_alpha && decoded.source_has_alpha;
  {
    Result<HostImage> image = HostImage::allocate(alpha ? PixelFormat::kRGBA8 : PixelFormat::kRGB8,
                                                  features.width, features.height);
    if (!image.is_ok()) return image.status().with_context(name);
    decoded.image = std::move(image).value();
  }
  const ImageView& view = decoded.image.view();
  std::uint8_t* out = decoded.image.row(0);
  const int pitch = static_cast<int>(view.planes[0].pitch);
  const std::size_t size = decoded.image.size_bytes();
  const std::uint8_t* done = alpha ? WebPDecodeRGBAInto(bytes.data(), bytes.size(), out, size, pitch)
                                   : WebPDecodeRGBInto(bytes.data(), bytes.size(), out, size, pitch);
  if (done == nullptr) {
    return image_error(StatusCode::kCorruptData, name, kWebp, "damaged or truncated image data");
  }
  return decoded;
}

}  // namespace fovea::io::detail
