#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "image/blur_composite.h"

namespace fovea::image {

namespace {

Status check_kernel(int ksize, const char* what) {
  if (ksize > kMaxBlurCompositeKernelSize) {
    return make_error(StatusCode::kInvalidArgument, fmt::format("blur composite: {} {} is above {}", what,
                                                                ksize, kMaxBlurCompositeKernelSize));
  }
  return Status::ok();
}

}  // namespace

namespace detail {

Status check_blur_composite(const ImageBatch& frame, const ImageBatch& mask, const ImageBatch* output,
                            const BlurParams& params) {
  FOVEA_TRY(check_batch(frame, {PixelFormat::kRGB8, PixelFormat::kBGR8, PixelFormat::kRGBA8},
                        "blur composite frame"));
  FOVEA_TRY(plan_blur(frame, params).status());
  FOVEA_TRY(check_kernel(params.kernel_width, "kernel width"));
  FOVEA_TRY(check_kernel(params.kernel_height, "kernel height"));
  const float v = params.border_value;
  if (params.border == BorderMode::kConstant && !(v >= 0.0f && v <= 255.0f && std::floor(v) == v)) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("blur composite: border value {} is not an integer within 0..255", v));
  }
  // The frame stands in for the blurred background: the same format and size.
  FOVEA_TRY(check_blend(frame, frame, mask, output));
  if (output == nullptr) return Status::ok();
  for (int i = 0; i < frame.size(); ++i) {
    const void* out = output->images[i].planes[0].data;
    if (out == frame.images[i].planes[0].data || out == mask.images[i].planes[0].data) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("blur composite image {}: output aliases an input", i));
    }
  }
  return Status::ok();
}

}  // namespace detail

Result<CompositePlan> plan_blur_composite(const ImageBatch& frame, const ImageBatch& mask,
                                          const BlurParams& params) {
  FOVEA_TRY(detail::check_blur_composite(frame, mask, nullptr, params));
  return plan_blend(frame, frame, mask);
}

Status run_blur_composite_cpu(const ImageBatch& frame, const ImageBatch& mask, const ImageBatch& output,
                              const BlurParams& params) {
  FOVEA_TRY(detail::check_blur_composite(frame, mask, &output, params));
  // The blurred ROIs, packed: the background the blend reads.
  std::vector<std::vector<std::uint8_t>> storage;
  ImageBatch blurred;
  for (int i = 0; i < frame.size(); ++i) {
    const Roi roi = frame.roi(i);
    const std::size_t pitch = static_cast<std::size_t>(roi.width) * pixel_bytes(frame.images[i].format);
    storage.emplace_back(pitch * roi.height);
    ImageView view;
    view.format = frame.images[i].format;
    view.width = roi.width;
    view.height = roi.height;
    view.memory = MemoryKind::kHost;
    view.num_planes = 1;
    view.planes[0].data = storage.back().data();
    view.planes[0].pitch = pitch;
    blurred.images.push_back(view);
  }
  FOVEA_TRY(run_blur_cpu(frame, blurred, params));
  return run_blend_cpu(frame, blurred, mask, output);
}

}  // namespace fovea::image
