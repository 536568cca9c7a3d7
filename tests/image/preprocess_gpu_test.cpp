// Fused preprocess: CUDA against the CPU reference on random NV12 batches (different sizes,
// pitched, ROIs, letterbox), for both layouts, dtypes and filters.
#include <cstdint>
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "image/image_test_util.h"
#include "image/preprocess.h"
#include "image/tolerances.h"
#include "core/half.h"

namespace fovea::image::testing {
namespace {

double to_double(const std::vector<std::uint8_t>& bytes, std::size_t i, DataType dtype) {
  if (dtype == DataType::kFloat32) return reinterpret_cast<const float*>(bytes.data())[i];
  return half_to_float(Half{reinterpret_cast<const std::uint16_t*>(bytes.data())[i]});
}

TEST(PreprocessGpu, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  const int sizes[3][2] = {{126, 78}, {1920, 1080}, {64, 302}};
  const Roi rois[3] = {Roi{}, Roi{13, 7, 1501, 999}, Roi{1, 31, 62, 201}};
  for (int count : {1, 3}) {
    std::vector<std::unique_ptr<HostImage>> host;
    std::vector<std::unique_ptr<DeviceImage>> device;
    ImageBatch cpu_in, gpu_in;
    for (int i = 0; i < count; ++i) {
      host.push_back(std::make_unique<HostImage>(PixelFormat::kNV12, sizes[i][0], sizes[i][1], 3, 6));
      host.back()->fill_random(static_cast<std::uint32_t>(40 + i));
      device.push_back(std::make_unique<DeviceImage>(PixelFormat::kNV12, sizes[i][0], sizes[i][1]));
      device.back()->upload(*host.back());
      cpu_in.images.push_back(host.back()->view());
      gpu_in.images.push_back(device.back()->view());
      cpu_in.rois.push_back(rois[i]);
      gpu_in.rois.push_back(rois[i]);
    }
    for (ResizeFilter filter : {ResizeFilter::kBilinear, ResizeFilter::kNearest}) {
      for (ResizeFit fit : {ResizeFit::kStretch, ResizeFit::kLetterbox}) {
        for (TensorLayout layout : {TensorLayout::kNCHW, TensorLayout::kNHWC}) {
          for (DataType dtype : {DataType::kFloat32, DataType::kFloat16}) {
            PreprocessParams params;
            params.width = 961;
            params.height = 543;
            params.layout = layout;
            params.dtype = dtype;
            params.filter = filter;
            params.fit = fit;
            params.bgr = fit == ResizeFit::kLetterbox;
            params.mean = {0.485f, 0.456f, 0.406f};
            params.std = {0.229f, 0.224f, 0.225f};
            params.pad_value = {114.0f, 114.0f, 114.0f};
            SCOPED_TRACE(::testing::Message()
                         << "batch " << count << " filter " << static_cast<int>(filter) << " fit "
                         << static_cast<int>(fit) << " layout " << static_cast<int>(layout) << " dtype "
                         << data_type_name(dtype));
            auto plan = plan_preprocess(cpu_in, params);
            ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
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
            const std::size_t elements = plan->output_bytes / data_type_size(dtype);
            for (std::size_t i = 0; i < elements; ++i) {
              worst = std::max(worst, std::abs(to_double(actual, i, dtype) - to_double(expected, i, dtype)));
            }
            EXPECT_LE(worst, dtype == DataType::kFloat32 ? kF32Tolerance : kF16Tolerance);
          }
        }
      }
    }
  }
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
