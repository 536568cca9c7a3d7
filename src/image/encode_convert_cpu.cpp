#include <fmt/format.h>

#include "image/encode_convert.h"

namespace fovea::image {

static Status check_encode_formats(const ImageBatch& rgb, const EncodeConvertParams& params) {
  using enum PixelFormat;
  FOVEA_TRY(check_batch(rgb, {kRGB8, kBGR8, kRGBA8}, "encode conversion input"));
  if (params.output_format != kNV12 && params.output_format != kYUV420P) {
    return make_error(StatusCode::kUnsupported,
                      fmt::format("encode conversion: output format {} is not supported (NV12 or YUV420P)",
                                  pixel_format_name(params.output_format)));
  }
  return Status::ok();
}

Result<ColorConvertPlan> plan_rgb_to_yuv_for_encode(const ImageBatch& rgb,
                                                    const EncodeConvertParams& params) {
  FOVEA_TRY(check_encode_formats(rgb, params));
  return plan_color_convert(rgb, color_convert_params(params));
}

Status run_rgb_to_yuv_for_encode_cpu(const ImageBatch& rgb, const ImageBatch& output,
                                     const EncodeConvertParams& params) {
  FOVEA_TRY(check_encode_formats(rgb, params));
  return run_color_convert_cpu(rgb, output, color_convert_params(params));
}

Status check_rgb_to_yuv_for_encode(const ImageBatch& rgb, const ImageBatch& scratch, const ImageBatch& output,
                                   const EncodeConvertParams& params) {
  FOVEA_TRY(check_encode_formats(rgb, params));
  FOVEA_TRY(check_color_convert(rgb, scratch, color_convert_params(params), /*device=*/true));
  if (rgb.images[0].memory != MemoryKind::kDevice || scratch.images[0].memory != MemoryKind::kDevice) {
    return make_error(StatusCode::kInvalidArgument,
                      "encode conversion: the input and scratch need device memory");
  }
  FOVEA_TRY(check_same_batch_size(scratch, output, "encode conversion scratch", "output"));
  FOVEA_TRY(check_batch(output, {params.output_format}, "encode conversion output"));
  for (int i = 0; i < output.size(); ++i) {
    const ImageView& want = scratch.images[static_cast<std::size_t>(i)];
    const ImageView& view = output.images[static_cast<std::size_t>(i)];
    if (view.width != want.width || view.height != want.height) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("encode conversion output image {}: size {}x{}, but the scratch is {}x{}",
                                    i, view.width, view.height, want.width, want.height));
    }
  }
  if (!output.rois.empty()) {
    return make_error(StatusCode::kInvalidArgument, "encode conversion output: ROIs are not supported");
  }
  if (output.images[0].memory != MemoryKind::kPinnedHost) {
    return make_error(
        StatusCode::kInvalidArgument,
        fmt::format("encode conversion output: {} memory, but the asynchronous copy needs pinned host "
                    "memory",
                    memory_kind_name(output.images[0].memory)));
  }
  return Status::ok();
}

}  // namespace fovea::image
