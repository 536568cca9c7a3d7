// nvJPEG on the GPU (label gpu) against libjpeg-turbo (io::decode_image, JDCT_ISLOW), per channel,
// on files libjpeg wrote: odd sizes, 4:4:4, 4:2:2, 4:2:0 at quality 75 and 95, gray, progressive,
// and a batch mixing every route. Without a GPU or without libnvjpeg every test reports itself as
// skipped.
//
// Tolerances (kJpegGpuTolerance): the JPEG standard leaves the IDCT's rounding to the decoder
// (ITU-T T.81 A.3.3 only bounds its accuracy), so unsubsampled files may differ by a level or two.
// Subsampled files differ more: nvJPEG replicates chroma (its NVJPEG_FLAGS_UPSAMPLING_WITH_
// INTERPOLATION is off by default), libjpeg-turbo interpolates ("fancy" upsampling), so chroma
// edges move by up to half a chroma sample. The test pattern is ramps plus 0..7 of texture, so
// the bounds below hold with room; a broken decode (a wrong channel order, pitch or size) misses
// them by tens.
#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "core/gpu.h"
#include "io/image_test_files.h"
#include "io/nvjpeg_decoder.h"

extern "C" {
#include <jpeglib.h>
}

namespace fovea::io {
namespace {

using testing::encode_shaped_jpeg;
using testing::JpegShape;
using testing::to_bytes;

struct Tolerance {
  int max_abs;
  double mean_abs;
};
// nvJPEG replicates subsampled chroma where libjpeg-turbo interpolates it by default (its "fancy"
// upsampling): the reference decodes the same way (ImageDecodeOptions::fancy_upsampling off), so
// what is left is the IDCT's and the color conversion's rounding, for every sampling. (Against
// the interpolating default, the H100 measured up to 103 levels at this pattern's sharp color
// edges, mean 0.15 on 640x479, 6.3 on a 13x7 picture that is nearly all edges.)
constexpr Tolerance kFullChromaTolerance{2, 0.5};
// Subsampled: one level more (H100: 3 at most), the color conversion of replicated chroma rounding
// apart from libjpeg-turbo's merged upsampler.
constexpr Tolerance kSubsampledTolerance{3, 0.5};

struct Case {
  std::string name;
  std::string jpeg;
  Tolerance tolerance;
};

std::string gray_jpeg(int width, int height) {
  std::vector<std::uint8_t> samples(static_cast<std::size_t>(width) * height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x)
      samples[static_cast<std::size_t>(y) * width + x] = static_cast<std::uint8_t>(x * 3 + y);
  }
  return testing::write_jpeg_bytes(width, height, samples, JCS_GRAYSCALE, 1, JCS_GRAYSCALE, 90);
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const auto& [w, h] : {std::pair{13, 7}, std::pair{127, 61}, std::pair{640, 479}}) {
    const HostImage rgb = testing::pattern_rgb8(w, h);
    const std::string size = std::to_string(w) + "x" + std::to_string(h);
    all.push_back({size + "-420-q75.jpg", encode_shaped_jpeg(rgb, {2, 2, false, 75}), kSubsampledTolerance});
    all.push_back({size + "-420-q95.jpg", encode_shaped_jpeg(rgb, {2, 2, false, 95}), kSubsampledTolerance});
    all.push_back({size + "-422-q95.jpg", encode_shaped_jpeg(rgb, {2, 1, false, 95}), kSubsampledTolerance});
    all.push_back({size + "-444-q95.jpg", encode_shaped_jpeg(rgb, {1, 1, false, 95}), kFullChromaTolerance});
    all.push_back(
        {size + "-420-progressive.jpg", encode_shaped_jpeg(rgb, {2, 2, true, 90}), kSubsampledTolerance});
    all.push_back({size + "-gray.jpg", gray_jpeg(w, h), kFullChromaTolerance});
  }
  return all;
}

