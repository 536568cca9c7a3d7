// The nvJPEG decoder's CPU side: the header reader that routes each file (hardware engines, GPU
// hybrid or CPU) on files libjpeg wrote, bad files named in the error, and, where libnvjpeg is
// absent (CI, this project's build machine), a clear kUnsupported from create().
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/image_test_files.h"
#include "io/nvjpeg_decoder.h"
#include "io/nvjpeg_encoder.h"

extern "C" {
#include <jpeglib.h>
}

namespace fovea::io {
namespace {

using testing::encode_shaped_jpeg;
using testing::JpegShape;
using testing::to_bytes;

Result<JpegInfo> info_of(const std::string& jpeg, std::string_view name = "photo.jpg") {
  const std::vector<std::uint8_t> bytes = to_bytes(jpeg);
  return read_jpeg_info(bytes, name);
}

std::string shaped(int width, int height, const JpegShape& shape) {
  return encode_shaped_jpeg(testing::pattern_rgb8(width, height), shape);
}

TEST(NvjpegProbe, BaselineFourTwoZeroGoesToTheHardware) {
  const Result<std::string> jpeg =
      encode_image(testing::pattern_rgb8(37, 21).view(), {ImageFileFormat::kJpeg});
  ASSERT_TRUE(jpeg.is_ok()) << jpeg.status().to_string();
  const Result<JpegInfo> info = info_of(*jpeg);
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->width, 37);
  EXPECT_EQ(info->height, 21);
  EXPECT_EQ(info->components, 3);
  EXPECT_EQ(info->scans, 1);
  EXPECT_EQ(info->coding, JpegCoding::kBaseline);
  EXPECT_EQ(info->sampling, JpegSampling::k420);
  EXPECT_EQ(info->orientation, 1);
  EXPECT_TRUE(info->hardware_decodable) << info->not_hardware_reason;
  EXPECT_TRUE(info->gpu_decodable) << info->not_gpu_reason;
}

TEST(NvjpegProbe, NamesTheChromaSampling) {
  const struct {
    JpegShape shape;
    JpegSampling sampling;
    bool hardware;
  } cases[] = {{{1, 1}, JpegSampling::k444, true},
               {{2, 1}, JpegSampling::k422, true},
               {{1, 2}, JpegSampling::k440, true},
               {{4, 1}, JpegSampling::k411, false}};
  for (const auto& c : cases) {
    const Result<JpegInfo> info = info_of(shaped(33, 17, c.shape));
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    EXPECT_EQ(info->sampling, c.sampling) << jpeg_sampling_name(c.sampling);
    EXPECT_EQ(info->hardware_decodable, c.hardware) << jpeg_sampling_name(c.sampling);
    EXPECT_TRUE(info->gpu_decodable) << info->not_gpu_reason;
  }
}

// nvJPEG's GPU backend decoded a progressive file wrongly after a larger one (why_not_gpu): the CPU
// decodes them.
TEST(NvjpegProbe, ProgressiveGoesToTheCpu) {
  const Result<JpegInfo> info = info_of(shaped(40, 30, {.progressive = true}));
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->coding, JpegCoding::kProgressive);
  EXPECT_GT(info->scans, 1);
  EXPECT_FALSE(info->hardware_decodable);
  EXPECT_EQ(info->not_hardware_reason, "progressive");
  EXPECT_FALSE(info->gpu_decodable);
  EXPECT_EQ(info->not_gpu_reason, "progressive");
}

TEST(NvjpegProbe, GrayIsDecodableEverywhere) {
  const std::vector<std::uint8_t> samples(23 * 11, 100);
  const Result<JpegInfo> info =
      info_of(testing::write_jpeg_bytes(23, 11, samples, JCS_GRAYSCALE, 1, JCS_GRAYSCALE, 90));
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->components, 1);
  EXPECT_EQ(info->color, JpegColor::kGray);
  EXPECT_EQ(info->sampling, JpegSampling::kGray);
  EXPECT_TRUE(info->hardware_decodable) << info->not_hardware_reason;
}

