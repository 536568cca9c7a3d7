// fovea model calibrate through the real binary on the CPU: pictures of several sizes and formats,
// or a video's frames, give a calibration cache that names the model's digest and has a range for
// the model's input and its activations; an empty folder, an -o that is the model or some other
// file, and int8 without a cache are refused (exit 2) naming what is wrong, touching nothing; a file
// that cannot be read is named and the others calibrate (exit 3).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "io/image_codec.h"
#include "runtime/engine.h"
#include "runtime/graph_builder.h"
#include "runtime/npy.h"
#include "runtime/onnx_writer.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::testing {
namespace {

namespace fs = std::filesystem;

class CliCalibrate : public ::testing::Test {
 protected:
  // A segmenter of any input size: a 1x1 convolution "scores" and its relu "relu"; pictures of
  // three sizes, as PNG and JPEG.
  void SetUp() override {
    dir_ = test_temp_dir();
    using namespace runtime;
    GraphBuilder builder(17);
    const ValueId input = builder.input("input", image_type(3));
    const ValueId weights =
        builder.constant("weights", float32_tensor({2, 3, 1, 1}, {1.0f, -2.0f, 0.5f, -1.0f, 3.0f, 0.25f}));
    const ValueId scores = builder.node("Conv", {input, weights}, "scores");
    builder.output(builder.node("Relu", {scores}, "relu"), image_type(2));
    model_ = dir_ / "segmenter.onnx";
    std::ofstream(model_, std::ios::binary) << serialize_onnx(std::move(builder).take_graph(), {}).value();
    fs::create_directories(dir_ / "in");
    for (const auto& [name, width, height, format] :
         {std::tuple{"a.png", 24, 10, io::ImageFileFormat::kPng},
          std::tuple{"b.jpg", 9, 17, io::ImageFileFormat::kJpeg},
          std::tuple{"c.png", 16, 12, io::ImageFileFormat::kPng}}) {
      io::HostImage image = io::HostImage::allocate(PixelFormat::kRGB8, width, height).value();
      for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width * 3; ++x) image.row(y)[x] = static_cast<std::uint8_t>(x * 13 + y * 7);
      }
      ASSERT_TRUE(io::write_image_file(dir_ / "in" / name, image.view(), {format}, {}).is_ok());
    }
  }

  int fovea(std::vector<std::string> args) {
    args.insert(args.begin(), {"model", "calibrate"});
    const int code = run_cli(FOVEA_CLI_PATH, args, dir_ / "log.txt");
    output_ = read_text(dir_ / "log.txt");
    return code;
  }

  nlohmann::json cache(const fs::path& path) const {
    return nlohmann::json::parse(read_text(path), nullptr, /*allow_exceptions=*/false);
  }

  fs::path dir_;
  fs::path model_;
  std::string output_;
};

