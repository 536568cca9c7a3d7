// EXIF orientation: read from the APP1 block's TIFF structure (EXIF 2.32, section 4.5.4 and 4.6.4:
// "Exif\0\0", then a TIFF header, IFD0 whose tag 0x0112 holds the orientation) and applied to
// the decoded pixels.
#include <cstring>

#include "io/image_codec_internal.h"

namespace fovea::io::detail {
namespace {

// A bounds-checked little- or big-endian reader over the TIFF block.
class TiffReader {
 public:
  TiffReader(std::span<const std::uint8_t> tiff, bool little_endian) : tiff_(tiff), little_(little_endian) {}

  bool u16(std::size_t offset, std::uint16_t* value) const {
    if (offset + 2 > tiff_.size()) return false;
    const std::uint8_t* p = tiff_.data() + offset;
    *value =
        little_ ? static_cast<std::uint16_t>(p[0] | p[1] << 8) : static_cast<std::uint16_t>(p[0] << 8 | p[1]);
    return true;
  }
  bool u32(std::size_t offset, std::uint32_t* value) const {
    std::uint16_t a = 0;
    std::uint16_t b = 0;
    if (!u16(offset, &a) || !u16(offset + 2, &b)) return false;
    *value = little_ ? (std::uint32_t{b} << 16 | a) : (std::uint32_t{a} << 16 | b);
    return true;
  }

 private:
  std::span<const std::uint8_t> tiff_;
  bool little_;
};

// Where output pixel (x, y) of the upright image comes from in the stored w x h image, for each
// orientation, from the EXIF definition of which stored row/column is the visual top/left:
// 2 mirrors, 3 turns 180, 4 flips, 5 transposes, 6 turns 90 clockwise, 7 transverses, 8 turns 90
// counter-clockwise.
struct SourcePixel {
  int x;
  int y;
};
SourcePixel source_of(int orientation, int x, int y, int w, int h) {
  switch (orientation) {
    case 2: return {w - 1 - x, y};
    case 3: return {w - 1 - x, h - 1 - y};
    case 4: return {x, h - 1 - y};
    case 5: return {y, x};
    case 6: return {y, h - 1 - x};
    case 7: return {w - 1 - y, h - 1 - x};
    case 8: return {w - 1 - y, x};
    default: return {x, y};
  }
}

}  // namespace

int exif_orientation(std::span<const std::uint8_t> app1) {
  constexpr std::size_t kExifHeader = 6;  // "Exif\0\0"
  constexpr std::uint16_t kOrientationTag = 0x0112;
  constexpr std::uint16_t kShortType = 3;
  constexpr std::size_t kEntryBytes = 12;
  if (app1.size() < kExifHeader + 8 || std::memcmp(app1.data(), "Exif\0\0", kExifHeader) != 0) return 1;
  const std::span<const std::uint8_t> tiff = app1.subspan(kExifHeader);
  const bool little = tiff[0] == 'I' && tiff[1] == 'I';
  if (!little && !(tiff[0] == 'M' && tiff[1] == 'M')) return 1;
  const TiffReader reader(tiff, little);
  std::uint32_t ifd = 0;
  std::uint16_t count = 0;
  if (!reader.u32(4, &ifd) || !reader.u16(ifd, &count)) return 1;
  for (std::uint16_t i = 0; i < count; ++i) {
    const std::size_t entry = ifd + 2 + i * kEntryBytes;
    std::uint16_t tag = 0;
    std::uint16_t type = 0;
    std::uint16_t value = 0;
    if (!reader.u16(entry, &tag) || !reader.u16(entry + 2, &type) || !reader.u16(entry + 8, &value)) return 1;
    if (tag == kOrientationTag) return type == kShortType && value >= 1 && value <= 8 ? value : 1;
  }
  return 1;
}

Result<HostImage> apply_orientation(HostImage image, int orientation) {
  if (orientation <= 1 || orientation > 8) return image;
  const ImageView& in = image.view();
  const bool swaps = orientation >= 5;
  const int out_w = swaps ? in.height : in.width;
  const int out_h = swaps ? in.width : in.height;
  FOVEA_ASSIGN_OR_RETURN(HostImage out, HostImage::allocate(in.format, out_w, out_h));
  const std::size_t bytes = static_cast<std::size_t>(pixel_bytes(in.format));
  for (int y = 0; y < out_h; ++y) {
    std::uint8_t* dst = out.row(y);
    for (int x = 0; x < out_w; ++x) {
      const SourcePixel s = source_of(orientation, x, y, in.width, in.height);
      std::memcpy(dst + x * bytes, image.row(s.y) + s.x * bytes, bytes);
    }
  }
  return out;
}

}  // namespace fovea::io::detail
