// The image flow on the GPU against the same flow on the CPU: the decoded files uploaded per decode
// thread (stream-ordered pool), the fused preprocess on packed RGB8 of many sizes, the model, the
// pictures back (post/tensor_image.h) and the boxes mapped back per image. With the identity model
// in float32 the GPU's pictures equal the CPU's byte for byte; in float16 the input tensor is
// rounded to 11 significant bits, (p / 255 - 0.5) / 0.5 then carries an error below 2^-11, a
// quarter of a pixel level after the inverse mapping: each byte within 1.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/cuda_raii.h"
#include "image_flow_fixture.h"
#include "pipeline/flow.h"

namespace fovea::pipeline {
namespace {

using namespace image_flow_test;
namespace fs = std::filesystem;

class ImageFlowGpu : public ImageFlow {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    ImageFlow::SetUp();
  }
};

TEST_F(ImageFlowGpu, PicturesMatchTheCpuFlow) {
  ASSERT_TRUE(write_identity_model(dir_ / "identity.onnx").is_ok());
  // More images than the decode window and the budget's frames, of several sizes.
  for (int i = 0; i < 45; ++i) {
    const int width = i % 3 == 0 ? 16 : 24 + 2 * (i % 5);
    write_png(fmt::format("{}/p{:02}.png", i % 2 ? "sub" : ".", i), random_image(width, 8 + i % 4, i));
  }
  for (const runtime::Precision precision : {runtime::Precision::kFloat32, runtime::Precision::kFloat16}) {
    PipelineConfig config = image2image_config();
    config.models[0].precision = precision;
    config.mux.batch_size = 8;
    config.sinks.metadata.reset();
    config.sinks.images->output_dir = (dir_ / "cpu").string();
    ASSERT_TRUE(run_flow(config, {.device = DeviceChoice::kCpu, .progress = nullptr}).is_ok());
    config.sinks.images->output_dir = (dir_ / "gpu").string();
    Result<FlowResult> gpu = run_flow(config, {.device = DeviceChoice::kGpu, .progress = nullptr});
    ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
    EXPECT_EQ(gpu->stats.total_frames(), 45u);
    const int tolerance = precision == runtime::Precision::kFloat16 ? 1 : 0;
    for (const auto& entry : fs::recursive_directory_iterator(dir_ / "cpu")) {
      if (!entry.is_regular_file()) continue;
      const fs::path relative = fs::relative(entry.path(), dir_ / "cpu");
      const io::DecodedImage want = io::decode_image_file(entry.path()).value();
      Result<io::DecodedImage> got = io::decode_image_file(dir_ / "gpu" / relative);
      ASSERT_TRUE(got.is_ok()) << relative;
      const ImageView& a = want.image.view();
      const ImageView& b = got->image.view();
      ASSERT_EQ(a.width, b.width);
      ASSERT_EQ(a.height, b.height);
      for (int y = 0; y < a.height; ++y) {
        for (int x = 0; x < a.width * 3; ++x) {
          ASSERT_LE(std::abs(a.row(0, y)[x] - b.row(0, y)[x]), tolerance)
              << relative << " at " << x / 3 << "," << y;
        }
      }
    }
    fs::remove_all(dir_ / "cpu");
    fs::remove_all(dir_ / "gpu");
  }
}

}  // namespace
}  // namespace fovea::pipeline
