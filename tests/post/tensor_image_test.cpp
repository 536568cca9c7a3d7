// Tensor to RGB8 images on the CPU: hand-computed bytes (ties to even, NaN, infinities, clamping at
// both ends, bgr, one channel, float16, the pix2pix and sigmoid mappings) and bad arguments.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/half.h"
#include "image/image_test_util.h"
#include "post/tensor_image.h"

namespace fovea::post {
namespace {

using image::testing::HostImage;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// A dense [N, C, H, W] tensor of `values` in float32 or float16 (bits), in host memory.
struct HostTensor {
  HostTensor(const std::vector<float>& values, DataType dtype, std::initializer_list<std::int64_t> shape) {
    bytes.resize(values.size() * data_type_size(dtype));
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (dtype == DataType::kFloat32) {
        reinterpret_cast<float*>(bytes.data())[i] = values[i];
      } else {
        reinterpret_cast<std::uint16_t*>(bytes.data())[i] = float_to_half(values[i]).bits;
      }
    }
    view = contiguous_tensor(bytes.data(), dtype, MemoryKind::kHost, shape);
  }
  std::vector<std::uint8_t> bytes;
  TensorView view;
};

// Runs the CPU op into one 2x2 RGB8 image (pitched) and returns its 12 bytes, row by row.
std::vector<int> to_image_2x2(const TensorView& input, const TensorImageParams& params) {
  HostImage image(PixelFormat::kRGB8, 2, 2, 3, 5);
  const std::vector<ImageView> outputs = {image.view()};
  const Status status = run_tensor_to_image_cpu(input, params, outputs);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  std::vector<int> bytes;
  for (int y = 0; y < 2; ++y) {
    for (int i = 0; i < 6; ++i) bytes.push_back(image.view().row(0, y)[i]);
  }
  return bytes;
}

// Planes R, G, B of a 2x2 tensor, pixels in row order. Scale 1 and offset 0 pass the values
// through: ties round to even (0.5 -> 0, 1.5 -> 2, 2.5 -> 2, 3.5 -> 4, 254.5 -> 254), NaN -> 0,
// below 0 and -inf -> 0, above 255 and +inf -> 255 (255.5 clamps to 255 before rounding).
const std::vector<float> kPlanes = {0.5f,   1.5f,   2.5f,    -3.0f,  // R
                                    254.5f, 255.5f, 300.f,   kNan,   // G
                                    -kInf,  kInf,   127.25f, 3.5f};  // B
const std::vector<int> kPlaneBytes[3] = {{0, 2, 2, 0}, {254, 255, 255, 0}, {0, 255, 127, 4}};

TEST(TensorImage, HandComputedTiesNanAndClamping) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16}) {  // every value is exact in float16
    SCOPED_TRACE(std::string(data_type_name(dtype)));
    const HostTensor t(kPlanes, dtype, {1, 3, 2, 2});
    TensorImageParams identity;
    identity.scale = {1.0f, 1.0f, 1.0f};
    for (bool bgr : {false, true}) {
      identity.bgr = bgr;
      std::vector<int> expected;
      for (int pixel = 0; pixel < 4; ++pixel) {
        for (int c = 0; c < 3; ++c) expected.push_back(kPlaneBytes[bgr ? 2 - c : c][pixel]);
      }
      EXPECT_EQ(to_image_2x2(t.view, identity), expected) << "bgr " << bgr;
    }
  }
}

