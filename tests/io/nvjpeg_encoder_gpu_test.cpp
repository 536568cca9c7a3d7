// nvJPEG's encoder on the GPU (label gpu): each file it writes is a baseline 4:2:0 JPEG of the
// picture's size that libjpeg-turbo decodes, and it is as faithful to the picture as libjpeg-turbo's
// own file at the same quality. Odd sizes, a pitched picture, a batch of mixed sizes, and the
// pictures it refuses. Without a GPU or without libnvjpeg's encoder every test reports itself as
// skipped.
//
// Tolerance (kPsnrMarginDb): both encoders quantize with the same Annex K tables scaled by
// libjpeg's quality rule; they differ in the rounding of the forward DCT and of the RGB to YCbCr
// conversion, and in the chroma downsampling filter, which moves the error by a fraction of a dB at
// these qualities. A wrong channel order, pitch, size or quality scale costs tens of dB.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/cuda_raii.h"
#include "core/gpu.h"
#include "io/image_codec.h"
#include "io/image_test_files.h"
#include "io/nvjpeg_decoder.h"
#include "io/nvjpeg_encoder.h"

namespace fovea::io {
namespace {

constexpr double kPsnrMarginDb = 1.0;

// Peak signal-to-noise ratio of `got` against `want` (same size, rgb8), in dB.
double psnr(const ImageView& want, const ImageView& got) {
  double squared = 0;
  for (int y = 0; y < want.height; ++y) {
    const std::uint8_t* a = want.row(0, y);
    const std::uint8_t* b = got.row(0, y);
    for (int i = 0; i < want.width * 3; ++i) {
      const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
      squared += d * d;
    }
  }
  const double mse = squared / (static_cast<double>(want.width) * want.height * 3);
  return mse == 0 ? 99.0 : 10.0 * std::log10(255.0 * 255.0 / mse);
}

// A picture in device memory, rows `pitch` bytes apart (at least width * 3).
struct DevicePicture {
  DeviceMemory memory;
  ImageView view;
};

DevicePicture upload(const HostImage& picture, std::size_t pitch) {
  const ImageView& host = picture.view();
  Result<DeviceMemory> memory = DeviceMemory::allocate(pitch * host.height);
  EXPECT_TRUE(memory.is_ok()) << memory.status().to_string();
  DevicePicture device{std::move(memory).value(), {}};
  device.view.format = PixelFormat::kRGB8;
  device.view.width = host.width;
  device.view.height = host.height;
  device.view.memory = MemoryKind::kDevice;
  device.view.num_planes = 1;
  device.view.planes[0] = {device.memory.get(), pitch};
  EXPECT_EQ(cudaMemcpy2D(device.memory.get(), pitch, host.planes[0].data, host.planes[0].pitch,
                         static_cast<std::size_t>(host.width) * 3, host.height, cudaMemcpyHostToDevice),
            cudaSuccess);
  return device;
}

DecodedImage decode(const std::string& file, const std::string& name) {
  Result<DecodedImage> decoded = decode_image(testing::to_bytes(file), name, {});
  EXPECT_TRUE(decoded.is_ok()) << decoded.status().to_string();
  return std::move(decoded).value();
}

class NvjpegEncoderGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
    if (!NvjpegEncoder::available()) GTEST_SKIP() << NvjpegEncoder::create(90).status().message();
    Result<CudaStream> stream = CudaStream::create();
    ASSERT_TRUE(stream.is_ok()) << stream.status().to_string();
    stream_ = std::move(stream).value();
  }

  std::unique_ptr<NvjpegEncoder> encoder(int quality) {
    Result<std::unique_ptr<NvjpegEncoder>> created = NvjpegEncoder::create(quality);
    EXPECT_TRUE(created.is_ok()) << created.status().to_string();
    return created.is_ok() ? std::move(created).value() : nullptr;
  }