// One rgb8 device image per file, tightly pitched, and the way back to the host.
class DeviceImages {
 public:
  Status allocate(const std::vector<JpegInfo>& infos) {
    for (const JpegInfo& info : infos) {
      const std::size_t pitch = static_cast<std::size_t>(info.width) * 3;
      FOVEA_ASSIGN_OR_RETURN(DeviceMemory memory, DeviceMemory::allocate(pitch * info.height));
      ImageView view;
      view.format = PixelFormat::kRGB8;
      view.width = info.width;
      view.height = info.height;
      view.memory = MemoryKind::kDevice;
      view.num_planes = 1;
      view.planes[0] = {memory.get(), pitch};
      views_.push_back(view);
      memory_.push_back(std::move(memory));
    }
    return Status::ok();
  }
  const std::vector<ImageView>& views() const { return views_; }
  std::vector<std::uint8_t> download(std::size_t i) const {
    const ImageView& view = views_[i];
    std::vector<std::uint8_t> host(view.planes[0].pitch * view.height);
    EXPECT_EQ(cudaMemcpy(host.data(), view.planes[0].data, host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

 private:
  std::vector<DeviceMemory> memory_;
  std::vector<ImageView> views_;
};

void expect_close_to_libjpeg(const Case& c, const std::vector<std::uint8_t>& gpu) {
  ImageDecodeOptions options;
  options.apply_orientation = false;
  options.fancy_upsampling = false;
  const Result<DecodedImage> cpu = decode_image(to_bytes(c.jpeg), c.name, options);
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  const ImageView& reference = cpu->image.view();
  int max_abs = 0;
  double sum_abs = 0;
  for (int y = 0; y < reference.height; ++y) {
    const std::uint8_t* want = reference.row(0, y);
    const std::uint8_t* got = gpu.data() + static_cast<std::size_t>(y) * reference.width * 3;
    for (int i = 0; i < reference.width * 3; ++i) {
      const int diff = std::abs(int{want[i]} - int{got[i]});
      max_abs = std::max(max_abs, diff);
      sum_abs += diff;
    }
  }
  const double mean_abs = sum_abs / (static_cast<double>(reference.width) * reference.height * 3);
  EXPECT_LE(max_abs, c.tolerance.max_abs) << c.name << " (mean " << mean_abs << ")";
  EXPECT_LE(mean_abs, c.tolerance.mean_abs) << c.name << " (max " << max_abs << ")";
}

enum class Probes { kWalkedAgain, kPassed };

// Decodes `batch` with `decoder` in one call on `stream` and waits; the images land in `images`.
// kPassed hands the decoder the probes taken here (the overload that does not walk the markers
// again).
Status decode_with(NvjpegDecoder& decoder, cudaStream_t stream, const std::vector<Case>& batch,
                   DeviceImages& images, Probes probes) {
  std::vector<std::vector<std::uint8_t>> bytes;
  std::vector<JpegInfo> infos;
  for (const Case& c : batch) {
    bytes.push_back(to_bytes(c.jpeg));
    FOVEA_ASSIGN_OR_RETURN(JpegInfo info, decoder.probe(bytes.back(), c.name));
    infos.push_back(info);
  }
  images = DeviceImages();
  FOVEA_TRY(images.allocate(infos));
  std::vector<std::span<const std::uint8_t>> spans(bytes.begin(), bytes.end());
  std::vector<std::string_view> names;
  for (const Case& c : batch) names.push_back(c.name);
  FOVEA_TRY(probes == Probes::kPassed ? decoder.decode_batch(stream, spans, names, images.views(), infos)
                                      : decoder.decode_batch(stream, spans, names, images.views()));
  FOVEA_CUDA_TRY(cudaStreamSynchronize(stream));
  return Status::ok();
}

class NvjpegGpu : public ::testing::TestWithParam<NvjpegBackend> {
 protected:
  void SetUp() override {
    if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
    if (!NvjpegDecoder::available()) GTEST_SKIP() << NvjpegDecoder::create(GetParam()).status().message();
    Result<std::unique_ptr<NvjpegDecoder>> decoder = NvjpegDecoder::create(GetParam());
    if (!decoder.is_ok() && GetParam() == NvjpegBackend::kHardware &&
        decoder.status().code() == StatusCode::kUnsupported) {
      GTEST_SKIP() << decoder.status().message();
    }
    ASSERT_TRUE(decoder.is_ok()) << decoder.status().to_string();
    decoder_ = std::move(decoder).value();
    Result<CudaStream> stream = CudaStream::create();
    ASSERT_TRUE(stream.is_ok()) << stream.status().to_string();
    stream_ = std::move(stream).value();
  }

  // Decodes `batch` in one call; the status, with the images in images_.
  Status decode(const std::vector<Case>& batch, Probes probes = Probes::kWalkedAgain) {
    return decode_with(*decoder_, stream_.get(), batch, images_, probes);
  }

  std::unique_ptr<NvjpegDecoder> decoder_;
  CudaStream stream_;
  DeviceImages images_;
};

TEST_P(NvjpegGpu, EachFileMatchesLibjpeg) {
  for (const Case& c : cases()) {
    ASSERT_TRUE(decode({c}).is_ok()) << c.name;
    expect_close_to_libjpeg(c, images_.download(0));
  }
}

// With the probes walked again by the decoder, and with the caller's passed in: each file takes
// the same route and gives the same pixels.
TEST_P(NvjpegGpu, OneBatchOfEveryRouteMatchesLibjpegAndIsCounted) {
  std::vector<Case> batch = cases();
  const std::vector<std::uint8_t> cmyk(31 * 9 * 4, 70);
  batch.push_back({"31x9-cmyk.jpg", testing::write_jpeg_bytes(31, 9, cmyk, JCS_CMYK, 4, JCS_CMYK, 90),
                   kFullChromaTolerance});
  std::int64_t decoded = 0;
  for (const Probes probes : {Probes::kWalkedAgain, Probes::kPassed}) {
    const Status status = decode(batch, probes);
    ASSERT_TRUE(status.is_ok()) << status.to_string();
    for (std::size_t i = 0; i < batch.size(); ++i) expect_close_to_libjpeg(batch[i], images_.download(i));
    decoded += static_cast<std::int64_t>(batch.size());
    const NvjpegStats stats = decoder_->stats();
    EXPECT_EQ(stats.hardware_images + stats.gpu_images + stats.cpu_images, decoded);
    // The CMYK file and the progressive ones, once per batch.
    EXPECT_EQ(stats.cpu_images, 4 * decoded / static_cast<std::int64_t>(batch.size()));
    if (decoder_->backend() == NvjpegBackend::kHardware) {
      EXPECT_GT(stats.hardware_images, 0);
    } else {
      EXPECT_EQ(stats.hardware_images, 0);
    }
  }
}

// As the image source's JPEG threads: a decoder per thread, batches whose size changes (so the
// hardware state is initialized again), all at once. A flow with three such threads hung inside
// nvJPEG (call 25); each thread's pixels must be its files'.
TEST_P(NvjpegGpu, DecodersOnSeveralThreadsEachGetTheirFilesPixels) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 8;
  const std::vector<Case> all = cases();
  const std::vector<Case> half(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(all.size() / 2));
  std::atomic<int> failed_threads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Result<std::unique_ptr<NvjpegDecoder>> decoder = NvjpegDecoder::create(GetParam());
      Result<CudaStream> stream = CudaStream::create();
      if (!decoder.is_ok() || !stream.is_ok()) {
        ++failed_threads;
        return;
      }
      DeviceImages images;
      for (int round = 0; round < kRounds; ++round) {
        const std::vector<Case>& batch = (round + t) % 2 == 0 ? all : half;
        const Status status = decode_with(**decoder, stream->get(), batch, images, Probes::kPassed);
        if (!status.is_ok()) {
          ADD_FAILURE() << "thread " << t << ", round " << round << ": " << status.to_string();
          ++failed_threads;
          return;
        }
        for (std::size_t i = 0; i < batch.size(); ++i) expect_close_to_libjpeg(batch[i], images.download(i));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failed_threads.load(), 0);
}

TEST_P(NvjpegGpu, ProbesThatDoNotMatchTheFilesAreRefused) {
  const std::vector<std::uint8_t> data = to_bytes(encode_shaped_jpeg(testing::pattern_rgb8(64, 48), {}));
  std::vector<std::span<const std::uint8_t>> spans{data, data};
  std::vector<std::string_view> names{"a.jpg", "b.jpg"};
  const ImageView none[2];
  Result<JpegInfo> info = decoder_->probe(data, "a.jpg");
  ASSERT_TRUE(info.is_ok());
  const std::vector<JpegInfo> one{*info};
  const Status status = decoder_->decode_batch(stream_.get(), spans, names, none, one);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("2 files, 2 names, 2 outputs, 1 infos"));
}

TEST_P(NvjpegGpu, TruncatedAndGarbageFilesFailNamingTheFile) {
  const std::string jpeg = encode_shaped_jpeg(testing::pattern_rgb8(64, 48), {});
  const std::string garbage = std::string("\xFF\xD8\xFF\xC0") + std::string(300, '\x5A');
  for (const auto& [name, bytes] : {std::pair{std::string("cut.jpg"), jpeg.substr(0, jpeg.size() / 2)},
                                    std::pair{std::string("noise.jpg"), garbage}}) {
    const std::vector<std::uint8_t> data = to_bytes(bytes);
    std::vector<std::span<const std::uint8_t>> spans{data};
    std::vector<std::string_view> names{name};
    const ImageView none;
    const Status status = decoder_->decode_batch(stream_.get(), spans, names, {&none, 1});
    ASSERT_FALSE(status.is_ok()) << name;
    EXPECT_NE(status.message().find(name), std::string::npos) << status.message();
  }
  // A good batch still decodes afterwards.
  EXPECT_TRUE(decode({{"after.jpg", jpeg, kSubsampledTolerance}}).is_ok());
}

INSTANTIATE_TEST_SUITE_P(Backends, NvjpegGpu,
                         ::testing::Values(NvjpegBackend::kHardware, NvjpegBackend::kGpu),
                         [](const auto& param) { return std::string(nvjpeg_backend_name(param.param)); });

}  // namespace
}  // namespace fovea::io
