// Tensor to RGB8 images: the CUDA run against the CPU reference on random float32 and float16
// tensors of odd sizes, pitched outputs. Equality is exact: both sides compute the same formula with
// the same float operations in the same order (mul_rn/add_rn keep nvcc from fusing them, float16
// converts exactly) and round with the same rule (lrintf and __float2int_rn: nearest, ties to
// even), so no tolerance applies.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "core/half.h"
#include "image/image_test_util.h"
#include "post/tensor_image.h"

namespace fovea::post {
namespace {

using image::testing::DeviceImage;
using image::testing::HostImage;

// Random values in [low, high]; one in 16 is NaN or an infinity, and with `halves` every value is a
// multiple of 0.5 (ties for scale 1, offset 0). Stored as float32 or float16 bits.
std::vector<std::uint8_t> random_tensor(std::size_t count, DataType dtype, float low, float high, bool halves,
                                        std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(low, high);
  std::uniform_int_distribution<int> special(0, 47);
  const float specials[3] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity()};
  std::vector<std::uint8_t> bytes(count * data_type_size(dtype));
  for (std::size_t i = 0; i < count; ++i) {
    const int s = special(rng);
    float v = s < 3 ? specials[s] : value(rng);
    if (halves && s >= 3) v = std::round(2.0f * v) / 2.0f;
    if (dtype == DataType::kFloat32) {
      reinterpret_cast<float*>(bytes.data())[i] = v;
    } else {
      reinterpret_cast<std::uint16_t*>(bytes.data())[i] = float_to_half(v).bits;
    }
  }
  return bytes;
}

void expect_gpu_matches_cpu(int batch, int channels, int height, int width, const TensorImageParams& params,
                            float low, float high, bool halves) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16}) {
    SCOPED_TRACE(::testing::Message() << data_type_name(dtype) << " [" << batch << ", " << channels << ", "
                                      << height << ", " << width << "]");
    const std::size_t count = static_cast<std::size_t>(batch) * channels * height * width;
    std::vector<std::uint8_t> host_tensor = random_tensor(count, dtype, low, high, halves, 11);
    void* d_tensor = nullptr;
    ASSERT_EQ(cudaMalloc(&d_tensor, host_tensor.size()), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_tensor, host_tensor.data(), host_tensor.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
    std::vector<std::unique_ptr<HostImage>> host_images;
    std::vector<std::unique_ptr<DeviceImage>> device_images;
    std::vector<ImageView> host_views, device_views;
    for (int n = 0; n < batch; ++n) {
      host_images.push_back(std::make_unique<HostImage>(PixelFormat::kRGB8, width, height, 3, 5));
      device_images.push_back(std::make_unique<DeviceImage>(PixelFormat::kRGB8, width, height));
      host_views.push_back(host_images.back()->view());
      device_views.push_back(device_images.back()->view());
    }
    const Status cpu = run_tensor_to_image_cpu(
        contiguous_tensor(host_tensor.data(), dtype, MemoryKind::kHost, {batch, channels, height, width}),
        params, host_views);
    ASSERT_TRUE(cpu.is_ok()) << cpu.to_string();
    const Status gpu = run_tensor_to_image_cuda(
        nullptr, contiguous_tensor(d_tensor, dtype, MemoryKind::kDevice, {batch, channels, height, width}),
        params, device_views);
    ASSERT_TRUE(gpu.is_ok()) << gpu.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (int n = 0; n < batch; ++n) {
      const HostImage downloaded = device_images[static_cast<std::size_t>(n)]->download();
      EXPECT_EQ(image::testing::max_abs_difference(host_images[static_cast<std::size_t>(n)]->view(),
                                                   downloaded.view()),
                0.0)
          << "image " << n;
    }
    cudaFree(d_tensor);
  }
}

TEST(TensorImageGpu, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  TensorImageParams tanh;  // pix2pix
  tanh.scale = {127.5f, 127.5f, 127.5f};
  tanh.offset = {127.5f, 127.5f, 127.5f};
  tanh.bgr = true;
  expect_gpu_matches_cpu(3, 3, 37, 23, tanh, -1.2f, 1.2f, false);
  expect_gpu_matches_cpu(3, 3, 37, 23, TensorImageParams{}, -0.2f, 1.2f, false);
  expect_gpu_matches_cpu(1, 1, 5, 7, TensorImageParams{}, -0.2f, 1.2f, false);
  TensorImageParams identity;  // every value a tie or an integer
  identity.scale = {1.0f, 1.0f, 1.0f};
  expect_gpu_matches_cpu(1, 3, 5, 7, identity, -4.0f, 260.0f, true);
  // More images than one launch takes.
  expect_gpu_matches_cpu(kTensorImagesPerLaunch + 2, 1, 3, 2, identity, -4.0f, 260.0f, true);
}

TEST(TensorImageGpu, RejectsHostOutputs) {
  FOVEA_REQUIRE_GPU();
  void* d_tensor = nullptr;
  ASSERT_EQ(cudaMalloc(&d_tensor, 3 * 4 * 5 * sizeof(float)), cudaSuccess);
  HostImage image(PixelFormat::kRGB8, 5, 4);
  const std::vector<ImageView> outputs = {image.view()};
  const Status status = run_tensor_to_image_cuda(
      nullptr, contiguous_tensor(d_tensor, DataType::kFloat32, MemoryKind::kDevice, {1, 3, 4, 5}), {},
      outputs);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  cudaFree(d_tensor);
}

}  // namespace
}  // namespace fovea::post
