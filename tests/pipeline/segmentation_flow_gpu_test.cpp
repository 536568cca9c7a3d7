// The segmentation flow on the GPU against the same flow on the CPU: NVDEC, the fused preprocess,
// the CUDA executor in float16, the CUDA postprocess and composite, the same lossless output. The
// frames must agree within ±2 (rounding of the color conversions and the blur) except where fp16
// moves the mask's edge by a pixel, which may touch at most 2% of the pixels.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/cuda_raii.h"
#include "flow_test_util.h"
#include "io/io_test_util.h"
#include "pipeline/flow.h"

namespace fovea::pipeline {
namespace {

using namespace flow_test;

class FlowGpu : public FlowFixture {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    FlowFixture::SetUp();
  }
};

Result<std::vector<Frame>> run_and_decode(const PipelineConfig& config, DeviceChoice device,
                                          const std::string& out) {
  PipelineConfig run = config;
  run.sinks.video->output_dir = out;
  Result<FlowResult> result = run_flow(run, {.device = device, .progress = nullptr});
  FOVEA_TRY(result.status());
  if (result->partial()) return make_error(StatusCode::kInternal, "a source failed");
  FOVEA_ASSIGN_OR_RETURN(fovea::testing::DecodeOutcome decoded,
                         fovea::testing::decode_with_cpu(out + "/a.mp4"));
  return decoded.frames;
}

TEST_F(FlowGpu, MatchesTheCpuFlowWithinFp16AndRounding) {
  PipelineConfig config = base_config({clip_a()});
  config.task.refine_mask = true;
  Result<std::vector<Frame>> cpu = run_and_decode(config, DeviceChoice::kCpu, (dir() / "cpu").string());
  Result<std::vector<Frame>> gpu = run_and_decode(config, DeviceChoice::kGpu, (dir() / "gpu").string());
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  ASSERT_EQ(gpu->size(), cpu->size());
  for (std::size_t f = 0; f < cpu->size(); ++f) {
    const ImageView& a = (*cpu)[f].image;
    const ImageView& b = (*gpu)[f].image;
    EXPECT_EQ((*cpu)[f].pts, (*gpu)[f].pts);
    std::int64_t beyond = 0, total = 0;
    for (int p = 0; p < 3; ++p) {
      const int w = p == 0 ? a.width : a.width / 2, h = p == 0 ? a.height : a.height / 2;
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
          beyond += std::abs(static_cast<int>(a.row(p, y)[x]) - static_cast<int>(b.row(p, y)[x])) > 2 ? 1 : 0;
          ++total;
        }
      }
    }
    EXPECT_LE(static_cast<double>(beyond) / static_cast<double>(total), 0.02) << "frame " << f;
  }
}

}  // namespace
}  // namespace fovea::pipeline
