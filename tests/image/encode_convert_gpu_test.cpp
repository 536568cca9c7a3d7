// RGB -> YUV for encoding on the device, copied into pinned host memory on the caller's stream:
// the host result equals the CPU conversion.
#include <cstdint>
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "core/check.h"
#include "core/cuda_raii.h"
#include "image/encode_convert.h"
#include "image/image_test_util.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

using enum PixelFormat;

// An image in pinned host memory (cudaMallocHost), with 256-byte-aligned pitches.
class PinnedImage {
 public:
  PinnedImage(PixelFormat format, int width, int height) {
    auto allocation = plan_image_allocation(format, width, height);
    FOVEA_CHECK(allocation.is_ok());
    FOVEA_CHECK(cudaMallocHost(&data_, allocation->total_bytes) == cudaSuccess);
    view_ = image_view_in(data_, *allocation, format, width, height, MemoryKind::kPinnedHost);
  }
  ~PinnedImage() { cudaFreeHost(data_); }
  PinnedImage(const PinnedImage&) = delete;
  PinnedImage& operator=(const PinnedImage&) = delete;
  const ImageView& view() const { return view_; }

 private:
  void* data_ = nullptr;
  ImageView view_;
};

TEST(EncodeConvertGpu, PinnedOutputEqualsCpu) {
  FOVEA_REQUIRE_GPU();
  struct Spec {
    PixelFormat input;
    int width;
    int height;
    Roi roi;
  };
  const Spec specs[] = {
      {kRGB8, 1920, 1080, Roi{}}, {kRGB8, 126, 78, Roi{1, 3, 100, 60}}, {kRGB8, 2, 2, Roi{}}};
  for (PixelFormat format : {kNV12, kYUV420P}) {
    for (PixelFormat input_format : {kRGB8, kBGR8, kRGBA8}) {
      const EncodeConvertParams params{format, ColorMatrix::kBt709, ColorRange::kLimited};
      std::vector<HostImage> host_inputs;
      std::vector<std::unique_ptr<DeviceImage>> device_inputs;
      ImageBatch host_in;
      ImageBatch device_in;
      for (const Spec& spec : specs) {
        host_inputs.emplace_back(input_format, spec.width, spec.height, 3, 3);
        host_inputs.back().fill_random(static_cast<std::uint32_t>(spec.width));
        device_inputs.push_back(std::make_unique<DeviceImage>(input_format, spec.width, spec.height));
        device_inputs.back()->upload(host_inputs.back());
        host_in.rois.push_back(spec.roi);
        device_in.rois.push_back(spec.roi);
      }
      for (std::size_t i = 0; i < host_inputs.size(); ++i) {
        host_in.images.push_back(host_inputs[i].view());
        device_in.images.push_back(device_inputs[i]->view());
      }
      auto plan = plan_rgb_to_yuv_for_encode(device_in, params);
      ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
      std::vector<HostImage> cpu;
      std::vector<std::unique_ptr<DeviceImage>> scratch;
      std::vector<std::unique_ptr<PinnedImage>> pinned;
      ImageBatch cpu_out;
      ImageBatch scratch_batch;
      ImageBatch pinned_out;
      for (const auto& size : plan->output_sizes) {
        cpu.emplace_back(format, size.width, size.height);
        scratch.push_back(std::make_unique<DeviceImage>(format, size.width, size.height));
        pinned.push_back(std::make_unique<PinnedImage>(format, size.width, size.height));
        scratch_batch.images.push_back(scratch.back()->view());
        pinned_out.images.push_back(pinned.back()->view());
      }
      for (HostImage& image : cpu) cpu_out.images.push_back(image.view());
      ASSERT_TRUE(run_rgb_to_yuv_for_encode_cpu(host_in, cpu_out, params).is_ok());
      auto stream = CudaStream::create();
      ASSERT_TRUE(stream.is_ok());
      const Status status =
          run_rgb_to_yuv_for_encode_cuda(stream->get(), device_in, scratch_batch, pinned_out, params);
      ASSERT_TRUE(status.is_ok()) << status.to_string();
      ASSERT_TRUE(stream->synchronize().is_ok());
      for (std::size_t i = 0; i < cpu.size(); ++i) {
        EXPECT_LE(max_abs_difference(pinned[i]->view(), cpu[i].view()), kU8RoundingTolerance)
            << pixel_format_name(input_format) << " -> " << pixel_format_name(format) << " image " << i;
      }
    }
  }
}

}  // namespace
}  // namespace fovea::image::testing
