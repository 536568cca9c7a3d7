// BMP: fovea's own reader for the uncompressed forms photographs and tools write (24-bit BGR,
// 32-bit BGRX / BGRA with BI_RGB or byte-aligned BI_BITFIELDS masks), bottom-up or top-down.
// Palette, 16-bit and RLE bitmaps are refused by name. Layout: Microsoft's BITMAPFILEHEADER and
// BITMAPINFOHEADER (and its V3/V4/V5 extensions, whose first 40 bytes are the same).
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "io/image_codec_internal.h"

namespace fovea::io::detail {
namespace {

constexpr std::string_view kBmp = "BMP";
constexpr std::size_t kFileHeaderBytes = 14;
constexpr std::uint32_t kInfoHeaderBytes = 40;
constexpr std::uint32_t kBiRgb = 0;
constexpr std::uint32_t kBiBitfields = 3;
constexpr std::uint32_t kBiAlphaBitfields = 6;

std::uint32_t le32(std::span<const std::uint8_t> b, std::size_t offset) {
  return std::uint32_t{b[offset]} | std::uint32_t{b[offset + 1]} << 8 | std::uint32_t{b[offset + 2]} << 16 |
         std::uint32_t{b[offset + 3]} << 24;
}
std::uint16_t le16(std::span<const std::uint8_t> b, std::size_t offset) {
  return static_cast<std::uint16_t>(b[offset] | b[offset + 1] << 8);
}

// Byte positions of R, G, B and A within a 32-bit pixel; alpha < 0 when there is none.
struct ChannelBytes {
  int r = 2;
  int g = 1;
  int b = 0;
  int a = -1;
};

// A mask selecting one whole byte: its byte index; otherwise no value.
std::optional<int> byte_of(std::uint32_t mask) {
  if (mask == 0 || std::popcount(mask) != 8 || std::countr_zero(mask) % 8 != 0) return std::nullopt;
  return std::countr_zero(mask) / 8;
}

struct BmpHeader {
  int width = 0;
  int height = 0;
  bool top_down = false;
  int bits = 0;
  std::uint32_t data_offset = 0;
  ChannelBytes channels;
};

Status unsupported(std::string_view name, std::string_view what) {
  return image_error(StatusCode::kUnsupported, name, kBmp,
                     fmt::format("{} is not supported (fovea reads uncompressed 24- and 32-bit BMP)", what));
}

// Masks follow a 40-byte header (BI_BITFIELDS: R, G, B; BI_ALPHABITFIELDS: R, G, B, A) and lie
// inside the longer V3/V4/V5 headers at the same offset.
Result<ChannelBytes> bitfield_channels(std::span<const std::uint8_t> b, std::string_view name,
                                       std::uint32_t compression, std::uint32_t header_bytes) {
  const std::size_t masks = kFileHeaderBytes + kInfoHeaderBytes;
  const bool has_alpha_mask = compression == kBiAlphaBitfields || header_bytes >= 56;
  if (b.size() < masks + (has_alpha_mask ? 16 : 12)) {
    return image_error(StatusCode::kCorruptData, name, kBmp, "file truncated inside its color masks");
  }
  const auto r = byte_of(le32(b, masks));
  const auto g = byte_of(le32(b, masks + 4));
  const auto bl = byte_of(le32(b, masks + 8));
  if (!r || !g || !bl) return unsupported(name, "a 32-bit BMP whose color masks are not whole bytes");
  ChannelBytes channels{*r, *g, *bl, -1};
  if (has_alpha_mask) channels.a = byte_of(le32(b, masks + 12)).value_or(-1);
  return channels;
}

Result<BmpHeader> read_header(std::span<const std::uint8_t> b, std::string_view name) {
  if (b.size() < kFileHeaderBytes + kInfoHeaderBytes) {
    return image_error(StatusCode::kCorruptData, name, kBmp, "file truncated inside its header");
  }
  const std::uint32_t header_bytes = le32(b, 14);
  if (header_bytes < kInfoHeaderBytes) {
    return unsupported(name, fmt::format("a BMP with a {}-byte (OS/2) header", header_bytes));
  }
  BmpHeader header;
  header.data_offset = le32(b, 10);
  const auto width = static_cast<std::int32_t>(le32(b, 18));
  const auto height = static_cast<std::int32_t>(le32(b, 22));
  header.bits = le16(b, 28);
  const std::uint32_t compression = le32(b, 30);
  if (width <= 0 || height == 0 || height == INT32_MIN) {
    return image_error(StatusCode::kCorruptData, name, kBmp,
                       fmt::format("invalid size {}x{}", width, height));
  }
  header.width = width;
  header.height = std::abs(height);
  header.top_down = height < 0;
  if (header.bits == 24 && compression == kBiRgb) return header;
  if (header.bits == 32 && compression == kBiRgb) return header;  // the fourth byte is reserved
  if (header.bits == 32 && (compression == kBiBitfields || compression == kBiAlphaBitfields)) {
    FOVEA_ASSIGN_OR_RETURN(header.channels, bitfield_channels(b, name, compression, header_bytes));
    return header;
  }
  return unsupported(name, fmt::format("a {}-bit BMP with compression {}", header.bits, compression));
}

}  // namespace

Result<DecodedImage> decode_bmp(std::span<const std::uint8_t> bytes, std::string_view name,
                                const ImageDecodeOptions& options) {
  FOVEA_ASSIGN_OR_RETURN(const BmpHeader header, read_header(bytes, name));
  FOVEA_TRY(check_image_size(name, header.width, header.height, options.limits));
  const std::size_t pixel = static_cast<std::size_t>(header.bits / 8);
  const std::size_t stride =
      (static_cast<std::size_t>(header.width) * header.bits + 31) / 32 * 4;  // 4-byte rows
  if (header.data_offset > bytes.size() || stride * header.height > bytes.size() - header.data_offset) {
    return image_error(
        StatusCode::kCorruptData, name, kBmp,
        fmt::format("file truncated: {}x{} pixels need {} bytes after offset {}, the file has {}",
                    header.width, header.height, stride * header.height, header.data_offset, bytes.size()));
  }
  DecodedImage decoded;
  decoded.file_format = ImageFileFormat::kBmp;
  decoded.source_has_alpha = header.channels.a >= 0;
  const bool alpha = options.keep_alpha && decoded.source_has_alpha;
  {
    Result<HostImage> image =
        HostImage::allocate(alpha ? PixelFormat::kRGBA8 : PixelFormat::kRGB8, header.width, header.height);
    if (!image.is_ok()) return image.status().with_context(name);
    decoded.image = std::move(image).value();
  }
  const ChannelBytes& c = header.channels;
  const std::size_t out_pixel = alpha ? 4 : 3;
  for (int y = 0; y < header.height; ++y) {
    const int stored_row = header.top_down ? y : header.height - 1 - y;
    const std::uint8_t* in = bytes.data() + header.data_offset + stride * stored_row;
    std::uint8_t* out = decoded.image.row(y);
    for (int x = 0; x < header.width; ++x, in += pixel, out += out_pixel) {
      out[0] = in[c.r];
      out[1] = in[c.g];
      out[2] = in[c.b];
      if (alpha) out[3] = in[c.a];
    }
  }
  return decoded;
}

}  // namespace fovea::io::detail
