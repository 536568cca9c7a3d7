// Bad image files: each gets an error naming the file and the reason, never a crash, an exit()
// from inside libjpeg or libpng, a grey picture passed off as good, or an out-of-memory abort.
#include <gtest/gtest.h>
#include <webp/encode.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "io/image_codec.h"
#include "io/image_test_files.h"
#include "support/test_media.h"

namespace fovea::io {
namespace {

void expect_error(const Result<DecodedImage>& result, StatusCode code, const std::string& path,
                  const std::string& reason) {
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), code) << result.status().to_string();
  EXPECT_NE(result.status().message().find(path), std::string::npos) << result.status().to_string();
  EXPECT_NE(result.status().message().find(reason), std::string::npos) << result.status().to_string();
}

std::string file_with(const std::string& name, const std::string& bytes) {
  const std::string path = fovea::testing::test_temp_dir() + "/" + name;
  testing::write_file(path, bytes);
  return path;
}

std::string good_jpeg(int w = 64, int h = 64) {
  HostImage image = testing::pattern_rgb8(w, h);
  Result<std::string> bytes = encode_image(image.view(), {ImageFileFormat::kJpeg, 90, 6});
  EXPECT_TRUE(bytes.is_ok());
  return *bytes;
}

std::string good_png(int w = 64, int h = 64) {
  HostImage image = testing::pattern_rgb8(w, h);
  Result<std::string> bytes = encode_image(image.view(), {ImageFileFormat::kPng, 90, 6});
  EXPECT_TRUE(bytes.is_ok());
  return *bytes;
}

// The offset of the first byte after the JPEG's SOS segment: where the entropy-coded data starts.
std::size_t scan_data_offset(const std::string& jpeg) {
  const std::size_t sos = jpeg.find("\xFF\xDA");
  const std::size_t length =
      static_cast<unsigned char>(jpeg[sos + 2]) << 8 | static_cast<unsigned char>(jpeg[sos + 3]);
  return sos + 2 + length;
}

TEST(ImageBadInput, MissingFile) {
  const std::string path = fovea::testing::test_temp_dir() + "/missing.jpg";
  expect_error(decode_image_file(path), StatusCode::kNotFound, path, "No such file");
}

TEST(ImageBadInput, FolderIsNoImage) {
  const std::string path = fovea::testing::test_temp_dir();
  expect_error(decode_image_file(path), StatusCode::kInvalidArgument, path, "not a regular file");
}

TEST(ImageBadInput, ZeroByteFile) {
  const std::string path = file_with("empty.png", "");
  expect_error(decode_image_file(path), StatusCode::kCorruptData, path, "empty file");
}

TEST(ImageBadInput, NotAnImage) {
  const std::string path = file_with("notes.jpg", "these are not pixels\n");
  expect_error(decode_image_file(path), StatusCode::kCorruptData, path, "not an image");
}

TEST(ImageBadInput, TruncatedJpeg) {
  const std::string jpeg = good_jpeg();
  for (double keep : {0.1, 0.5, 0.9}) {
    const std::string path = file_with(
        "truncated.jpg", jpeg.substr(0, static_cast<std::size_t>(static_cast<double>(jpeg.size()) * keep)));
    expect_error(decode_image_file(path), StatusCode::kCorruptData, path, "JPEG");
  }
  const std::string header_only = file_with("header-only.jpg", jpeg.substr(0, 20));
  expect_error(decode_image_file(header_only), StatusCode::kCorruptData, header_only, "JPEG");
}

