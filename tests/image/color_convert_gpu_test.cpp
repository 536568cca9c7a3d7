// CUDA color conversion against the CPU reference: every supported pair, every matrix and range,
// batches of images with different sizes, pitches and ROIs, and batches longer than one launch.
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "core/cuda_raii.h"
#include "image/color_convert.h"
#include "image/image_test_util.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

using enum PixelFormat;

constexpr PixelFormat kFormats[] = {kNV12, kP016, kYUV420P, kRGB8, kBGR8, kRGBA8, kGRAY8};

struct ImageSpec {
  int width;
  int height;
  Roi roi;
};

// Converts the images described by `specs` (random content) on the CPU and on the device and
// expects the same result.
void expect_gpu_matches_cpu(PixelFormat input_format, const ColorConvertParams& params,
                            const std::vector<ImageSpec>& specs, std::uint32_t seed) {
  std::vector<HostImage> host_inputs;
  std::vector<std::unique_ptr<DeviceImage>> device_inputs;
  std::vector<HostImage> cpu_outputs;
  std::vector<std::unique_ptr<DeviceImage>> device_outputs;
  ImageBatch host_in;
  ImageBatch device_in;
  for (const ImageSpec& spec : specs) {
    host_inputs.emplace_back(input_format, spec.width, spec.height, 3, 3);
    host_inputs.back().fill_random(seed++);
    device_inputs.push_back(std::make_unique<DeviceImage>(input_format, spec.width, spec.height));
    device_inputs.back()->upload(host_inputs.back());
    host_in.rois.push_back(spec.roi);
    device_in.rois.push_back(spec.roi);
  }
  for (std::size_t i = 0; i < specs.size(); ++i) {
    host_in.images.push_back(host_inputs[i].view());
    device_in.images.push_back(device_inputs[i]->view());
  }
  auto plan = plan_color_convert(host_in, params);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  ImageBatch host_out;
  ImageBatch device_out;
  for (const auto& size : plan->output_sizes) {
    cpu_outputs.emplace_back(params.output_format, size.width, size.height, 3, 1);
    device_outputs.push_back(std::make_unique<DeviceImage>(params.output_format, size.width, size.height));
  }
  for (std::size_t i = 0; i < specs.size(); ++i) {
    host_out.images.push_back(cpu_outputs[i].view());
    device_out.images.push_back(device_outputs[i]->view());
  }
  ASSERT_TRUE(run_color_convert_cpu(host_in, host_out, params).is_ok());
  auto stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  const Status status = run_color_convert_cuda(stream->get(), device_in, device_out, params);
  ASSERT_TRUE(status.is_ok()) << status.to_string();
  ASSERT_TRUE(stream->synchronize().is_ok());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const HostImage gpu = device_outputs[i]->download(2);
    EXPECT_LE(max_abs_difference(gpu.view(), cpu_outputs[i].view()), kU8RoundingTolerance)
        << pixel_format_name(input_format) << " -> " << pixel_format_name(params.output_format) << " image "
        << i << " matrix " << static_cast<int>(params.matrix) << " range " << static_cast<int>(params.range);
  }
}

// Three images: a whole even-sized one, one with a ROI at an odd offset (even size, so 4:2:0
// outputs accept it) in an image of odd size where the input allows it, and the smallest 4:2:0 one.
std::vector<ImageSpec> mixed_batch(PixelFormat input) {
  const bool subsampled = color_detail::is_yuv420(input);
  return {ImageSpec{126, 78, Roi{}},
          ImageSpec{subsampled ? 14 : 13, subsampled ? 128 : 127, Roi{1, 3, 12, 120}},
          ImageSpec{2, 2, Roi{}}};
}

TEST(ColorConvertGpu, EveryConversionMatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (PixelFormat input : kFormats) {
    for (PixelFormat output : kFormats) {
      if (!color_conversion_supported(input, output)) continue;
      for (ColorMatrix matrix : {ColorMatrix::kBt601, ColorMatrix::kBt709}) {
        for (ColorRange range : {ColorRange::kLimited, ColorRange::kFull}) {
          expect_gpu_matches_cpu(input, {output, matrix, range}, mixed_batch(input), 100);
        }
      }
    }
  }
}

TEST(ColorConvertGpu, OddSizedPackedImages) {
  FOVEA_REQUIRE_GPU();
  expect_gpu_matches_cpu(kBGR8, {kRGBA8}, {ImageSpec{13, 127, Roi{}}}, 200);
  expect_gpu_matches_cpu(kRGB8, {kGRAY8, ColorMatrix::kBt709}, {ImageSpec{127, 13, Roi{}}}, 201);
}

TEST(ColorConvertGpu, Full1080pFrame) {
  FOVEA_REQUIRE_GPU();
  expect_gpu_matches_cpu(kNV12, {kRGB8, ColorMatrix::kBt709}, {ImageSpec{1920, 1080, Roi{}}}, 300);
  expect_gpu_matches_cpu(kRGB8, {kNV12, ColorMatrix::kBt709}, {ImageSpec{1920, 1080, Roi{}}}, 301);
}

// More images than one launch carries (32), of different sizes.
TEST(ColorConvertGpu, BatchLongerThanOneLaunch) {
  FOVEA_REQUIRE_GPU();
  std::vector<ImageSpec> specs;
  for (int i = 0; i < 37; ++i) specs.push_back(ImageSpec{2 * (i % 7) + 2, 2 * (i % 5) + 4, Roi{}});
  expect_gpu_matches_cpu(kYUV420P, {kBGR8, ColorMatrix::kBt601, ColorRange::kFull}, specs, 400);
  expect_gpu_matches_cpu(kRGBA8, {kP016, ColorMatrix::kBt709, ColorRange::kLimited}, specs, 500);
}

TEST(ColorConvertGpu, RejectsHostMemory) {
  FOVEA_REQUIRE_GPU();
  HostImage input(kNV12, 64, 48);
  HostImage output(kRGB8, 64, 48);
  ImageBatch out{{output.view()}, {}};
  const Status status = run_color_convert_cuda(nullptr, {{input.view()}, {}}, out, {kRGB8});
  EXPECT_NE(status.message().find("device or pinned"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace fovea::image::testing
