// fovea images through the real binary on the CPU: a folder of AB pairs through an identity model
// gives a picture per good file at its mirrored path, names the bad file and exits 3; an output
// folder that would replace the inputs, an empty folder and a detection run without a parser are
// refused (exit 2) before anything runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
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

}  // namespace
}  // namespace fovea::testing