TEST_F(CliCalibrate, WritesACacheNamingTheModelDigestWithARangeForEveryActivation) {
  const fs::path calib = dir_ / "segmenter.calib";
  ASSERT_EQ(fovea({model_.string(), "--images", (dir_ / "in").string(), "--size", "16x12", "--normalize",
                   "none", "--batch", "2", "-o", calib.string()}),
            0)
      << output_;
  nlohmann::json json = cache(calib);
  ASSERT_TRUE(json.is_object()) << read_text(calib);
  EXPECT_EQ(json["format"], "fovea-calibration");
  EXPECT_EQ(json["model_digest"], runtime::file_digest(model_).value());
  EXPECT_EQ(json["model"], "segmenter.onnx");
  EXPECT_EQ(json["method"], "entropy");
  EXPECT_EQ(json["samples"], 3);  // every picture, the last batch partial
  EXPECT_EQ(json["preprocess"], "16x12 none rgb");
  for (const char* tensor : {"input", "scores", "relu"}) {
    ASSERT_TRUE(json["tensors"].contains(tensor)) << json.dump(2);
    EXPECT_GT(json["tensors"][tensor]["amax"].get<double>(), 0.0) << tensor;
  }
  // Pixels / 255 with no normalization: the input's range is within [0, 1].
  EXPECT_LE(json["tensors"]["input"]["amax"].get<double>(), 1.0);
  EXPECT_NE(output_.find("3 samples"), std::string::npos) << output_;
  EXPECT_NE(output_.find("clipped"), std::string::npos) << output_;

  // Again with another method over the cache it wrote: a calibration cache is replaced.
  ASSERT_EQ(fovea({model_.string(), "--images", (dir_ / "in").string(), "--size", "16x12", "--method",
                   "minmax", "-o", calib.string()}),
            0)
      << output_;
  EXPECT_EQ(cache(calib)["method"], "minmax");
  EXPECT_EQ(cache(calib)["preprocess"], "16x12 imagenet rgb");
  for (const char* tensor : {"input", "scores", "relu"})
    EXPECT_TRUE(cache(calib)["tensors"][tensor]["sqnr_db"].is_number());

  // The SQNR rule at a threshold no tensor reaches: every tensor is kept in float, and said so.
  ASSERT_EQ(fovea({model_.string(), "--images", (dir_ / "in").string(), "--size", "16x12", "--min-sqnr",
                   "199", "-o", calib.string()}),
            0)
      << output_;
  for (const char* tensor : {"input", "scores", "relu"})
    EXPECT_EQ(cache(calib)["tensors"][tensor]["keep_float"], true);
  EXPECT_NE(output_.find("below --min-sqnr"), std::string::npos) << output_;
}

TEST_F(CliCalibrate, TakesThePreprocessingAndTheCachesPathFromAFlowsModelEntry) {
  std::ofstream(dir_ / "flow.yaml") << "sources:\n"
                                       "  - uri: street.mp4\n"
                                       "models:\n"
                                       "  - name: detector\n"
                                       "    path: other.onnx\n"
                                       "  - name: segmenter\n"
                                       "    path: segmenter.onnx\n"
                                       "    input_width: 16\n"
                                       "    input_height: 12\n"
                                       "    mean: [0.5, 0.5, 0.5]\n"
                                       "    std: [0.25, 0.25, 0.25]\n"
                                       "    color_order: bgr\n"
                                       "    precision: int8\n"
                                       "    calibration: segmenter.calib\n"
                                       "sinks:\n"
                                       "  null: true\n";
  const std::string flow = (dir_ / "flow.yaml").string();
  ASSERT_EQ(fovea({"--config", flow, "--model", "segmenter", "--images", (dir_ / "in").string()}), 0)
      << output_;
  EXPECT_EQ(cache(dir_ / "segmenter.calib")["preprocess"], "16x12 mean 0.5,0.5,0.5 std 0.25,0.25,0.25 bgr");
  EXPECT_EQ(cache(dir_ / "segmenter.calib")["model_digest"], runtime::file_digest(model_).value());
  // Flags override the entry.
  ASSERT_EQ(fovea({model_.string(), "--config", flow, "--model", "segmenter", "--images",
                   (dir_ / "in").string(), "--normalize", "none", "--size", "8x6"}),
            0)
      << output_;
  EXPECT_EQ(cache(dir_ / "segmenter.calib")["preprocess"], "8x6 none bgr");
  // MODEL must be the entry's model, and the entry must exist.
  EXPECT_EQ(fovea({model_.string(), "--config", flow, "--images", (dir_ / "in").string()}), 2) << output_;
  EXPECT_NE(output_.find("other.onnx"), std::string::npos) << output_;
  EXPECT_EQ(fovea({"--config", flow, "--model", "classifier", "--images", (dir_ / "in").string()}), 2)
      << output_;
  EXPECT_NE(output_.find("classifier"), std::string::npos) << output_;
}