  // Encodes `picture` on the GPU and checks the file against libjpeg-turbo's at `quality`.
  void expect_like_libjpeg(NvjpegEncoder& gpu, int quality, const HostImage& picture, std::size_t pitch) {
    const ImageView& host = picture.view();
    const std::string name = std::to_string(host.width) + "x" + std::to_string(host.height) + " q" +
                             std::to_string(quality) + " pitch " + std::to_string(pitch);
    const DevicePicture device = upload(picture, pitch);
    Result<std::vector<std::string>> files = gpu.encode_batch(stream_.get(), {&device.view, 1});
    ASSERT_TRUE(files.is_ok()) << name << ": " << files.status().to_string();
    ASSERT_EQ(files->size(), 1u);
    const Result<JpegInfo> info = read_jpeg_info(testing::to_bytes(files->front()), name);
    ASSERT_TRUE(info.is_ok()) << name << ": " << info.status().to_string();
    EXPECT_EQ(info->width, host.width) << name;
    EXPECT_EQ(info->height, host.height) << name;
    EXPECT_EQ(info->coding, JpegCoding::kBaseline) << name;
    EXPECT_EQ(info->sampling, JpegSampling::k420) << name;
    const DecodedImage from_gpu = decode(files->front(), name);

    ImageEncodeOptions options;
    options.format = ImageFileFormat::kJpeg;
    options.jpeg_quality = quality;
    const Result<std::string> cpu_file = encode_image(host, options);
    ASSERT_TRUE(cpu_file.is_ok()) << cpu_file.status().to_string();
    const DecodedImage from_cpu = decode(*cpu_file, name + " (libjpeg-turbo)");
    const double gpu_psnr = psnr(host, from_gpu.image.view());
    const double cpu_psnr = psnr(host, from_cpu.image.view());
    EXPECT_GE(gpu_psnr, cpu_psnr - kPsnrMarginDb)
        << name << ": nvJPEG " << gpu_psnr << " dB, libjpeg-turbo " << cpu_psnr << " dB";
  }

  CudaStream stream_;
};

TEST_F(NvjpegEncoderGpu, FilesAreAsFaithfulAsLibjpegTurbosAtOddSizes) {
  for (const int quality : {75, 95}) {
    std::unique_ptr<NvjpegEncoder> gpu = encoder(quality);
    ASSERT_NE(gpu, nullptr);
    for (const auto& [w, h] :
         {std::pair{13, 7}, std::pair{127, 61}, std::pair{640, 479}, std::pair{1920, 1080}}) {
      expect_like_libjpeg(*gpu, quality, testing::pattern_rgb8(w, h), static_cast<std::size_t>(w) * 3);
    }
  }
}

TEST_F(NvjpegEncoderGpu, PitchedPicturesEncodeTheirPixelsOnly) {
  std::unique_ptr<NvjpegEncoder> gpu = encoder(90);
  ASSERT_NE(gpu, nullptr);
  expect_like_libjpeg(*gpu, 90, testing::pattern_rgb8(301, 97), 1024);
}

TEST_F(NvjpegEncoderGpu, ABatchOfMixedSizesGivesEachItsOwnFile) {
  std::unique_ptr<NvjpegEncoder> gpu = encoder(90);
  ASSERT_NE(gpu, nullptr);
  const std::vector<std::pair<int, int>> sizes = {{256, 256}, {33, 17}, {512, 256}, {256, 256}, {7, 9}};
  std::vector<HostImage> pictures;
  std::vector<DevicePicture> device;
  std::vector<ImageView> views;
  for (const auto& [w, h] : sizes) {
    pictures.push_back(testing::pattern_rgb8(w, h));
    device.push_back(upload(pictures.back(), static_cast<std::size_t>(w) * 3));
    views.push_back(device.back().view);
  }
  // Twice: the second batch reuses the encoder states of the first.
  for (int round = 0; round < 2; ++round) {
    Result<std::vector<std::string>> files = gpu->encode_batch(stream_.get(), views);
    ASSERT_TRUE(files.is_ok()) << files.status().to_string();
    ASSERT_EQ(files->size(), sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const DecodedImage decoded = decode((*files)[i], "batch image " + std::to_string(i));
      EXPECT_EQ(decoded.image.view().width, sizes[i].first);
      EXPECT_EQ(decoded.image.view().height, sizes[i].second);
      EXPECT_GT(psnr(pictures[i].view(), decoded.image.view()), 30.0) << "image " << i;
    }
  }
  Result<std::vector<std::string>> none = gpu->encode_batch(stream_.get(), {});
  ASSERT_TRUE(none.is_ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(NvjpegEncoderGpu, HostAndNonRgbPicturesAreRefusedByIndex) {
  std::unique_ptr<NvjpegEncoder> gpu = encoder(90);
  ASSERT_NE(gpu, nullptr);
  const HostImage picture = testing::pattern_rgb8(16, 16);
  const DevicePicture device = upload(picture, 48);
  ImageView gray = device.view;
  gray.format = PixelFormat::kGRAY8;
  for (const ImageView& bad : {picture.view(), gray}) {
    const ImageView batch[] = {device.view, bad};
    const Result<std::vector<std::string>> files = gpu->encode_batch(stream_.get(), batch);
    ASSERT_FALSE(files.is_ok());
    EXPECT_EQ(files.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(files.status().message().find("image 1"), std::string::npos) << files.status().message();
  }
}

}  // namespace
}  // namespace fovea::io