// A JPEG whose writer left the EOI marker off decodes whole, to the same pixels (as PIL and OpenCV
// decode it); cut inside its data it is still named damaged (TruncatedJpeg).
TEST(ImageBadInput, JpegWithoutItsEoiDecodesWhole) {
  const std::string jpeg = good_jpeg(67, 45);
  ASSERT_EQ(jpeg.substr(jpeg.size() - 2), "\xFF\xD9");
  const Result<DecodedImage> whole = decode_image_file(file_with("whole.jpg", jpeg));
  const std::string path = file_with("no-eoi.jpg", jpeg.substr(0, jpeg.size() - 2));
  const Result<DecodedImage> without = decode_image_file(path);
  ASSERT_TRUE(whole.is_ok()) << whole.status().to_string();
  ASSERT_TRUE(without.is_ok()) << without.status().to_string();
  const ImageView& a = whole->image.view();
  const ImageView& b = without->image.view();
  ASSERT_EQ(a.width, b.width);
  ASSERT_EQ(a.height, b.height);
  const auto same_pixels = [&](const ImageView& c) {
    for (int y = 0; y < a.height; ++y) {
      if (std::memcmp(a.row(0, y), c.row(0, y), static_cast<std::size_t>(a.width) * 3) != 0) return false;
    }
    return true;
  };
  EXPECT_TRUE(same_pixels(b));
  // Cut anywhere inside the data, the file is named damaged, or (its last bytes only padding) decodes
  // to the same picture: never to another one.
  int damaged = 0;
  for (std::size_t keep = scan_data_offset(jpeg); keep < jpeg.size() - 2; ++keep) {
    const std::vector<std::uint8_t> bytes = testing::to_bytes(jpeg.substr(0, keep));
    const Result<DecodedImage> cut = decode_image(bytes, "cut.jpg", {});
    if (!cut.is_ok()) {
      EXPECT_EQ(cut.status().code(), StatusCode::kCorruptData) << cut.status().to_string();
      ++damaged;
    } else {
      EXPECT_TRUE(same_pixels(cut->image.view())) << "kept " << keep << " of " << jpeg.size();
    }
  }
  EXPECT_GT(damaged, 0);
  // A progressive file cannot tell a missing EOI from missing scans: still damage.
  const std::string progressive =
      testing::encode_shaped_jpeg(testing::pattern_rgb8(67, 45), {.progressive = true});
  const std::string cut_progressive =
      file_with("progressive-no-eoi.jpg", progressive.substr(0, progressive.size() - 2));
  expect_error(decode_image_file(cut_progressive), StatusCode::kCorruptData, cut_progressive,
               "Premature end of JPEG file");
}

TEST(ImageBadInput, CorruptHuffmanData) {
  // 0xFF 0xFF ... inside the scan: fill bytes where entropy-coded data must be, which libjpeg
  // reports as corrupt data (a premature marker, a bad Huffman code or extraneous bytes).
  std::string jpeg = good_jpeg();
  const std::size_t start = scan_data_offset(jpeg) + 40;
  for (std::size_t i = start; i < start + 64; ++i) jpeg[i] = static_cast<char>(0xFF);
  jpeg[start + 64] = static_cast<char>(0x17);  // no marker has this code
  const std::string path = file_with("corrupt-huffman.jpg", jpeg);
  expect_error(decode_image_file(path), StatusCode::kCorruptData, path, "Corrupt JPEG data");
}

TEST(ImageBadInput, TruncatedPng) {
  const std::string png = good_png();
  for (double keep : {0.05, 0.5, 0.95}) {
    const std::string path = file_with(
        "truncated.png", png.substr(0, static_cast<std::size_t>(static_cast<double>(png.size()) * keep)));
    expect_error(decode_image_file(path), StatusCode::kCorruptData, path, "PNG");
  }
}

TEST(ImageBadInput, BitFlippedPngFailsItsCrc) {
  std::string png = good_png();
  png[png.size() / 2] = static_cast<char>(png[png.size() / 2] ^ 0x10);
  const std::string path = file_with("flipped.png", png);
  expect_error(decode_image_file(path), StatusCode::kCorruptData, path, "PNG");
}

TEST(ImageBadInput, TruncatedBmpAndUnsupportedBmp) {
  std::string bmp = "BM";
  bmp.resize(54, '\0');
  bmp[10] = 54;   // pixel data offset
  bmp[14] = 40;   // BITMAPINFOHEADER
  bmp[18] = 100;  // width 100
  bmp[22] = 100;  // height 100
  bmp[26] = 1;    // planes
  bmp[28] = 24;   // bits per pixel
  const std::string truncated = file_with("truncated.bmp", bmp + std::string(1000, '\x7F'));
  expect_error(decode_image_file(truncated), StatusCode::kCorruptData, truncated, "truncated");
  bmp[28] = 8;  // a palette bitmap
  const std::string palette = file_with("palette.bmp", bmp + std::string(40000, '\0'));
  expect_error(decode_image_file(palette), StatusCode::kUnsupported, palette, "8-bit");
}