TEST_F(CliCalibrate, TakesAVideosFramesAndSaysWhenThereAreFewerThanAsked) {
  ASSERT_TRUE(write_clip((dir_ / "clip.mp4").string(), {.width = 64, .height = 48, .frames = 6}).is_ok());
  const fs::path calib = dir_ / "video.calib";
  ASSERT_EQ(fovea({model_.string(), "--video", (dir_ / "clip.mp4").string(), "--size", "32x24", "--samples",
                   "10", "--method", "percentile", "-o", calib.string()}),
            0)
      << output_;
  EXPECT_EQ(cache(calib)["samples"], 6);
  EXPECT_EQ(cache(calib)["method"], "percentile");
  EXPECT_NE(output_.find("fewer than the 10"), std::string::npos) << output_;
}

TEST_F(CliCalibrate, NamesAPictureItCannotReadAndCalibratesOnTheOthers) {
  std::ofstream(dir_ / "in" / "broken.png") << "not a png";
  const fs::path calib = dir_ / "partial.calib";
  ASSERT_EQ(
      fovea({model_.string(), "--images", (dir_ / "in").string(), "--size", "16x12", "-o", calib.string()}),
      3)
      << output_;
  EXPECT_NE(output_.find("broken.png"), std::string::npos) << output_;
  EXPECT_EQ(cache(calib)["samples"], 3);
}

TEST_F(CliCalibrate, AnEmptyFolderIsRefusedNamingIt) {
  fs::create_directories(dir_ / "empty");
  ASSERT_EQ(fovea({model_.string(), "--images", (dir_ / "empty").string(), "--size", "16x12", "-o",
                   (dir_ / "m.calib").string()}),
            2)
      << output_;
  EXPECT_NE(output_.find((dir_ / "empty").string()), std::string::npos) << output_;
  EXPECT_FALSE(fs::exists(dir_ / "m.calib"));
}

TEST_F(CliCalibrate, AnOutputThatIsTheModelOrAnotherFileIsRefusedAndLeftAsItWas) {
  const std::string model_bytes = read_text(model_);
  ASSERT_EQ(
      fovea({model_.string(), "--images", (dir_ / "in").string(), "--size", "16x12", "-o", model_.string()}),
      2)
      << output_;
  EXPECT_NE(output_.find(model_.string()), std::string::npos) << output_;
  EXPECT_EQ(read_text(model_), model_bytes);

  const fs::path notes = dir_ / "notes.json";
  std::ofstream(notes) << R"({"mine": true})";
  ASSERT_EQ(
      fovea({model_.string(), "--images", (dir_ / "in").string(), "--size", "16x12", "-o", notes.string()}),
      2)
      << output_;
  EXPECT_NE(output_.find("not a calibration cache"), std::string::npos) << output_;
  EXPECT_EQ(read_text(notes), R"({"mine": true})");
}

TEST_F(CliCalibrate, AModelWithoutAFixedSizeNeedsSize) {
  ASSERT_EQ(fovea({model_.string(), "--images", (dir_ / "in").string(), "-o", (dir_ / "m.calib").string()}),
            2)
      << output_;
  EXPECT_NE(output_.find("--size"), std::string::npos) << output_;
}

TEST_F(CliCalibrate, Int8WithoutACacheIsACommandLineError) {
  const fs::path input = dir_ / "input.npy";
  ASSERT_TRUE(runtime::write_npy(input, runtime::Tensor::allocate(DataType::kFloat32, {1, 3, 4, 4})).is_ok());
  const int code = run_cli(FOVEA_CLI_PATH,
                           {"model", "run", model_.string(), "--input", "input=" + input.string(),
                            "--precision", "int8", "--output-dir", (dir_ / "out").string()},
                           dir_ / "log.txt");
  output_ = read_text(dir_ / "log.txt");
  EXPECT_EQ(code, 2) << output_;
  EXPECT_NE(output_.find("--calib"), std::string::npos) << output_;
}

}  // namespace
}  // namespace fovea::testing
