// Tensor to RGB8 images: validation and the CPU reference in plain loops.
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "post/post_math.h"
#include "post/tensor_args.h"
#include "post/tensor_image.h"

namespace fovea::post {

namespace {

Status check_output(const ImageView& image, int n, const TensorImagePlan& plan) {
  const std::string what = "tensor to image: output " + std::to_string(n);
  if (image.format != PixelFormat::kRGB8) {
    return make_error(StatusCode::kInvalidArgument, what, " is ",
                      std::string(pixel_format_name(image.format)), ", not ",
                      std::string(pixel_format_name(PixelFormat::kRGB8)));
  }
  if (image.width != plan.width || image.height != plan.height) {
    return make_error(StatusCode::kInvalidArgument, what, " is ", std::to_string(image.width), "x",
                      std::to_string(image.height), ", not the tensor's ", std::to_string(plan.width), "x",
                      std::to_string(plan.height));
  }
  if (image.planes[0].data == nullptr || image.planes[0].pitch < 3ULL * static_cast<unsigned>(plan.width)) {
    return make_error(StatusCode::kInvalidArgument, what, " has no data or a pitch below 3 x its width");
  }
  return Status::ok();
}

// Host runs need host outputs, CUDA runs device-reachable ones.
Status check_output_memory(std::span<const ImageView> outputs, bool device) {
  for (std::size_t n = 0; n < outputs.size(); ++n) {
    const MemoryKind memory = outputs[n].memory;
    if (device ? !is_device_accessible(memory) : memory == MemoryKind::kDevice) {
      return make_error(StatusCode::kInvalidArgument, "tensor to image: output ", std::to_string(n),
                        " is in ", std::string(memory_kind_name(memory)), " memory, which the ",
                        device ? "CUDA" : "CPU", " run cannot write");
    }
  }
  return Status::ok();
}

}  // namespace

Result<TensorImagePlan> plan_tensor_to_image(const TensorView& input, const TensorImageParams& params,
                                             std::span<const ImageView> outputs) {
  for (std::size_t c = 0; c < 3; ++c) {
    if (!std::isfinite(params.scale[c]) || !std::isfinite(params.offset[c])) {
      return make_error(StatusCode::kInvalidArgument, "tensor to image: scale and offset of channel ",
                        std::to_string(c), " must be finite");
    }
  }
  FOVEA_TRY(check_tensor(input, 4, {DataType::kFloat32, DataType::kFloat16}, "tensor to image input"));
  const std::int64_t channels = input.shape[1];
  if (channels != 1 && channels != 3) {
    return make_error(StatusCode::kInvalidArgument, "tensor to image input: ", std::to_string(channels),
                      " channels (dimension 1 of NCHW), expected 3 (RGB or BGR) or 1 (gray)");
  }
  if (!input.is_contiguous()) {
    return make_error(StatusCode::kInvalidArgument, "tensor to image input: must be dense NCHW");
  }
  if (input.shape[0] > INT_MAX || input.shape[2] > INT_MAX || input.shape[3] > INT_MAX / 3) {
    return make_error(StatusCode::kInvalidArgument, "tensor to image input: too large");
  }
  const TensorImagePlan plan{static_cast<int>(input.shape[0]), static_cast<int>(channels),
                             static_cast<int>(input.shape[2]), static_cast<int>(input.shape[3])};
  if (outputs.size() != static_cast<std::size_t>(plan.batch)) {
    return make_error(StatusCode::kInvalidArgument, "tensor to image: ", std::to_string(outputs.size()),
                      " output images for a batch of ", std::to_string(plan.batch));
  }
  for (std::size_t n = 0; n < outputs.size(); ++n)
    FOVEA_TRY(check_output(outputs[n], static_cast<int>(n), plan));
  return plan;
}

namespace detail {

TensorImageMap tensor_image_map(const TensorImageParams& params, int channels) {
  TensorImageMap map{};
  for (int c = 0; c < 3; ++c) {
    const auto i = static_cast<std::size_t>(c);
    map.channel[c] = channels == 1 ? 0 : (params.bgr ? 2 - c : c);
    map.scale[c] = params.scale[i];
    map.offset[c] = params.offset[i];
  }
  return map;
}

Status check_tensor_image_memory(const TensorView& input, std::span<const ImageView> outputs, bool device) {
  FOVEA_TRY(check_memory(input, device, "tensor to image input"));
  return check_output_memory(outputs, device);
}

}  // namespace detail

Status run_tensor_to_image_cpu(const TensorView& input, const TensorImageParams& params,
                               std::span<const ImageView> outputs) {
  FOVEA_ASSIGN_OR_RETURN(const TensorImagePlan plan, plan_tensor_to_image(input, params, outputs));
  FOVEA_TRY(detail::check_tensor_image_memory(input, outputs, false));
  const detail::TensorImageMap map = detail::tensor_image_map(params, plan.channels);
  const std::int64_t plane = static_cast<std::int64_t>(plan.height) * plan.width;
  dispatch_float_dtype(input.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int n = 0; n < plan.batch; ++n) {
      const T* image = static_cast<const T*>(input.data) + n * plan.channels * plane;
      for (int y = 0; y < plan.height; ++y) {
        std::uint8_t* row = outputs[static_cast<std::size_t>(n)].row(0, y);
        for (int x = 0; x < plan.width; ++x) {
          for (int c = 0; c < 3; ++c) {
            const float value =
                load_float(image + map.channel[c] * plane + static_cast<std::int64_t>(y) * plan.width + x);
            row[3 * x + c] = detail::tensor_value_to_u8(value, map.scale[c], map.offset[c]);
          }
        }
      }
    }
  });
  return Status::ok();
}

}  // namespace fovea::post
