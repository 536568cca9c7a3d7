// Fused preprocess: validation, placement and the CPU reference (plain loops over tensor pixels;
// the per-pixel arithmetic is detail::preprocess_pixel, shared with the kernel).
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "core/half.h"
#include "image/preprocess.h"

namespace fovea::image {

namespace {

Status check_params(const PreprocessParams& params) {
  if (params.width <= 0 || params.height <= 0) {
    return make_error(
        StatusCode::kInvalidArgument,
        fmt::format("preprocess: output size {}x{} must be positive", params.width, params.height));
  }
  if (params.dtype != DataType::kFloat32 && params.dtype != DataType::kFloat16) {
    return make_error(
        StatusCode::kUnsupported,
        fmt::format("preprocess: output dtype {} (float32 or float16)", data_type_name(params.dtype)));
  }
  if (params.filter != ResizeFilter::kBilinear && params.filter != ResizeFilter::kNearest) {
    return make_error(StatusCode::kUnsupported, "preprocess: the filter must be bilinear or nearest");
  }
  for (float s : params.std) {
    if (s == 0.0f) return make_error(StatusCode::kInvalidArgument, "preprocess: a std of 0 divides by zero");
  }
  return Status::ok();
}

// Tensor index of (image n, channel c, row y, column x).
std::int64_t tensor_index(const PreprocessParams& params, int n, int c, int y, int x) {
  const std::int64_t h = params.height;
  const std::int64_t w = params.width;
  return params.layout == TensorLayout::kNCHW ? ((n * 3LL + c) * h + y) * w + x
                                              : ((n * h + y) * w + x) * 3 + c;
}

// Tensor row y of image n: the row's source rows once, then every pixel.
template <ResizeFilter kFilter, bool kPacked>
void reference_row(const detail::PreprocessImageArgs& a, const detail::PreprocessCommon& common,
                   const PreprocessParams& params, const TensorView& output, int n, int y) {
  const detail::SourceRows<kFilter> rows = detail::source_rows<kFilter, kPacked>(a, y);
  for (int x = 0; x < params.width; ++x) {
    float values[3];
    detail::preprocess_pixel<kFilter, kPacked>(a, common, rows, x, values, 1);
    for (int c = 0; c < 3; ++c) {
      const std::int64_t index = tensor_index(params, n, c, y, x);
      if (params.dtype == DataType::kFloat32) {
        static_cast<float*>(output.data)[index] = values[c];
      } else {
        static_cast<std::uint16_t*>(output.data)[index] = float_to_half(values[c]).bits;
      }
    }
  }
}

// Every tensor row of image n, per its source format.
template <ResizeFilter kFilter>
void reference_image(const detail::PreprocessImageArgs& a, const detail::PreprocessCommon& common,
                     const PreprocessParams& params, const TensorView& output, int n) {
  for (int y = 0; y < params.height; ++y) {
    if (a.source == detail::PreprocessSource::kNv12) {
      reference_row<kFilter, false>(a, common, params, output, n, y);
    } else {
      reference_row<kFilter, true>(a, common, params, output, n, y);
    }
  }
}

}  // namespace

Result<PreprocessPlan> plan_preprocess(const ImageBatch& input, const PreprocessParams& params) {
  FOVEA_TRY(
      check_batch(input, {PixelFormat::kNV12, PixelFormat::kRGB8, PixelFormat::kBGR8}, "preprocess input"));
  FOVEA_TRY(check_params(params));
  PreprocessPlan plan;
  for (int i = 0; i < input.size(); ++i) {
    const Roi roi = input.roi(i);
    plan.placements.push_back(fit_placement(params.fit, roi.width, roi.height, params.width, params.height));
  }
  const std::int64_t n = input.size();
  plan.shape = params.layout == TensorLayout::kNCHW
                   ? std::array<std::int64_t, 4>{n, 3, params.height, params.width}
                   : std::array<std::int64_t, 4>{n, params.height, params.width, 3};
  plan.output_bytes =
      static_cast<std::size_t>(n * 3 * params.height * params.width) * data_type_size(params.dtype);
  return plan;
}

namespace detail {

PreprocessSource preprocess_source(PixelFormat format) {
  return format == PixelFormat::kRGB8   ? PreprocessSource::kRgb8
         : format == PixelFormat::kBGR8 ? PreprocessSource::kBgr8
                                        : PreprocessSource::kNv12;
}

namespace {

// Per RGB channel (R, G, B), its coefficient on each sample of `source` before normalization, in
// double until the final rounding. NV12: yuv_to_rgb's (R = luma + r_v * cr, G = luma - g_u * cb -
// g_v * cr, B = luma + b_u * cb, luma = y_scale * Y', cb = c_scale * U', cr = c_scale * V').
// RGB8/BGR8: 1 on the byte that holds the channel.
std::array<std::array<double, 3>, 3> rgb_from_samples(const PreprocessParams& params,
                                                      PreprocessSource source) {
  if (source == PreprocessSource::kNv12) {
    const YuvCoefficients yuv = yuv_coefficients(params.matrix, params.range);
    const double y = yuv.y_scale, c = yuv.c_scale;
    return {{{y, 0.0, yuv.r_v * c}, {y, -yuv.g_u * c, -yuv.g_v * c}, {y, yuv.b_u * c, 0.0}}};
  }
  std::array<std::array<double, 3>, 3> pick{};
  for (std::size_t rgb = 0; rgb < 3; ++rgb)
    pick[rgb][source == PreprocessSource::kRgb8 ? rgb : 2 - rgb] = 1.0;
  return pick;
}

}  // namespace

PreprocessCommon preprocess_common(const PreprocessParams& params, PreprocessSource source) {
  const std::array<std::array<double, 3>, 3> rgb_from = rgb_from_samples(params, source);
  const int red = params.bgr ? 2 : 0;
  PreprocessCommon k{};
  k.y_offset =
      source == PreprocessSource::kNv12 ? yuv_coefficients(params.matrix, params.range).y_offset : 0.0f;
  for (int c = 0; c < 3; ++c) {
    const auto i = static_cast<std::size_t>(c);
    const auto rgb = static_cast<std::size_t>(c == 1 ? 1 : (c == red ? 0 : 2));
    const double mul = static_cast<double>(params.scale) / params.std[i];
    const double add = -static_cast<double>(params.mean[i]) / params.std[i];
    for (std::size_t s = 0; s < 3; ++s) k.from[c][s] = static_cast<float>(rgb_from[rgb][s] * mul);
    k.bias[c] = static_cast<float>(add);
    const double at_0 = add, at_255 = 255.0 * mul + add;
    k.low[c] = static_cast<float>(std::min(at_0, at_255));
    k.high[c] = static_cast<float>(std::max(at_0, at_255));
    k.pad[c] =
        static_cast<float>(std::clamp(static_cast<double>(params.pad_value[i]), 0.0, 255.0) * mul + add);
  }
  return k;
}

PreprocessImageArgs preprocess_image_args(const ImageBatch& input, const PreprocessParams& params,
                                          const ResizePlacement& placement, int i) {
  const ImageView& view = input.images[static_cast<std::size_t>(i)];
  const Roi roi = input.roi(i);
  PreprocessImageArgs a{};
  a.source = preprocess_source(view.format);
  a.luma = static_cast<const unsigned char*>(view.planes[0].data);
  a.chroma = static_cast<const unsigned char*>(view.planes[1].data);
  a.luma_pitch = static_cast<long long>(view.planes[0].pitch);
  a.chroma_pitch = static_cast<long long>(view.planes[1].pitch);
  a.roi_x = roi.x;
  a.roi_y = roi.y;
  a.offset_x = placement.offset_x;
  a.offset_y = placement.offset_y;
  a.x = make_axis_map(params.filter, ResizeCompat::kOpenCv, roi.width, placement.width);
  a.y = make_axis_map(params.filter, ResizeCompat::kOpenCv, roi.height, placement.height);
  return a;
}

bool halves_columns(const PreprocessImageArgs& a, int width) {
  const auto aligned = [&](const unsigned char* row, long long pitch) {
    constexpr auto alignment = static_cast<std::uintptr_t>(kPreprocessStrip) * 2;
    return reinterpret_cast<std::uintptr_t>(row + a.roi_x) % alignment == 0 &&
           static_cast<std::uintptr_t>(pitch) % alignment == 0;
  };
  return a.source == PreprocessSource::kNv12 && a.offset_x == 0 && a.x.dst_size == width &&
         a.x.src_size == 2 * width && a.roi_x % 2 == 0 && width % kPreprocessStrip == 0 &&
         aligned(a.luma, a.luma_pitch) && aligned(a.chroma, a.chroma_pitch);
}

Status check_preprocess_output(const TensorView& output, const PreprocessPlan& plan,
                               const PreprocessParams& params, MemoryKind memory) {
  bool shape_ok = output.rank == 4;
  for (int d = 0; d < 4 && shape_ok; ++d)
    shape_ok = output.shape[static_cast<std::size_t>(d)] == plan.shape[d];
  if (!shape_ok || !output.is_contiguous() || output.data == nullptr) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("preprocess output: needs a dense [{}, {}, {}, {}] tensor", plan.shape[0],
                                  plan.shape[1], plan.shape[2], plan.shape[3]));
  }
  if (output.dtype != params.dtype) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("preprocess output: dtype {} but the params ask for {}",
                                  data_type_name(output.dtype), data_type_name(params.dtype)));
  }
  if ((memory == MemoryKind::kDevice) != (output.memory == MemoryKind::kDevice)) {
    return make_error(
        StatusCode::kInvalidArgument,
        fmt::format("preprocess output: {} memory for a {} run", memory_kind_name(output.memory),
                    memory == MemoryKind::kDevice ? "CUDA" : "CPU"));
  }
  return Status::ok();
}

}  // namespace detail

Status run_preprocess_cpu(const ImageBatch& input, const PreprocessParams& params, const TensorView& output) {
  FOVEA_ASSIGN_OR_RETURN(const PreprocessPlan plan, plan_preprocess(input, params));
  if (batch_on_device(input)) {
    return make_error(StatusCode::kInvalidArgument, "run_preprocess_cpu: the images are in device memory");
  }
  FOVEA_TRY(detail::check_preprocess_output(output, plan, params, MemoryKind::kHost));
  for (int n = 0; n < input.size(); ++n) {
    const detail::PreprocessImageArgs a =
        detail::preprocess_image_args(input, params, plan.placements[static_cast<std::size_t>(n)], n);
    const detail::PreprocessCommon common = detail::preprocess_common(params, a.source);
    if (params.filter == ResizeFilter::kNearest) {
      reference_image<ResizeFilter::kNearest>(a, common, params, output, n);
    } else {
      reference_image<ResizeFilter::kBilinear>(a, common, params, output, n);
    }
  }
  return Status::ok();
}

}  // namespace fovea::image
