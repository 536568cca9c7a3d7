// Image and tensor descriptors: views over memory that someone else owns. They carry format,
// size, per-plane pitch and where the memory lives, never ownership (see core/frame.h for that).
//
// | format      | planes | plane 0           | plane 1             | plane 2      | sample  |
// |-------------|--------|-------------------|---------------------|--------------|---------|
// | kNV12       | 2      | Y  w×h            | UV interleaved w×h/2 |             | u8      |
// | kP016       | 2      | Y  w×h            | UV interleaved w×h/2 |             | u16 (MSB-aligned,
// 10/12/16-bit) | | kYUV420P    | 3      | Y  w×h            | U (w/2)×(h/2)       | V (w/2)×(h/2)| u8      |
// | kRGB8/kBGR8 | 1      | packed 3×w×h      |                     |              | u8      |
// | kRGBA8      | 1      | packed 4×w×h      |                     |              | u8      |
// | kRGB16      | 1      | packed 3×w×h      |                     |              | u16     |
// | kRGBA16     | 1      | packed 4×w×h      |                     |              | u16     |
// | kGRAY8      | 1      | w×h               |                     |              | u8      |
// | kPlanarF32  | c      | one plane each    |                     |              | f32     |
// | kPlanarF16  | c      | one plane each    |                     |              | f16     |
// kRGB16/kRGBA16 hold 16-bit image files (PNG) at full depth, samples in host byte order.
// Chroma sizes round up for odd widths and heights ((w+1)/2), as FFmpeg and NVDEC do.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace fovea {

enum class PixelFormat {
  kNV12,
  kP016,
  kYUV420P,
  kRGB8,
  kBGR8,
  kRGBA8,
  kGRAY8,
  kPlanarF32,
  kPlanarF16,
  kRGB16,
  kRGBA16
};

enum class MemoryKind { kHost, kPinnedHost, kDevice };

std::string_view pixel_format_name(PixelFormat format);
std::string_view memory_kind_name(MemoryKind kind);
bool is_device_accessible(MemoryKind kind);

inline constexpr int kMaxPlanes = 4;

// Bytes between horizontally adjacent pixels in plane 0 (the packed plane, luma, or one float
// plane): RGB8/BGR8 3, RGBA8 4, P016 and planar F16 2, planar F32 4, RGB16 6, RGBA16 8, the
// others 1.
constexpr int pixel_bytes(PixelFormat format) {
  switch (format) {
    case PixelFormat::kRGB16: return 6;
    case PixelFormat::kRGBA16: return 8;
    case PixelFormat::kRGB8:
    case PixelFormat::kBGR8: return 3;
    case PixelFormat::kRGBA8:
    case PixelFormat::kPlanarF32: return 4;
    case PixelFormat::kPlanarF16:
    case PixelFormat::kP016: return 2;
    default: return 1;
  }
}

struct PlaneShape {
  int width_bytes = 0;  // bytes of payload in one row (excluding pitch padding)
  int height = 0;       // rows
};

// The shapes of a format's planes at a size; `channels` only matters for the planar float formats.
struct FormatLayout {
  int num_planes = 0;
  std::array<PlaneShape, kMaxPlanes> planes{};
};
Result<FormatLayout> format_layout(PixelFormat format, int width, int height, int channels = 3);

struct Plane {
  void* data = nullptr;
  std::size_t pitch = 0;  // bytes between the starts of consecutive rows
};

struct ImageView {
  PixelFormat format = PixelFormat::kNV12;
  int width = 0;
  int height = 0;
  int channels = 3;  // only for kPlanarF32/kPlanarF16
  MemoryKind memory = MemoryKind::kHost;
  int num_planes = 0;
  std::array<Plane, kMaxPlanes> planes{};

  template <typename T = std::uint8_t>
  T* row(int plane, int y) const {
    return reinterpret_cast<T*>(static_cast<std::uint8_t*>(planes[plane].data) +
                                static_cast<std::size_t>(y) * planes[plane].pitch);
  }
};

// A contiguous allocation for an image: each plane's pitch rounded up to `pitch_alignment`
// (256 bytes suits coalesced GPU access and NVDEC's own surfaces) and planes laid out back to back.
struct ImageAllocation {
  std::size_t total_bytes = 0;
  FormatLayout layout;
  std::array<std::size_t, kMaxPlanes> pitches{};
  std::array<std::size_t, kMaxPlanes> offsets{};
};
Result<ImageAllocation> plan_image_allocation(PixelFormat format, int width, int height, int channels = 3,
                                              std::size_t pitch_alignment = 256);
// Points `view`'s planes into `base` following `allocation`.
ImageView image_view_in(void* base, const ImageAllocation& allocation, PixelFormat format, int width,
                        int height, MemoryKind memory, int channels = 3);

enum class DataType { kFloat32, kFloat16, kFloat64, kInt64, kInt32, kUInt8, kInt8, kBool };
std::string_view data_type_name(DataType type);
std::size_t data_type_size(DataType type);

inline constexpr int kMaxTensorRank = 8;

// A strided n-dimensional view. Strides are in elements.
struct TensorView {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  MemoryKind memory = MemoryKind::kHost;
  int rank = 0;
  std::array<std::int64_t, kMaxTensorRank> shape{};
  std::array<std::int64_t, kMaxTensorRank> strides{};

  std::int64_t num_elements() const;
  bool is_contiguous() const;
};
// A dense row-major view of `shape`.
TensorView contiguous_tensor(void* data, DataType dtype, MemoryKind memory,
                             std::initializer_list<std::int64_t> shape);

}  // namespace fovea
