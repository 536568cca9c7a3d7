// Fused preprocess: CUDA against the CPU reference on random NV12 batches and NV12 mixed with
// RGB8/BGR8 (different sizes, pitched, ROIs, letterbox), for both layouts, dtypes and filters.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "core/half.h"
#include "image/image_test_util.h"
#include "image/preprocess.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

double to_double(const std::vector<std::uint8_t>& bytes, std::size_t i, DataType dtype) {
  if (dtype == DataType::kFloat32) return reinterpret_cast<const float*>(bytes.data())[i];
  return half_to_float(Half{reinterpret_cast<const std::uint16_t*>(bytes.data())[i]});
}

struct Frame {
  int width, height;
  Roi roi;
  PixelFormat format = PixelFormat::kNV12;
};

// The CUDA run against the CPU reference on random frames (uploaded pitched), for both filters,
// layouts and dtypes and the given fits. `halving`: whether every NV12 image must take the kernel's
// 2:1 fast path (detail::halves_columns; RGB8/BGR8 images never do), so the test knows which path
// it covers.
void expect_gpu_matches_cpu(const std::vector<Frame>& frames, int width, int height,
                            const std::vector<ResizeFit>& fits, bool halving) {
  std::vector<std::unique_ptr<HostImage>> host;
  std::vector<std::unique_ptr<DeviceImage>> device;
  ImageBatch cpu_in, gpu_in;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const Frame& f = frames[i];
    host.push_back(std::make_unique<HostImage>(f.format, f.width, f.height, 3, 6));
    host.back()->fill_random(static_cast<std::uint32_t>(40 + i));
    device.push_back(std::make_unique<DeviceImage>(f.format, f.width, f.height));
    device.back()->upload(*host.back());
    cpu_in.images.push_back(host.back()->view());
    gpu_in.images.push_back(device.back()->view());
    cpu_in.rois.push_back(f.roi);
    gpu_in.rois.push_back(f.roi);
  }
  for (ResizeFilter filter : {ResizeFilter::kBilinear, ResizeFilter::kNearest}) {
    for (ResizeFit fit : fits) {
      for (TensorLayout layout : {TensorLayout::kNCHW, TensorLayout::kNHWC}) {
        for (DataType dtype : {DataType::kFloat32, DataType::kFloat16}) {
          PreprocessParams params;
          params.width = width;
          params.height = height;
          params.layout = layout;
          params.dtype = dtype;
          params.filter = filter;
          params.fit = fit;
          params.bgr = fit == ResizeFit::kLetterbox;
          params.mean = {0.485f, 0.456f, 0.406f};
          params.std = {0.229f, 0.224f, 0.225f};
          params.pad_value = {114.0f, 114.0f, 114.0f};
          SCOPED_TRACE(::testing::Message()
                       << "batch " << frames.size() << " filter " << static_cast<int>(filter) << " fit "
                       << static_cast<int>(fit) << " layout " << static_cast<int>(layout) << " dtype "
                       << data_type_name(dtype));
          auto plan = plan_preprocess(cpu_in, params);
          ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
          for (int i = 0; i < gpu_in.size(); ++i) {
            const auto args = detail::preprocess_image_args(gpu_in, params,
                                                            plan->placements[static_cast<std::size_t>(i)], i);
            EXPECT_EQ(detail::halves_columns(args, width),
                      halving && frames[static_cast<std::size_t>(i)].format == PixelFormat::kNV12)
                << "image " << i;
          }
          const auto& s = plan->shape;
          std::vector<std::uint8_t> expected(plan->output_bytes);
          ASSERT_TRUE(run_preprocess_cpu(cpu_in, params,
                                         contiguous_tensor(expected.data(), dtype, MemoryKind::kHost,
                                                           {s[0], s[1], s[2], s[3]}))
                          .is_ok());
          void* d_out = nullptr;
          ASSERT_EQ(cudaMalloc(&d_out, plan->output_bytes), cudaSuccess);
          const Status status = run_preprocess_cuda(
              nullptr, gpu_in, params,
              contiguous_tensor(d_out, dtype, MemoryKind::kDevice, {s[0], s[1], s[2], s[3]}));
          EXPECT_TRUE(status.is_ok()) << status.to_string();
          std::vector<std::uint8_t> actual(plan->output_bytes);
          ASSERT_EQ(cudaMemcpy(actual.data(), d_out, plan->output_bytes, cudaMemcpyDeviceToHost),
                    cudaSuccess);
          cudaFree(d_out);
          double worst = 0;
          std::size_t worst_index = 0;
          const std::size_t elements = plan->output_bytes / data_type_size(dtype);
          for (std::size_t i = 0; i < elements; ++i) {
            const double difference = std::abs(to_double(actual, i, dtype) - to_double(expected, i, dtype));
            if (difference > worst) {
              worst = difference;
              worst_index = i;
            }
          }
          EXPECT_LE(worst, dtype == DataType::kFloat32 ? kF32Tolerance : kF16Tolerance)
              << "at tensor element " << worst_index << " (shape " << s[0] << "x" << s[1] << "x" << s[2]
              << "x" << s[3] << "): " << to_double(actual, worst_index, dtype) << " vs "
              << to_double(expected, worst_index, dtype);
        }
      }
    }
  }
}

