// Resize: validation, placement and the CPU reference (plain loops over output pixels; the
// per-pixel arithmetic is image/resize_math.h, shared with the kernel).
#include <fmt/format.h>

#include "image/resize.h"

namespace fovea::image {

namespace {

constexpr std::initializer_list<PixelFormat> kResizeFormats = {PixelFormat::kRGB8, PixelFormat::kBGR8,
                                                               PixelFormat::kRGBA8, PixelFormat::kGRAY8,
                                                               PixelFormat::kPlanarF32};

Status check_formats_match(const ImageBatch& input, const ImageBatch& output) {
  const ImageView& first = input.images[0];
  for (int i = 0; i < input.size(); ++i) {
    const ImageView& in = input.images[static_cast<std::size_t>(i)];
    const ImageView& out = output.images[static_cast<std::size_t>(i)];
    if (in.format != first.format ||
        (in.format == PixelFormat::kPlanarF32 && in.channels != first.channels)) {
      return make_error(StatusCode::kUnsupported,
                        fmt::format("resize input image {}: {} in a batch of {}; one format "
                                    "per batch",
                                    i, pixel_format_name(in.format), pixel_format_name(first.format)));
    }
    if (out.format != in.format || (in.format == PixelFormat::kPlanarF32 && out.channels != in.channels)) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("resize output image {}: {} for a {} input; resize keeps the format", i,
                                    pixel_format_name(out.format), pixel_format_name(in.format)));
    }
  }
  if (first.format == PixelFormat::kPlanarF32 && (first.channels < 1 || first.channels > kResizeMaxPlanes)) {
    return make_error(StatusCode::kUnsupported,
                      fmt::format("resize: planar float32 with {} channels (1..{} supported)", first.channels,
                                  kResizeMaxPlanes));
  }
  return Status::ok();
}

Status check_area_downscales(const ImageBatch& input, const ResizePlacement& p, int i) {
  const Roi roi = input.roi(i);
  if (p.width > roi.width || p.height > roi.height) {
    return make_error(
        StatusCode::kUnsupported,
        fmt::format("resize image {}: OpenCV area resampling of a {}x{} ROI to {}x{} upscales; area is "
                    "for downscaling (use bilinear)",
                    i, roi.width, roi.height, p.width, p.height));
  }
  return Status::ok();
}

}  // namespace

Result<ResizePlan> plan_resize(const ImageBatch& input, const ImageBatch& output,
                               const ResizeParams& params) {
  FOVEA_TRY(check_batch(input, kResizeFormats, "resize input"));
  FOVEA_TRY(check_batch(output, kResizeFormats, "resize output"));
  FOVEA_TRY(check_same_batch_size(input, output, "resize input", "resize output"));
  if (!output.rois.empty()) {
    return make_error(StatusCode::kInvalidArgument,
                      "resize output: output ROIs are not supported; the whole output image is written (use "
                      "ResizeFit to place the image)");
  }
  if (input.images[0].memory != output.images[0].memory) {
    return make_error(StatusCode::kInvalidArgument,
                      "resize: input and output are in different kinds of memory");
  }
  FOVEA_TRY(check_formats_match(input, output));
  ResizePlan plan;
  for (int i = 0; i < input.size(); ++i) {
    const Roi roi = input.roi(i);
    const ImageView& out = output.images[static_cast<std::size_t>(i)];
    const ResizePlacement p = fit_placement(params.fit, roi.width, roi.height, out.width, out.height);
    if (params.filter == ResizeFilter::kArea && params.compat == ResizeCompat::kOpenCv) {
      FOVEA_TRY(check_area_downscales(input, p, i));
    }
    plan.placements.push_back(p);
  }
  return plan;
}

ResizeImageArgs resize_image_args(const ImageBatch& input, const ImageBatch& output,
                                  const ResizeParams& params, const ResizePlacement& placement, int i) {
  const ImageView& in = input.images[static_cast<std::size_t>(i)];
  const ImageView& out = output.images[static_cast<std::size_t>(i)];
  const Roi roi = input.roi(i);
  ResizeImageArgs a{};
  for (int p = 0; p < kResizeMaxPlanes; ++p) {
    a.src[p] = static_cast<const unsigned char*>(in.planes[static_cast<std::size_t>(p)].data);
    a.src_pitch[p] = static_cast<long long>(in.planes[static_cast<std::size_t>(p)].pitch);
    a.dst[p] = static_cast<unsigned char*>(out.planes[static_cast<std::size_t>(p)].data);
    a.dst_pitch[p] = static_cast<long long>(out.planes[static_cast<std::size_t>(p)].pitch);
  }
  a.roi_x = roi.x;
  a.roi_y = roi.y;
  a.dst_width = out.width;
  a.dst_height = out.height;
  a.offset_x = placement.offset_x;
  a.offset_y = placement.offset_y;
  a.x = make_axis_map(params.filter, params.compat, roi.width, placement.width);
  a.y = make_axis_map(params.filter, params.compat, roi.height, placement.height);
  return a;
}

Status run_resize_cpu(const ImageBatch& input, const ImageBatch& output, const ResizeParams& params) {
  FOVEA_ASSIGN_OR_RETURN(const ResizePlan plan, plan_resize(input, output, params));
  if (batch_on_device(input)) {
    return make_error(StatusCode::kInvalidArgument, "run_resize_cpu: the images are in device memory");
  }
  visit_resize_pixels(input.images[0].format, input.images[0].channels, [&](auto pixels) {
    using Pixels = decltype(pixels);
    for (int i = 0; i < input.size(); ++i) {
      const ResizeImageArgs a =
          resize_image_args(input, output, params, plan.placements[static_cast<std::size_t>(i)], i);
      for (int y = 0; y < a.dst_height; ++y) {
        for (int x = 0; x < a.dst_width; ++x) resize_pixel<Pixels>(a, params.pad_value.data(), x, y);
      }
    }
  });
  return Status::ok();
}

}  // namespace fovea::image