TEST(ImageBadInput, TruncatedWebp) {
  std::vector<std::uint8_t> rgb(32 * 32 * 3, 90);
  std::uint8_t* out = nullptr;
  const std::size_t size = WebPEncodeRGB(rgb.data(), 32, 32, 32 * 3, 80, &out);
  ASSERT_GT(size, 0u);
  const std::string webp(reinterpret_cast<const char*>(out), size / 2);
  WebPFree(out);
  const std::string path = file_with("truncated.webp", webp);
  expect_error(decode_image_file(path), StatusCode::kCorruptData, path, "WebP");
}

// The size check comes from the header, before any pixel memory: a 20000 x 20000 image (1.2 GB
// as RGB) is refused by name, whatever the file's format.
TEST(ImageBadInput, HugeImagesAreRefusedBeforeAllocating) {
  // JPEG: a small file whose SOF0 frame header claims 20000 x 20000.
  std::string jpeg = good_jpeg(16, 16);
  const std::size_t sof = jpeg.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  for (std::size_t at : {sof + 5, sof + 7}) {  // height, then width, big-endian
    jpeg[at] = static_cast<char>(20000 >> 8);
    jpeg[at + 1] = static_cast<char>(20000 & 0xFF);
  }
  const std::string jpeg_path = file_with("huge.jpg", jpeg);
  expect_error(decode_image_file(jpeg_path), StatusCode::kResourceExhausted, jpeg_path, "20000x20000");

  // PNG: IHDR rewritten to 20000 x 20000 (CRC recomputed, so libpng reads the header happily).
  std::string png = good_png(4, 4);
  auto put32 = [&png](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) png[at + i] = static_cast<char>(v >> (24 - 8 * i) & 0xFF);
  };
  put32(16, 20000);  // IHDR data starts at 16: width, then height
  put32(20, 20000);
  std::uint32_t crc = 0xFFFFFFFFu;  // CRC-32 over the chunk type and data (PNG spec 5.5)
  for (std::size_t i = 12; i < 29; ++i) {
    crc ^= static_cast<unsigned char>(png[i]);
    for (int bit = 0; bit < 8; ++bit) crc = crc & 1 ? 0xEDB88320u ^ (crc >> 1) : crc >> 1;
  }
  put32(29, crc ^ 0xFFFFFFFFu);
  const std::string png_path = file_with("huge.png", png);
  expect_error(decode_image_file(png_path), StatusCode::kResourceExhausted, png_path, "20000x20000");

  // BMP: the header alone claims it.
  std::string bmp = "BM";
  bmp.resize(54, '\0');
  bmp[10] = 54;
  bmp[14] = 40;
  bmp[18] = static_cast<char>(20000 & 0xFF);
  bmp[19] = static_cast<char>(20000 >> 8);
  bmp[22] = static_cast<char>(20000 & 0xFF);
  bmp[23] = static_cast<char>(20000 >> 8);
  bmp[28] = 24;
  const std::string bmp_path = file_with("huge.bmp", bmp);
  expect_error(decode_image_file(bmp_path), StatusCode::kResourceExhausted, bmp_path, "20000x20000");
}

TEST(ImageBadInput, LimitsAreTheCallers) {
  ImageDecodeOptions options;
  options.limits.max_side = 32;
  const std::string path = file_with("over-limit.png", good_png(64, 8));
  expect_error(decode_image_file(path, options), StatusCode::kResourceExhausted, path, "64x8");
  options.limits = {};
  options.limits.max_pixels = 100;
  expect_error(decode_image_file(path, options), StatusCode::kResourceExhausted, path, "512 pixels");
  options.limits = {};
  options.limits.max_file_bytes = 10;
  expect_error(decode_image_file(path, options), StatusCode::kResourceExhausted, path, "bytes");
}

}  // namespace
}  // namespace fovea::io