// The general path: upscale and non-integer downscales, odd ROIs and an odd tensor size.
TEST(PreprocessGpu, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  const std::vector<Frame> frames = {
      {126, 78, Roi{}}, {1920, 1080, Roi{13, 7, 1501, 999}}, {64, 302, Roi{1, 31, 62, 201}}};
  for (std::size_t count : {1u, 3u}) {
    expect_gpu_matches_cpu({frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(count)}, 961, 543,
                           {ResizeFit::kStretch, ResizeFit::kLetterbox}, false);
  }
}

// The 2:1 fast path (1920 columns to 960, the benchmark's case): full frames and an aligned ROI,
// with padding rows (letterbox, top-left); then a ROI that is 2:1 but not 16-byte aligned, which
// takes the general path.
TEST(PreprocessGpu, HalvingMatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::vector<Frame> frames = {{1920, 1080, Roi{}}, {2048, 600, Roi{64, 3, 1920, 501}}};
  const std::vector<ResizeFit> fits = {ResizeFit::kStretch, ResizeFit::kLetterbox,
                                       ResizeFit::kKeepAspectTopLeft};
  expect_gpu_matches_cpu(frames, 960, 544, fits, true);
  frames = {{1924, 1080, Roi{2, 0, 1920, 1080}}};
  expect_gpu_matches_cpu(frames, 960, 544, fits, false);
}

// RGB8/BGR8 of odd sizes (1x1, single rows) with odd ROIs and the pix2pix halves of a 512x256
// pair, alone and mixed with NV12 in one launch; then NV12 that would take the 2:1 fast path next
// to an RGB8 image (the launch takes the general path).
TEST(PreprocessGpu, PackedRgbMatchesCpu) {
  FOVEA_REQUIRE_GPU();
  const std::vector<ResizeFit> fits = {ResizeFit::kStretch, ResizeFit::kLetterbox};
  const std::vector<Frame> packed = {{37, 23, Roi{3, 5, 31, 17}, PixelFormat::kRGB8},
                                     {1, 1, Roi{}, PixelFormat::kBGR8},
                                     {255, 3, Roi{}, PixelFormat::kRGB8},
                                     {512, 256, Roi{256, 0, 256, 256}, PixelFormat::kRGB8},
                                     {512, 256, Roi{0, 0, 256, 256}, PixelFormat::kBGR8}};
  expect_gpu_matches_cpu(packed, 97, 64, fits, false);
  expect_gpu_matches_cpu({packed[3]}, 256, 256, fits, false);
  std::vector<Frame> mixed = packed;
  mixed.insert(mixed.begin() + 1, Frame{126, 78, Roi{13, 7, 99, 61}});
  mixed.push_back(Frame{64, 302, Roi{1, 31, 62, 201}});
  expect_gpu_matches_cpu(mixed, 961, 543, fits, false);
  expect_gpu_matches_cpu({{1920, 1080, Roi{}}, {37, 23, Roi{}, PixelFormat::kRGB8}}, 960, 544, fits, true);
}

TEST(PreprocessGpu, RejectsHostOutput) {
  FOVEA_REQUIRE_GPU();
  DeviceImage frame(PixelFormat::kNV12, 64, 48);
  PreprocessParams params;
  params.width = 32;
  params.height = 16;
  std::vector<std::uint8_t> bytes(3 * 32 * 16 * 2);
  const Status status = run_preprocess_cuda(
      nullptr, ImageBatch{{frame.view()}, {}}, params,
      contiguous_tensor(bytes.data(), DataType::kFloat16, MemoryKind::kHost, {1, 3, 16, 32}));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fovea::image::testing