TEST(NvjpegProbe, CmykAndYcckStayOnTheCpu) {
  const std::vector<std::uint8_t> samples(16 * 8 * 4, 60);
  for (const auto& [stored, color, reason] :
       {std::tuple{JCS_CMYK, JpegColor::kCmyk, "CMYK"}, std::tuple{JCS_YCCK, JpegColor::kYcck, "YCCK"}}) {
    const Result<JpegInfo> info = info_of(testing::write_jpeg_bytes(16, 8, samples, JCS_CMYK, 4, stored, 90));
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    EXPECT_EQ(info->color, color);
    EXPECT_FALSE(info->gpu_decodable);
    EXPECT_FALSE(info->hardware_decodable);
    EXPECT_EQ(info->not_gpu_reason, reason);
  }
}

TEST(NvjpegProbe, RgbStoredFilesStayOnTheCpu) {
  const HostImage rgb = testing::pattern_rgb8(16, 8);
  std::vector<std::uint8_t> samples(rgb.size_bytes());
  std::copy_n(rgb.row(0), samples.size(), samples.begin());
  const Result<JpegInfo> info = info_of(testing::write_jpeg_bytes(16, 8, samples, JCS_RGB, 3, JCS_RGB, 90));
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->color, JpegColor::kRgb);
  EXPECT_FALSE(info->gpu_decodable);
}

TEST(NvjpegProbe, ReportsTheExifOrientation) {
  const std::string jpeg = shaped(20, 10, {});
  for (const bool little_endian : {true, false}) {
    const Result<JpegInfo> info = info_of(testing::with_exif_orientation(jpeg, 6, little_endian));
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    EXPECT_EQ(info->orientation, 6);
    // Stored size: decode_batch never turns the picture.
    EXPECT_EQ(info->width, 20);
    EXPECT_EQ(info->height, 10);
  }
}

TEST(NvjpegProbe, TruncatedAndGarbageFilesAreNamedErrors) {
  const std::string jpeg = shaped(64, 48, {});
  for (const std::size_t keep : {std::size_t{200}, std::size_t{3}}) {  // inside the header
    const Result<JpegInfo> info = info_of(jpeg.substr(0, keep), "cut.jpg");
    ASSERT_FALSE(info.is_ok()) << "kept " << keep << " of " << jpeg.size() << " bytes";
    EXPECT_EQ(info.status().code(), StatusCode::kCorruptData);
    EXPECT_EQ(info.status().message().rfind("cut.jpg: JPEG: ", 0), 0u) << info.status().message();
  }
  std::string garbage(500, '\0');
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 131 % 251);
  for (const std::string& bytes : {garbage, std::string("\xFF\xD8") + garbage, std::string()}) {
    const Result<JpegInfo> info = info_of(bytes, "noise.jpg");
    ASSERT_FALSE(info.is_ok());
    EXPECT_EQ(info.status().message().rfind("noise.jpg: JPEG: ", 0), 0u) << info.status().message();
  }
}

// Data that runs to the end with no EOI after it: a file whose writer left the EOI off, or one cut
// inside its data. The probe cannot tell them apart; the CPU route decodes the first and names the
// second (ImageBadInput.JpegWithoutItsEoiDecodesWhole).
TEST(NvjpegProbe, DataEndingWithoutAnEoiTakesTheCpuRoute) {
  const std::string jpeg = shaped(64, 48, {});
  ASSERT_EQ(jpeg.substr(jpeg.size() - 2), "\xFF\xD9");
  const std::size_t sos = jpeg.find("\xFF\xDA");
  ASSERT_NE(sos, std::string::npos);
  const std::size_t data =
      sos + 2 +
      ((static_cast<unsigned char>(jpeg[sos + 2]) << 8) | static_cast<unsigned char>(jpeg[sos + 3]));
  for (const std::size_t keep : {jpeg.size() - 2, (data + jpeg.size()) / 2}) {
    const Result<JpegInfo> info = info_of(jpeg.substr(0, keep));
    ASSERT_TRUE(info.is_ok()) << "kept " << keep << ": " << info.status().to_string();
    EXPECT_TRUE(info->ends_without_eoi);
    EXPECT_FALSE(info->gpu_decodable);
    EXPECT_FALSE(info->hardware_decodable);
    EXPECT_EQ(info->not_gpu_reason, "no EOI marker after the data");
  }
  const Result<JpegInfo> whole = info_of(jpeg);
  ASSERT_TRUE(whole.is_ok());
  EXPECT_FALSE(whole->ends_without_eoi);
}

