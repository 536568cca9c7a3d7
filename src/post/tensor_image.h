// Image-to-image heads (pix2pix, style transfer, super-resolution): a network's output tensor
// back to packed RGB8 images.
//
// | input                        | dtype            | outputs                                      |
// |------------------------------|------------------|----------------------------------------------|
// | [N, C, H, W] (NCHW), dense,  | float32, float16 | N kRGB8 images of W x H (pitched), one per   |
// | C = 3 or C = 1               |                  | batch item                                   |
//
// Per output channel c (R, G, B) of each pixel:
//   v = x[the tensor channel of c] * scale[c] + offset[c]; NaN -> 0; clamp to [0, 255]; round to
//   nearest, ties to even.
// `bgr` says the tensor's channels are B, G, R (swapped when writing RGB). A C = 1 tensor writes
// its one channel to R, G and B (each with its own scale and offset). The defaults (scale 255,
// offset 0) suit a sigmoid's 0..1 output; pix2pix's tanh output (-1..1) takes scale 127.5 and
// offset 127.5. The multiply and the add round separately (mul_rn/add_rn: nvcc fuses nothing),
// float16 converts exactly, and both sides round with the same rule (lrintf, __float2int_rn), so
// the CPU and CUDA runs agree byte for byte. The CPU run takes host memory, the CUDA run device
// memory (input and outputs alike); the CUDA run is one launch per kTensorImagesPerLaunch images.
#pragma once

#include <array>
#include <cmath>
#include <span>

#include "core/box.h"
#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "core/image.h"
#include "core/status.h"

namespace fovea::post {

struct TensorImageParams {
  // Per output channel R, G, B.
  std::array<float, 3> scale{255.0f, 255.0f, 255.0f};
  std::array<float, 3> offset{0.0f, 0.0f, 0.0f};
  bool bgr = false;  // the tensor's channel order: RGB (false) or BGR (true)
};

struct TensorImagePlan {
  int batch = 0;
  int channels = 0;
  int height = 0;
  int width = 0;
};

// Validates the params (finite scale and offset), the input (rank 4, C 1 or 3, float32 or float16,
// dense) and the outputs (one per batch item, kRGB8, exactly W x H) and names what is wrong.
Result<TensorImagePlan> plan_tensor_to_image(const TensorView& input, const TensorImageParams& params,
                                             std::span<const ImageView> outputs);
Status run_tensor_to_image_cpu(const TensorView& input, const TensorImageParams& params,
                               std::span<const ImageView> outputs);
Status run_tensor_to_image_cuda(cudaStream_t stream, const TensorView& input, const TensorImageParams& params,
                                std::span<const ImageView> outputs);

// Output images per CUDA launch: their pointers and pitches travel in the kernel arguments (2 KiB of
// the 4 KiB allowed), so a model's batch is one launch.
inline constexpr int kTensorImagesPerLaunch = 128;

namespace detail {

// The params resolved for one tensor: per output channel R, G, B, the tensor channel it reads (bgr
// and C = 1 applied), its scale and its offset. Plain arrays, so the kernel takes it by value.
struct TensorImageMap {
  int channel[3];
  float scale[3];
  float offset[3];
};
TensorImageMap tensor_image_map(const TensorImageParams& params, int channels);
// The input and the outputs in host memory (device false) or device-reachable memory (true).
Status check_tensor_image_memory(const TensorView& input, std::span<const ImageView> outputs, bool device);

// One output byte from one tensor value, the same on both sides (see the header comment).
FOVEA_HD unsigned char tensor_value_to_u8(float x, float scale, float offset) {
  const float v = add_rn(mul_rn(x, scale), offset);
  if (is_nan(v)) return 0;
  const float clamped = v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned char>(__float2int_rn(clamped));
#else
  return static_cast<unsigned char>(std::lrintf(clamped));  // the default rounding: nearest, ties to even
#endif
}

}  // namespace detail

}  // namespace fovea::post
