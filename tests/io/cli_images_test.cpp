// fovea images through the real binary on the CPU: a folder of AB pairs through an identity model
// gives a picture per good file at its mirrored path, names the bad file and exits 3; a segmenter
// gives a label image per file at its own size, a classifier each file's top class by name; an
// output folder that would replace the inputs, an empty folder, a detection run without a parser
// and label images as JPEG are refused (exit 2) before anything runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "io/image_codec.h"
#include "runtime/graph_builder.h"
#include "runtime/onnx_writer.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::testing {
namespace {

namespace fs = std::filesystem;

class CliImages : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_temp_dir();
    fs::create_directories(dir_ / "in" / "sub");
    runtime::GraphBuilder builder(17);
    const runtime::ValueId input = builder.input("input", runtime::image_type(3));
    builder.output(builder.node("Identity", {input}, "output"), runtime::image_type(3));
    std::ofstream(dir_ / "identity.onnx", std::ios::binary)
        << runtime::serialize_onnx(std::move(builder).take_graph(), {}).value();
    io::HostImage pair = io::HostImage::allocate(PixelFormat::kRGB8, 32, 16).value();
    for (int y = 0; y < 16; ++y) {
      for (int x = 0; x < 32 * 3; ++x) pair.row(y)[x] = static_cast<std::uint8_t>(x * 7 + y * 11);
    }
    const std::vector<std::string> none;
    for (const char* name : {"a.jpg", "sub/b.jpg", "c.jpg"}) {
      ASSERT_TRUE(
          io::write_image_file(dir_ / "in" / name, pair.view(), {io::ImageFileFormat::kJpeg}, none).is_ok());
    }
    std::ofstream(dir_ / "in" / "broken.jpg") << "not a jpeg";
  }

  // The brightest channel's index (a 1x1 convolution passing the channels through) as a segmenter,
  // or, pooled over the image, as a classifier of the dominant color.
  void write_color_models() {
    using namespace runtime;
    GraphBuilder segmenter(17);
    const ValueId input = segmenter.input("input", image_type(3));
    const ValueId weights =
        segmenter.constant("weights", float32_tensor({3, 3, 1, 1}, {1, 0, 0, 0, 1, 0, 0, 0, 1}));
    segmenter.output(segmenter.node("Conv", {input, weights}, "scores"), image_type(3));
    std::ofstream(dir_ / "segmenter.onnx", std::ios::binary)
        << serialize_onnx(std::move(segmenter).take_graph(), {}).value();
    GraphBuilder classifier(17);
    const ValueId pixels = classifier.input("input", image_type(3));
    const ValueId pooled = classifier.node("GlobalAveragePool", {pixels}, "pooled");
    classifier.output(classifier.node("Flatten", {pooled}, "logits"),
                      ValueType{DataType::kFloat32, Dims{Dim::unknown("N"), Dim::known_size(3)}});
    std::ofstream(dir_ / "classifier.onnx", std::ios::binary)
        << serialize_onnx(std::move(classifier).take_graph(), {}).value();
    std::ofstream(dir_ / "colors.txt") << "red\ngreen\nblue\n";
    // Green-dominant PNGs of two sizes: PNG keeps the colors exact.
    fs::create_directories(dir_ / "colors");
    for (const auto& [name, width, height] :
         {std::tuple{"wide.png", 24, 10}, std::tuple{"tall.png", 9, 17}}) {
      io::HostImage image = io::HostImage::allocate(PixelFormat::kRGB8, width, height).value();
      for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
          std::uint8_t* pixel = image.row(y) + 3 * x;
          pixel[0] = 40;
          pixel[1] = 210;
          pixel[2] = 90;
        }
      }
      ASSERT_TRUE(io::write_image_file(dir_ / "colors" / name, image.view(), {io::ImageFileFormat::kPng}, {})
                      .is_ok());
    }
  }

  int fovea(const std::vector<std::string>& args) {
    const int code = run_cli(FOVEA_CLI_PATH, args, dir_ / "log.txt");
    output_ = read_text(dir_ / "log.txt");
    return code;
  }

  std::vector<std::string> common() const {
    return {"--model",      (dir_ / "identity.onnx").string(),
            "--size",       "16x16",
            "--split-ab",   "a",
            "--device",     "cpu",
            "--no-progress"};
  }

  fs::path dir_;
  std::string output_;
};

TEST_F(CliImages, WritesAPicturePerImageAndNamesTheBadFile) {
  std::vector<std::string> args = {"images", (dir_ / "in").string(), "--recursive", "-o",
                                   (dir_ / "out").string()};
  for (const std::string& arg : common()) args.push_back(arg);
  args.insert(args.end(), {"--metadata", (dir_ / "m.jsonl").string(), "--batch", "2"});
  ASSERT_EQ(fovea(args), 3) << output_;  // some inputs failed, the others went through
  EXPECT_NE(output_.find("broken.jpg"), std::string::npos) << output_;
  EXPECT_NE(output_.find("1 inputs skipped"), std::string::npos) << output_;
  for (const char* name : {"a.png", "sub/b.png", "c.png"}) {
    Result<io::DecodedImage> picture = io::decode_image_file(dir_ / "out" / name);
    ASSERT_TRUE(picture.is_ok()) << name << "\n" << output_;
    EXPECT_EQ(picture->image.view().width, 16);
    EXPECT_EQ(picture->image.view().height, 16);
  }
  EXPECT_FALSE(fs::exists(dir_ / "out" / "broken.png"));
}

