#include <fmt/format.h>

#include "image/color_convert.h"

namespace fovea::image {

using color_detail::ConvertJob;

bool color_conversion_supported(PixelFormat input, PixelFormat output) {
  const auto nothing = [](auto, auto) {};
  return color_detail::dispatch_conversion(input, output, nothing, nothing);
}

static Status check_conversion(const ImageBatch& input, const ColorConvertParams& params) {
  using enum PixelFormat;
  FOVEA_TRY(
      check_batch(input, {kNV12, kP016, kYUV420P, kRGB8, kBGR8, kRGBA8, kGRAY8}, "color conversion input"));
  const PixelFormat from = input.images[0].format;
  for (const ImageView& view : input.images) {
    if (view.format != from) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("color conversion input: {} and {} images in one batch",
                                    pixel_format_name(from), pixel_format_name(view.format)));
    }
  }
  if (!color_conversion_supported(from, params.output_format)) {
    return make_error(StatusCode::kUnsupported,
                      fmt::format("color conversion from {} to {} is not supported", pixel_format_name(from),
                                  pixel_format_name(params.output_format)));
  }
  return Status::ok();
}

Result<ColorConvertPlan> plan_color_convert(const ImageBatch& input, const ColorConvertParams& params) {
  FOVEA_TRY(check_conversion(input, params));
  ColorConvertPlan plan;
  for (int i = 0; i < input.size(); ++i) {
    const Roi roi = input.roi(i);
    if (color_detail::is_yuv420(params.output_format) && (roi.width % 2 != 0 || roi.height % 2 != 0)) {
      return make_error(
          StatusCode::kInvalidArgument,
          fmt::format("color conversion input image {}: the ROI is {}x{}, but {} output needs even "
                      "sizes (4:2:0 chroma)",
                      i, roi.width, roi.height, pixel_format_name(params.output_format)));
    }
    plan.output_sizes.push_back({roi.width, roi.height});
  }
  return plan;
}

static bool reachable(MemoryKind memory, bool device) {
  return device ? is_device_accessible(memory) : memory != MemoryKind::kDevice;
}

Status check_color_convert(const ImageBatch& input, const ImageBatch& output,
                           const ColorConvertParams& params, bool device) {
  FOVEA_ASSIGN_OR_RETURN(const ColorConvertPlan plan, plan_color_convert(input, params));
  FOVEA_TRY(check_same_batch_size(input, output, "color conversion input", "output"));
  if (!output.rois.empty()) {
    return make_error(StatusCode::kInvalidArgument,
                      "color conversion output: ROIs are not supported (the ROI applies to the input)");
  }
  for (int i = 0; i < output.size(); ++i) {
    const ImageView& view = output.images[static_cast<std::size_t>(i)];
    const ColorConvertPlan::Size want = plan.output_sizes[static_cast<std::size_t>(i)];
    if (view.width != want.width || view.height != want.height) {
      return make_error(
          StatusCode::kInvalidArgument,
          fmt::format("color conversion output image {}: size {}x{}, but the input ROI is {}x{}", i,
                      view.width, view.height, want.width, want.height));
    }
  }
  FOVEA_TRY(check_batch(output, {params.output_format}, "color conversion output"));
  const char* where = device ? "the CUDA conversion needs device or pinned memory"
                             : "the CPU conversion needs host or pinned memory";
  for (const ImageBatch* batch : {&input, &output}) {
    const MemoryKind memory = batch->images[0].memory;
    if (!reachable(memory, device)) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("color conversion {}: {} memory, but {}",
                                    batch == &input ? "input" : "output", memory_kind_name(memory), where));
    }
  }
  return Status::ok();
}

namespace color_detail {

ConvertJob make_convert_job(const ImageView& input, const Roi& roi, const ImageView& output) {
  ConvertJob job{};
  for (int p = 0; p < kMaxConvertPlanes; ++p) {
    job.src[p] = static_cast<const std::uint8_t*>(input.planes[p].data);
    job.src_pitch[p] = input.planes[p].pitch;
    job.dst[p] = static_cast<std::uint8_t*>(output.planes[p].data);
    job.dst_pitch[p] = output.planes[p].pitch;
  }
  job.roi_x = roi.x;
  job.roi_y = roi.y;
  job.width = output.width;
  job.height = output.height;
  return job;
}

ConvertConstants make_convert_constants(const ColorConvertParams& params) {
  return ConvertConstants{yuv_coefficients(params.matrix, params.range), params.matrix, params.range};
}

}  // namespace color_detail

Status run_color_convert_cpu(const ImageBatch& input, const ImageBatch& output,
                             const ColorConvertParams& params) {
  FOVEA_TRY(check_color_convert(input, output, params, /*device=*/false));
  const color_detail::ConvertConstants k = color_detail::make_convert_constants(params);
  for (int i = 0; i < input.size(); ++i) {
    const ConvertJob job = color_detail::make_convert_job(
        input.images[static_cast<std::size_t>(i)], input.roi(i), output.images[static_cast<std::size_t>(i)]);
    const auto per_pixel = [&](auto src, auto dst) {
      for (int y = 0; y < job.height; ++y) {
        for (int x = 0; x < job.width; ++x)
          color_detail::convert_pixel<decltype(src)::value, decltype(dst)::value>(job, k, x, y);
      }
    };
    const auto per_block = [&](auto src, auto dst) {
      for (int by = 0; by < job.height / 2; ++by) {
        for (int bx = 0; bx < job.width / 2; ++bx)
          color_detail::convert_block<decltype(src)::value, decltype(dst)::value>(job, k, bx, by);
      }
    };
    color_detail::dispatch_conversion(input.images[0].format, params.output_format, per_pixel, per_block);
  }
  return Status::ok();
}

}  // namespace fovea::image