// The defaults (sigmoid, 0..1: x * 255) and pix2pix's tanh (-1..1: x * 127.5 + 127.5).
TEST(TensorImage, SigmoidAndTanhMappings) {
  const HostTensor sigmoid({0.5f, 0.25f, 1.0f, 0.0f,          // R: 127.5 -> 128 (tie, even), 63.75 -> 64
                            -0.1f, 1.1f, 0.2f, 0.8f,          // G: clamped, 51, 204
                            0.001f, 0.999f, 0.998f, 0.003f},  // B: 0.255, 254.745, 254.49, 0.765
                           DataType::kFloat32, {1, 3, 2, 2});
  EXPECT_EQ(to_image_2x2(sigmoid.view, TensorImageParams{}),
            (std::vector<int>{128, 0, 0, 64, 255, 255, 255, 51, 254, 0, 204, 1}));
  TensorImageParams tanh;
  tanh.scale = {127.5f, 127.5f, 127.5f};
  tanh.offset = {127.5f, 127.5f, 127.5f};
  const HostTensor pix2pix({0.0f, -1.0f, 1.0f, 0.5f,    // R: 127.5 -> 128, 0, 255, 191.25 -> 191
                            -0.5f, -1.5f, 1.5f, 0.0f,   // G: 63.75 -> 64, clamped, clamped, 128
                            0.2f, -0.2f, 0.6f, -0.6f},  // B: 153, 102, 204, 51
                           DataType::kFloat32, {1, 3, 2, 2});
  EXPECT_EQ(to_image_2x2(pix2pix.view, tanh),
            (std::vector<int>{128, 64, 153, 0, 0, 102, 255, 255, 204, 191, 128, 51}));
}

// One channel goes to R, G and B, each through its own scale and offset.
TEST(TensorImage, OneChannelFillsAllThree) {
  const HostTensor gray({0.5f, 0.0f, 1.0f, kNan}, DataType::kFloat16, {1, 1, 2, 2});
  TensorImageParams params;
  params.scale = {255.0f, 127.5f, 1.0f};
  params.offset = {0.0f, 127.5f, 0.0f};
  params.bgr = true;  // no effect on one channel
  EXPECT_EQ(to_image_2x2(gray.view, params),
            (std::vector<int>{128, 191, 0, 0, 128, 0, 255, 255, 1, 0, 0, 0}));
}

TEST(TensorImage, RejectsBadArguments) {
  const HostTensor t(std::vector<float>(2 * 3 * 4 * 5), DataType::kFloat32, {2, 3, 4, 5});
  HostImage a(PixelFormat::kRGB8, 5, 4), b(PixelFormat::kRGB8, 5, 4);
  const std::vector<ImageView> outputs = {a.view(), b.view()};
  auto error = [&](const TensorView& input, const TensorImageParams& params, std::vector<ImageView> out) {
    const Status status = run_tensor_to_image_cpu(input, params, out);
    EXPECT_FALSE(status.is_ok());
    return status.message();
  };
  EXPECT_TRUE(run_tensor_to_image_cpu(t.view, {}, outputs).is_ok());

  TensorView rank3 = t.view;
  rank3.rank = 3;
  EXPECT_NE(error(rank3, {}, outputs).find("rank 3"), std::string::npos);
  const HostTensor two_channels(std::vector<float>(2 * 2 * 4 * 5), DataType::kFloat32, {2, 2, 4, 5});
  EXPECT_NE(error(two_channels.view, {}, outputs).find("2 channels"), std::string::npos);
  TensorView ints = t.view;
  ints.dtype = DataType::kInt32;
  EXPECT_NE(error(ints, {}, outputs).find("dtype int32"), std::string::npos);
  TensorView strided = t.view;
  strided.strides[3] = 2;
  EXPECT_NE(error(strided, {}, outputs).find("dense"), std::string::npos);
  EXPECT_NE(error(t.view, {}, {a.view()}).find("1 output images for a batch of 2"), std::string::npos);
  HostImage small(PixelFormat::kRGB8, 4, 4);
  EXPECT_NE(error(t.view, {}, {a.view(), small.view()}).find("output 1 is 4x4, not the tensor's 5x4"),
            std::string::npos);
  HostImage bgr(PixelFormat::kBGR8, 5, 4);
  EXPECT_NE(error(t.view, {}, {bgr.view(), b.view()}).find("output 0 is bgr8, not rgb8"), std::string::npos);
  TensorImageParams infinite;
  infinite.offset[2] = kInf;
  EXPECT_NE(error(t.view, infinite, outputs).find("channel 2 must be finite"), std::string::npos);
  TensorView on_device = t.view;
  on_device.memory = MemoryKind::kDevice;
  EXPECT_NE(error(on_device, {}, outputs).find("device memory is not reachable from the host"),
            std::string::npos);
  ImageView device_image = b.view();
  device_image.memory = MemoryKind::kDevice;
  EXPECT_NE(error(t.view, {}, {a.view(), device_image}).find("output 1 is in device memory"),
            std::string::npos);
}

}  // namespace
}  // namespace fovea::post
