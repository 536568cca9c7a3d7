#include "io/image_test_files.h"

#include <gtest/gtest.h>
#include <png.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/hash.h"

extern "C" {
#include <jpeglib.h>
}

namespace fovea::io::testing {
namespace {

void append_png(png_structp png, png_bytep data, png_size_t count) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), count);
}

// Test files are valid by construction; a libpng or libjpeg error here is a bug in the test.
[[noreturn]] void fail_png(png_structp, png_const_charp message) {
  std::fprintf(stderr, "test PNG writer: %s\n", message);
  std::abort();
}

}  // namespace

HostImage pattern_rgb8(int width, int height) {
  Result<HostImage> image = HostImage::allocate(PixelFormat::kRGB8, width, height);
  EXPECT_TRUE(image.is_ok());
  for (int y = 0; y < height; ++y) {
    std::uint8_t* row = image->row(y);
    for (int x = 0; x < width; ++x) {
      const std::uint32_t noise = murmur_finalize(static_cast<std::uint32_t>(y * width + x)) % 8;
      row[3 * x + 0] = static_cast<std::uint8_t>(x * 200 / width + noise);
      row[3 * x + 1] = static_cast<std::uint8_t>(y * 200 / height + noise);
      row[3 * x + 2] = static_cast<std::uint8_t>(128 + (x - y) / 4 + noise);
    }
  }
  return std::move(image).value();
}

std::string write_png_bytes(const RawPng& raw) {
  std::string out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, fail_png, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, &out, append_png, nullptr);
  png_set_IHDR(png, info, raw.width, raw.height, raw.bit_depth, raw.color_type,
               raw.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  std::vector<png_color> palette;
  for (std::size_t i = 0; i + 2 < raw.palette_rgb.size(); i += 3) {
    palette.push_back({raw.palette_rgb[i], raw.palette_rgb[i + 1], raw.palette_rgb[i + 2]});
  }
  if (!palette.empty()) png_set_PLTE(png, info, palette.data(), static_cast<int>(palette.size()));
  if (!raw.trns.empty()) {
    if (raw.color_type == PNG_COLOR_TYPE_PALETTE) {
      png_set_tRNS(png, info, raw.trns.data(), static_cast<int>(raw.trns.size()), nullptr);
    } else {
      png_color_16 key{};
      key.gray = static_cast<png_uint_16>(raw.trns[0]);
      png_set_tRNS(png, info, nullptr, 1, &key);
    }
  }
  png_write_info(png, info);
  const std::size_t row_bytes = png_get_rowbytes(png, info);
  std::vector<png_bytep> rows(raw.height);
  for (int y = 0; y < raw.height; ++y) rows[y] = const_cast<png_bytep>(raw.samples.data() + y * row_bytes);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

std::string write_jpeg_bytes(int width, int height, const std::vector<std::uint8_t>& samples, int in_space,
                             int components, int stored_space, int quality, const JpegShape* shape) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr errors{};
  cinfo.err = jpeg_std_error(&errors);  // exits on error: the test's files are valid
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = components;
  cinfo.in_color_space = static_cast<J_COLOR_SPACE>(in_space);
  jpeg_set_defaults(&cinfo);
  jpeg_set_colorspace(&cinfo, static_cast<J_COLOR_SPACE>(stored_space));
  jpeg_set_quality(&cinfo, shape != nullptr ? shape->quality : quality, TRUE);
  if (shape != nullptr) {
    cinfo.comp_info[0].h_samp_factor = shape->luma_h;
    cinfo.comp_info[0].v_samp_factor = shape->luma_v;
    for (int c = 1; c < cinfo.num_components; ++c) {
      cinfo.comp_info[c].h_samp_factor = 1;
      cinfo.comp_info[c].v_samp_factor = 1;
    }
    if (shape->progressive) jpeg_simple_progression(&cinfo);
  }
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(samples.data() + cinfo.next_scanline * width * components);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string out(reinterpret_cast<const char*>(buffer), size);
  std::free(buffer);
  return out;
}

std::string encode_shaped_jpeg(const HostImage& rgb, const JpegShape& shape) {
  const ImageView& view = rgb.view();
  std::vector<std::uint8_t> samples;
  for (int y = 0; y < view.height; ++y)
    samples.insert(samples.end(), rgb.row(y), rgb.row(y) + view.width * 3);
  return write_jpeg_bytes(view.width, view.height, samples, JCS_RGB, 3, JCS_YCbCr, shape.quality, &shape);
}

std::string with_exif_orientation(const std::string& jpeg, int orientation, bool little_endian) {
  auto u16 = [little_endian](int v) {
    const char hi = static_cast<char>(v >> 8 & 0xFF);
    const char lo = static_cast<char>(v & 0xFF);
    return little_endian ? std::string{lo, hi} : std::string{hi, lo};
  };
  auto u32 = [&](int v) {
    return little_endian ? u16(v & 0xFFFF) + u16(v >> 16) : u16(v >> 16) + u16(v & 0xFFFF);
  };
  // TIFF header, IFD0 at offset 8 with one entry: tag 0x0112 (Orientation), type 3 (SHORT),
  // count 1, the value in the first two bytes of the value field; no next IFD.
  std::string tiff = (little_endian ? std::string("II") : std::string("MM")) + u16(42) + u32(8);
  tiff += u16(1) + u16(0x0112) + u16(3) + u32(1) + u16(orientation) + u16(0) + u32(0);
  const std::string payload = std::string("Exif\0\0", 6) + tiff;
  const int length = static_cast<int>(payload.size()) + 2;  // the length field counts itself
  std::string app1 =
      std::string("\xFF\xE1") + static_cast<char>(length >> 8) + static_cast<char>(length & 0xFF);
  return jpeg.substr(0, 2) + app1 + payload + jpeg.substr(2);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::vector<std::uint8_t> to_bytes(const std::string& bytes) {
  return {bytes.begin(), bytes.end()};
}

}  // namespace fovea::io::testing
