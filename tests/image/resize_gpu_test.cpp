// Resize: CUDA against the CPU reference on random batches (different sizes per image, ROIs,
// pitched images, letterbox), for every format, filter and mode.
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "image/image_test_util.h"
#include "image/resize.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

struct Shape {
  int src_width, src_height, dst_width, dst_height;
  Roi roi;
};

// Batch 1 (an odd-sized image) and a batch of 3 with different sizes, ROIs and placements.
const std::vector<std::vector<Shape>> kBatches = {{{13, 127, 50, 31, {}}},
                                                  {{126, 78, 61, 40, {}},
                                                   {1920, 1080, 640, 360, {100, 50, 1001, 777}},
                                                   {97, 61, 300, 201, {3, 1, 90, 59}}}};
// OpenCV's area filter only downscales.
const std::vector<std::vector<Shape>> kDownscaleBatches = {{{127, 131, 50, 31, {}}},
                                                           {{126, 78, 61, 40, {}},
                                                            {1920, 1080, 640, 360, {100, 50, 1001, 777}},
                                                            {300, 200, 97, 61, {3, 1, 290, 159}}}};

double cuda_vs_cpu(PixelFormat format, int channels, const std::vector<Shape>& shapes,
                   const ResizeParams& params) {
  std::vector<std::unique_ptr<HostImage>> host_in, host_out;
  std::vector<std::unique_ptr<DeviceImage>> dev_in, dev_out;
  ImageBatch cpu_in, cpu_out, gpu_in, gpu_out;
  std::uint32_t seed = 1;
  for (const Shape& s : shapes) {
    host_in.push_back(std::make_unique<HostImage>(format, s.src_width, s.src_height, channels, 7));
    host_in.back()->fill_random(seed++);
    host_out.push_back(std::make_unique<HostImage>(format, s.dst_width, s.dst_height, channels, 5));
    dev_in.push_back(std::make_unique<DeviceImage>(format, s.src_width, s.src_height, channels));
    dev_in.back()->upload(*host_in.back());
    dev_out.push_back(std::make_unique<DeviceImage>(format, s.dst_width, s.dst_height, channels));
    cpu_in.images.push_back(host_in.back()->view());
    cpu_in.rois.push_back(s.roi);
    cpu_out.images.push_back(host_out.back()->view());
    gpu_in.images.push_back(dev_in.back()->view());
    gpu_in.rois.push_back(s.roi);
    gpu_out.images.push_back(dev_out.back()->view());
  }
  const Status cpu = run_resize_cpu(cpu_in, cpu_out, params);
  EXPECT_TRUE(cpu.is_ok()) << cpu.to_string();
  const Status gpu = run_resize_cuda(nullptr, gpu_in, gpu_out, params);
  EXPECT_TRUE(gpu.is_ok()) << gpu.to_string();
  double worst = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    worst = std::max(worst, max_abs_difference(dev_out[i]->download(3).view(), host_out[i]->view()));
  }
  return worst;
}

TEST(ResizeGpu, MatchesCpuForEveryFormatFilterAndMode) {
  FOVEA_REQUIRE_GPU();
  struct Format {
    PixelFormat format;
    int channels;
    double tolerance;
  };
  const Format formats[] = {
      {PixelFormat::kRGB8, 3, kU8RoundingTolerance},  {PixelFormat::kBGR8, 3, kU8RoundingTolerance},
      {PixelFormat::kRGBA8, 4, kU8RoundingTolerance}, {PixelFormat::kGRAY8, 1, kU8RoundingTolerance},
      {PixelFormat::kPlanarF32, 3, kF32Tolerance},    {PixelFormat::kPlanarF32, 1, kF32Tolerance}};
  for (const Format& f : formats) {
    for (ResizeCompat compat : {ResizeCompat::kOpenCv, ResizeCompat::kPil}) {
      for (ResizeFilter filter :
           {ResizeFilter::kNearest, ResizeFilter::kBilinear, ResizeFilter::kArea, ResizeFilter::kBicubic}) {
        const bool downscale_only = filter == ResizeFilter::kArea && compat == ResizeCompat::kOpenCv;
        for (const auto& shapes : downscale_only ? kDownscaleBatches : kBatches) {
          for (ResizeFit fit : {ResizeFit::kStretch, ResizeFit::kLetterbox}) {
            SCOPED_TRACE(::testing::Message()
                         << "format " << pixel_format_name(f.format) << " channels " << f.channels
                         << " compat " << static_cast<int>(compat) << " filter " << static_cast<int>(filter)
                         << " batch " << shapes.size() << " fit " << static_cast<int>(fit));
            const ResizeParams params{filter, compat, fit, {0.25f, 64.0f, 128.0f, 255.0f}};
            EXPECT_LE(cuda_vs_cpu(f.format, f.channels, shapes, params), f.tolerance);
          }
        }
      }
    }
  }
}

TEST(ResizeGpu, RejectsHostMemory) {
  FOVEA_REQUIRE_GPU();
  HostImage src(PixelFormat::kRGB8, 16, 16);
  HostImage dst(PixelFormat::kRGB8, 8, 8);
  EXPECT_EQ(
      run_resize_cuda(nullptr, ImageBatch{{src.view()}, {}}, ImageBatch{{dst.view()}, {}}, ResizeParams{})
          .code(),
      StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fovea::image::testing