// A sequential file whose one scan codes every component and which ends in EOI is not read past
// its scan header (the walk would look at every byte of the data): damage inside the data is left
// to the decoder. With bytes after the EOI, the walk reads through the data and finds it.
TEST(NvjpegProbe, AFileEndingInEoiIsNotReadPastItsOnlyScan) {
  std::string jpeg = shaped(64, 48, {});
  const std::size_t sos = jpeg.find("\xFF\xDA");
  ASSERT_NE(sos, std::string::npos);
  const std::size_t data =
      sos + 2 +
      ((static_cast<unsigned char>(jpeg[sos + 2]) << 8) | static_cast<unsigned char>(jpeg[sos + 3]));
  ASSERT_LT(data + 14, jpeg.size() - 2);
  jpeg.replace(data + 10, 4, "\xFF\x12\x7F\xFF");  // a marker that is none, its length past the end
  const Result<JpegInfo> info = info_of(jpeg);
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->scans, 1);
  EXPECT_TRUE(info->hardware_decodable) << info->not_hardware_reason;
  const Result<JpegInfo> trailing = info_of(jpeg + "tail", "tail.jpg");
  ASSERT_FALSE(trailing.is_ok());
  EXPECT_EQ(trailing.status().message().rfind("tail.jpg: JPEG: ", 0), 0u) << trailing.status().message();
}

// Where libnvjpeg is absent: available() is false and create() says so, whatever the backend.
TEST(NvjpegDecoderUnavailable, CreateSaysWhy) {
  if (NvjpegDecoder::available()) GTEST_SKIP() << "libnvjpeg loads here: the GPU tests cover it";
  for (const NvjpegBackend backend : {NvjpegBackend::kAuto, NvjpegBackend::kHardware, NvjpegBackend::kGpu}) {
    const Result<std::unique_ptr<NvjpegDecoder>> decoder = NvjpegDecoder::create(backend);
    ASSERT_FALSE(decoder.is_ok());
    EXPECT_EQ(decoder.status().code(), StatusCode::kUnsupported);
    EXPECT_EQ(decoder.status().message().rfind("nvJPEG unavailable: ", 0), 0u) << decoder.status().message();
  }
}

// The encoder likewise; a quality outside libjpeg's scale is refused wherever it runs.
TEST(NvjpegEncoderUnavailable, CreateSaysWhyAndRefusesABadQuality) {
  for (const int quality : {0, 101, -5}) {
    const Result<std::unique_ptr<NvjpegEncoder>> encoder = NvjpegEncoder::create(quality);
    ASSERT_FALSE(encoder.is_ok());
    EXPECT_EQ(encoder.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(encoder.status().message().find("quality " + std::to_string(quality)), std::string::npos);
  }
  if (NvjpegEncoder::available()) GTEST_SKIP() << "libnvjpeg's encoder loads here: the GPU tests cover it";
  const Result<std::unique_ptr<NvjpegEncoder>> encoder = NvjpegEncoder::create(90);
  ASSERT_FALSE(encoder.is_ok());
  EXPECT_EQ(encoder.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(encoder.status().message().rfind("nvJPEG", 0), 0u) << encoder.status().message();
}

}  // namespace
}  // namespace fovea::io
