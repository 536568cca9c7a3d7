// The image flow on the GPU against the same flow on the CPU: the decoded files uploaded per decode
// thread (stream-ordered pool), the fused preprocess on packed RGB8 of many sizes, the model, the
// pictures back (post/tensor_image.h) and the boxes mapped back per image. With the identity model
// each byte is within 1: a resized picture's values land on or near half levels, where the order of
// the float operations (the kernel's fused multiply-adds, the reference's separate ones) decides the
// rounding; in float16 the input tensor also carries an error below 2^-11, a quarter of a level
// after the inverse mapping.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "core/cuda_raii.h"
#include "image_flow_fixture.h"
#include "io/nvjpeg_encoder.h"
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
    const int tolerance = 1;
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

// JPEGs through nvJPEG against the CPU's libjpeg-turbo: nvJPEG replicates chroma where
// libjpeg-turbo interpolates it (io/nvjpeg_decoder.h), so 4:2:0 pictures differ near color edges;
// on smooth pictures the mean difference stays below one level.
TEST_F(ImageFlowGpu, JpegsThroughNvjpegMatchTheCpuDecoder) {
  ASSERT_TRUE(write_identity_model(dir_ / "identity.onnx").is_ok());
  for (int i = 0; i < 20; ++i) {
    const int width = 32 + 2 * i, height = 16 + i;
    io::HostImage image = io::HostImage::allocate(PixelFormat::kRGB8, width, height).value();
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        std::uint8_t* pixel = image.row(y) + 3 * x;
        pixel[0] = static_cast<std::uint8_t>(40 + 2 * x);
        pixel[1] = static_cast<std::uint8_t>(60 + 3 * y);
        pixel[2] = static_cast<std::uint8_t>(200 - (x + y));
      }
    }
    const Status written =
        io::write_image_file(dir_ / "in" / fmt::format("j{:02}.jpg", i), image.view(),
                             {.format = io::ImageFileFormat::kJpeg, .jpeg_quality = 95}, {});
    ASSERT_TRUE(written.is_ok()) << written.to_string();
  }
  PipelineConfig config = image2image_config();
  config.images->split = AbSplit::kNone;
  config.models[0].precision = runtime::Precision::kFloat32;
  config.sinks.metadata.reset();
  double total_difference = 0;
  std::int64_t samples = 0;
  for (const JpegCodec decoder : {JpegCodec::kCpu, JpegCodec::kNvjpeg}) {
    config.images->decoder = decoder;
    config.sinks.images->output_dir = (dir_ / (decoder == JpegCodec::kCpu ? "cpu" : "gpu")).string();
    Result<FlowResult> result = run_flow(config, {.device = DeviceChoice::kGpu, .progress = nullptr});
    ASSERT_TRUE(result.is_ok()) << result.status().to_string();
    EXPECT_EQ(result->stats.total_frames(), 20u);
    const std::string& used = result->stats.sources.at(0).decoder;
    EXPECT_EQ(used.starts_with("nvjpeg"), decoder == JpegCodec::kNvjpeg) << used;
  }
  for (int i = 0; i < 20; ++i) {
    const std::string name = fmt::format("j{:02}.png", i);
    const io::DecodedImage a = io::decode_image_file(dir_ / "cpu" / name).value();
    const io::DecodedImage b = io::decode_image_file(dir_ / "gpu" / name).value();
    ASSERT_EQ(a.image.view().width, b.image.view().width);
    for (int y = 0; y < 8; ++y) {
      for (int x = 0; x < 8 * 3; ++x) {
        const int difference = std::abs(a.image.view().row(0, y)[x] - b.image.view().row(0, y)[x]);
        EXPECT_LE(difference, 24) << name;
        total_difference += difference;
        ++samples;
      }
    }
  }
  EXPECT_LT(total_difference / static_cast<double>(samples), 1.0);
}