TEST_F(CliImages, SegmentationWritesALabelImagePerImageAtItsOwnSize) {
  write_color_models();
  ASSERT_EQ(fovea({"images", (dir_ / "colors").string(), "--task", "segmentation", "--model",
                   (dir_ / "segmenter.onnx").string(), "--size", "8x8", "--normalize", "none", "--class", "1",
                   "-o", (dir_ / "labels").string(), "--metadata", (dir_ / "seg.jsonl").string(), "--device",
                   "cpu", "--no-progress"}),
            0)
      << output_;
  for (const auto& [name, width, height] : {std::tuple{"wide.png", 24, 10}, std::tuple{"tall.png", 9, 17}}) {
    Result<io::DecodedImage> labels = io::decode_image_file(dir_ / "labels" / name);
    ASSERT_TRUE(labels.is_ok()) << name << "\n" << output_;
    const ImageView& view = labels->image.view();
    EXPECT_EQ(view.width, width);
    EXPECT_EQ(view.height, height);
    EXPECT_EQ(view.row(0, height / 2)[0], 1) << name << ": green is class 1";
  }
  std::ifstream records(dir_ / "seg.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(records, line));
  EXPECT_NE(line.find(R"("target_fraction":1.0})"), std::string::npos) << line;

  // Label images are class indices: JPEG would change them.
  EXPECT_EQ(fovea({"images", (dir_ / "colors").string(), "--task", "segmentation", "--model",
                   (dir_ / "segmenter.onnx").string(), "--size", "8x8", "-o", (dir_ / "jpeg").string(),
                   "--format", "jpeg", "--device", "cpu", "--no-progress"}),
            2)
      << output_;
  EXPECT_NE(output_.find("--format"), std::string::npos) << output_;
  EXPECT_FALSE(fs::exists(dir_ / "jpeg"));
}

TEST_F(CliImages, ClassificationNamesEachImagesTopClass) {
  write_color_models();
  ASSERT_EQ(fovea({"images", (dir_ / "colors").string(), "--task", "classification", "--model",
                   (dir_ / "classifier.onnx").string(), "--size", "8x8", "--normalize", "none", "--labels",
                   (dir_ / "colors.txt").string(), "--top-k", "2", "--metadata",
                   (dir_ / "classes.jsonl").string(), "--device", "cpu", "--no-progress"}),
            0)
      << output_;
  std::ifstream records(dir_ / "classes.jsonl");
  int count = 0;
  for (std::string line; std::getline(records, line); ++count) {
    // The top class first, by name, then the second.
    EXPECT_NE(line.find(R"("classes":[{"class_id":1,"label":"green","score":)"), std::string::npos) << line;
    EXPECT_NE(line.find(R"(},{"class_id":2,"label":"blue","score":)"), std::string::npos) << line;
  }
  EXPECT_EQ(count, 2);

  // A segmenter's [N, C, h, w] is no classifier's output: refused, naming the model.
  EXPECT_EQ(fovea({"images", (dir_ / "colors").string(), "--task", "classification", "--model",
                   (dir_ / "segmenter.onnx").string(), "--size", "8x8", "--device", "cpu", "--no-progress"}),
            2)
      << output_;
  EXPECT_NE(output_.find("segmenter.onnx"), std::string::npos) << output_;
}

TEST_F(CliImages, AnOutputFolderThatWouldReplaceTheInputsIsRefused) {
  ASSERT_TRUE(fs::copy_file(dir_ / "in" / "a.jpg", dir_ / "in" / "d.jpg"));
  const std::string before = read_text(dir_ / "in" / "a.jpg");
  std::vector<std::string> args = {"images", (dir_ / "in").string(), "-o", (dir_ / "in").string(), "--format",
                                   "jpeg"};
  for (const std::string& arg : common()) args.push_back(arg);
  EXPECT_EQ(fovea(args), 2) << output_;
  EXPECT_NE(output_.find("-o"), std::string::npos) << output_;
  EXPECT_EQ(read_text(dir_ / "in" / "a.jpg"), before);
}

TEST_F(CliImages, AnEmptyFolderAndAMissingParserAreRefused) {
  fs::create_directories(dir_ / "empty");
  std::vector<std::string> args = {"images", (dir_ / "empty").string()};
  for (const std::string& arg : common()) args.push_back(arg);
  EXPECT_EQ(fovea(args), 2) << output_;
  EXPECT_NE(output_.find("empty"), std::string::npos) << output_;

  args = {"images", (dir_ / "in").string(), "--task", "detection"};
  for (const std::string& arg : common()) args.push_back(arg);
  EXPECT_EQ(fovea(args), 2) << output_;
  EXPECT_NE(output_.find("--parser"), std::string::npos) << output_;
}

// The nvJPEG thread and batch counts are checked as their keys are, and the error names the flag.
TEST_F(CliImages, JpegThreadAndBatchCountsOutOfRangeNameTheirFlag) {
  for (const auto& [flag, value, range] : {std::tuple{"--jpeg-threads", "0", "between 1 and 16"},
                                           std::tuple{"--jpeg-batch", "257", "between 1 and 256"}}) {
    std::vector<std::string> args = {"images", (dir_ / "in").string(), "-o", (dir_ / "out").string(), flag,
                                     value};
    for (const std::string& arg : common()) args.push_back(arg);
    EXPECT_EQ(fovea(args), 2) << output_;
    EXPECT_NE(output_.find(std::string(flag) + ": must be " + range), std::string::npos) << output_;
  }
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

}  // namespace
}  // namespace fovea::testing
