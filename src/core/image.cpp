#include "core/image.h"

#include <limits>

namespace fovea {

std::string_view pixel_format_name(PixelFormat format) {
  switch (format) {
    case PixelFormat::kNV12: return "nv12";
    case PixelFormat::kP016: return "p016";
    case PixelFormat::kYUV420P: return "yuv420p";
    case PixelFormat::kRGB8: return "rgb8";
    case PixelFormat::kBGR8: return "bgr8";
    case PixelFormat::kRGBA8: return "rgba8";
    case PixelFormat::kGRAY8: return "gray8";
    case PixelFormat::kPlanarF32: return "planar-f32";
    case PixelFormat::kPlanarF16: return "planar-f16";
    case PixelFormat::kRGB16: return "rgb16";
    case PixelFormat::kRGBA16: return "rgba16";
  }
  return "unknown";
}

std::string_view memory_kind_name(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHost: return "host";
    case MemoryKind::kPinnedHost: return "pinned-host";
    case MemoryKind::kDevice: return "device";
  }
  return "unknown";
}

bool is_device_accessible(MemoryKind kind) {
  return kind != MemoryKind::kHost;
}

Result<FormatLayout> format_layout(PixelFormat format, int width, int height, int channels) {
  // 2^15 per side bounds every row and plane size well inside int arithmetic.
  constexpr int kMaxSide = 1 << 15;
  if (width <= 0 || height <= 0 || width > kMaxSide || height > kMaxSide) {
    return make_error(StatusCode::kInvalidArgument, "image size ", std::to_string(width), "x",
                      std::to_string(height), " is outside 1..", std::to_string(kMaxSide));
  }
  const int chroma_w = (width + 1) / 2;
  const int chroma_h = (height + 1) / 2;
  FormatLayout layout;
  auto set = [&layout](std::initializer_list<PlaneShape> planes) {
    layout.num_planes = 0;
    for (const PlaneShape& p : planes) {
      layout.planes[layout.num_planes++] = p;
    }
  };
  switch (format) {
    case PixelFormat::kNV12: set({{width, height}, {2 * chroma_w, chroma_h}}); break;
    case PixelFormat::kP016: set({{2 * width, height}, {4 * chroma_w, chroma_h}}); break;
    case PixelFormat::kYUV420P: set({{width, height}, {chroma_w, chroma_h}, {chroma_w, chroma_h}}); break;
    case PixelFormat::kRGB8:
    case PixelFormat::kBGR8: set({{3 * width, height}}); break;
    case PixelFormat::kRGBA8: set({{4 * width, height}}); break;
    case PixelFormat::kGRAY8: set({{width, height}}); break;
    case PixelFormat::kRGB16: set({{6 * width, height}}); break;
    case PixelFormat::kRGBA16: set({{8 * width, height}}); break;
    case PixelFormat::kPlanarF32:
    case PixelFormat::kPlanarF16: {
      if (channels < 1 || channels > kMaxPlanes) {
        return make_error(StatusCode::kInvalidArgument, "planar images have 1..", std::to_string(kMaxPlanes),
                          " channels, not ", std::to_string(channels));
      }
      const int sample = format == PixelFormat::kPlanarF32 ? 4 : 2;
      layout.num_planes = channels;
      for (int c = 0; c < channels; ++c) {
        layout.planes[c] = {sample * width, height};
      }
      break;
    }
  }
  return layout;
}

Result<ImageAllocation> plan_image_allocation(PixelFormat format, int width, int height, int channels,
                                              std::size_t pitch_alignment) {
  if (pitch_alignment == 0 || (pitch_alignment & (pitch_alignment - 1)) != 0) {
    return make_error(StatusCode::kInvalidArgument, "pitch alignment ", std::to_string(pitch_alignment),
                      " is not a power of two");
  }
  FOVEA_ASSIGN_OR_RETURN(FormatLayout layout, format_layout(format, width, height, channels));
  ImageAllocation allocation;
  allocation.layout = layout;
  std::size_t offset = 0;
  for (int p = 0; p < layout.num_planes; ++p) {
    const std::size_t row = static_cast<std::size_t>(layout.planes[p].width_bytes);
    const std::size_t pitch = (row + pitch_alignment - 1) & ~(pitch_alignment - 1);
    allocation.pitches[p] = pitch;
    allocation.offsets[p] = offset;
    offset += pitch * static_cast<std::size_t>(layout.planes[p].height);
  }
  allocation.total_bytes = offset;
  return allocation;
}

ImageView image_view_in(void* base, const ImageAllocation& allocation, PixelFormat format, int width,
                        int height, MemoryKind memory, int channels) {
  ImageView view;
  view.format = format;
  view.width = width;
  view.height = height;
  view.channels = channels;
  view.memory = memory;
  view.num_planes = allocation.layout.num_planes;
  for (int p = 0; p < view.num_planes; ++p) {
    view.planes[p].data = static_cast<std::uint8_t*>(base) + allocation.offsets[p];
    view.planes[p].pitch = allocation.pitches[p];
  }
  return view;
}

std::string_view data_type_name(DataType type) {
  switch (type) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat16: return "float16";
    case DataType::kFloat64: return "float64";
    case DataType::kInt64: return "int64";
    case DataType::kInt32: return "int32";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kBool: return "bool";
  }
  return "unknown";
}

std::size_t data_type_size(DataType type) {
  switch (type) {
    case DataType::kFloat32:
    case DataType::kInt32: return 4;
    case DataType::kFloat16: return 2;
    case DataType::kFloat64:
    case DataType::kInt64: return 8;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kBool: return 1;
  }
  return 0;
}

std::int64_t TensorView::num_elements() const {
  std::int64_t n = 1;
  for (int d = 0; d < rank; ++d) {
    n *= shape[d];
  }
  return n;
}

bool TensorView::is_contiguous() const {
  std::int64_t expected = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expected) {
      return false;
    }
    expected *= shape[d];
  }
  return true;
}

TensorView contiguous_tensor(void* data, DataType dtype, MemoryKind memory,
                             std::initializer_list<std::int64_t> shape) {
  TensorView view;
  view.data = data;
  view.dtype = dtype;
  view.memory = memory;
  view.rank = static_cast<int>(shape.size());
  int d = 0;
  for (std::int64_t extent : shape) {
    view.shape[d++] = extent;
  }
  std::int64_t stride = 1;
  for (d = view.rank - 1; d >= 0; --d) {
    view.strides[d] = stride;
    stride *= view.shape[d];
  }
  return view;
}

}  // namespace fovea