// The GPU path counts a model's non-finite outputs as the CPU path does (float32 and float16 plans:
// 0 / 0 is NaN in both), over the inferred items only.
TEST_F(ImageFlowGpu, NonFiniteModelOutputsAreCounted) {
  ASSERT_TRUE(write_nan_model(dir_ / "nan.onnx").is_ok());
  for (int i = 0; i < 5; ++i)
    write_png(fmt::format("pair{}.png", i), random_image(16, 8, static_cast<unsigned>(i)));
  for (const runtime::Precision precision : {runtime::Precision::kFloat32, runtime::Precision::kFloat16}) {
    PipelineConfig config = image2image_config();
    config.models[0].path = (dir_ / "nan.onnx").string();
    config.models[0].precision = precision;
    config.sinks.images->output_dir = (dir_ / runtime::precision_name(precision)).string();
    Result<FlowResult> result = run_flow(config, {.device = DeviceChoice::kGpu, .progress = nullptr});
    ASSERT_TRUE(result.is_ok()) << result.status().to_string();
    EXPECT_EQ(result->stats.total_frames(), 5u);
    EXPECT_EQ(stage_count(result->stats, "inference", "non-finite output values"), 5u * 3 * 8 * 8)
        << runtime::precision_name(precision);
  }
}

// JPEG pictures encoded on the GPU (sinks.images.encoder: nvjpeg) against the writers' libjpeg-turbo:
// files of the same pictures, within the two encoders' loss of each other (io/nvjpeg_encoder.h:
// same tables and quality scale, rounding and chroma filter apart), and the summary says which
// encoder wrote them. A CPU flow that asks for nvjpeg is refused naming the key.
TEST_F(ImageFlowGpu, JpegPicturesEncodedByNvjpegMatchTheWritersOnes) {
  ASSERT_TRUE(write_identity_model(dir_ / "identity.onnx").is_ok());
  for (int i = 0; i < 21; ++i) write_png(fmt::format("p{:02}.png", i), random_image(40 + 2 * i, 24 + i, i));
  PipelineConfig config = image2image_config();
  config.models[0].precision = runtime::Precision::kFloat32;
  config.mux.batch_size = 8;
  config.sinks.metadata.reset();
  config.sinks.images->format = ImageOutputFormat::kJpeg;
  config.sinks.images->quality = 95;
  for (const JpegCodec encoder : {JpegCodec::kCpu, JpegCodec::kNvjpeg}) {
    config.sinks.images->encoder = encoder;
    config.sinks.images->output_dir = (dir_ / (encoder == JpegCodec::kCpu ? "cpu" : "gpu")).string();
    Result<FlowResult> result = run_flow(config, {.device = DeviceChoice::kGpu, .progress = nullptr});
    if (!result.is_ok() && encoder == JpegCodec::kNvjpeg && !io::NvjpegEncoder::available())
      GTEST_SKIP() << result.status().message();
    ASSERT_TRUE(result.is_ok()) << result.status().to_string();
    ASSERT_FALSE(result->outputs.empty());
    EXPECT_EQ(result->outputs.front().encoder, encoder == JpegCodec::kCpu ? "jpg" : "jpg (nvjpeg)");
    EXPECT_EQ(result->outputs.front().frames, 21);
  }
  for (int i = 0; i < 21; ++i) {
    const std::string name = fmt::format("p{:02}.jpg", i);
    const io::DecodedImage a = io::decode_image_file(dir_ / "cpu" / name).value();
    Result<io::DecodedImage> b = io::decode_image_file(dir_ / "gpu" / name);
    ASSERT_TRUE(b.is_ok()) << name << ": " << b.status().to_string();
    const ImageView& va = a.image.view();
    const ImageView& vb = b->image.view();
    ASSERT_EQ(va.width, vb.width);
    ASSERT_EQ(va.height, vb.height);
    double squared = 0;
    for (int y = 0; y < va.height; ++y) {
      for (int x = 0; x < va.width * 3; ++x) {
        const double d = static_cast<double>(va.row(0, y)[x]) - static_cast<double>(vb.row(0, y)[x]);
        squared += d * d;
      }
    }
    const double mse = squared / (static_cast<double>(va.width) * va.height * 3);
    // Two q95 encodings of one random picture: each within ~1.5% of full scale of it.
    EXPECT_LT(std::sqrt(mse), 8.0) << name;
  }
  config.sinks.images->encoder = JpegCodec::kNvjpeg;
  config.sinks.images->output_dir = (dir_ / "cpu-flow").string();
  const Result<FlowResult> refused = run_flow(config, {.device = DeviceChoice::kCpu, .progress = nullptr});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("sinks.images.encoder"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace fovea::pipeline
