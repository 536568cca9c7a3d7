#include <algorithm>
#include <memory>

#include <gtest/gtest.h>

#include "image/blur_composite.h"
#include "image/blur_test_util.h"
#include "image/image_test_util.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

struct Case {
  PixelFormat format;
  int width;
  int height;
};

// One operand on both sides: a pitched random host image and its device copy.
struct Operand {
  Operand(PixelFormat format, int width, int height, std::uint32_t seed, int extra_pitch)
      : host(format, width, height, 3, extra_pitch), device(format, width, height) {
    host.fill_random(seed);
  }
  HostImage host;
  DeviceImage device;
};

// A mask of random values with an opaque (255) band and a clear (0) one: in large images the
// bands' tiles take the kernel's copy path and its blend-free path, including partial tiles at the
// right and bottom edges; the rest blends.
void add_opaque_and_clear_bands(HostImage& mask) {
  const ImageView& v = mask.view();
  for (int y = 0; y < v.height; ++y) {
    std::uint8_t* row = v.row(0, y);
    if (y < v.height * 2 / 3) {
      std::fill(row + v.width / 5, row + v.width, 255);
    } else {
      std::fill(row, row + v.width * 3 / 5, 0);
      std::fill(row + v.width * 4 / 5, row + v.width, 0);
    }
  }
}

// Runs the fused op on a batch of random frames on both sides (pitched host images, odd images with
// an interior ROI at an odd x, so device rows start unaligned) and compares.
void expect_cuda_matches_cpu(const std::vector<Case>& cases, const BlurParams& params) {
  std::vector<std::unique_ptr<Operand>> frames, masks, outs;
  ImageBatch h_frame, h_mask, h_out, d_frame, d_mask, d_out;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto [format, w, h] = cases[i];
    const auto seed = static_cast<std::uint32_t>(50 + 3 * i);
    frames.push_back(std::make_unique<Operand>(format, w, h, seed, 7));
    masks.push_back(std::make_unique<Operand>(PixelFormat::kGRAY8, w, h, seed + 1, 3));
    outs.push_back(std::make_unique<Operand>(format, w, h, seed + 2, 5));
    add_opaque_and_clear_bands(masks.back()->host);
    for (Operand* op : {frames.back().get(), masks.back().get(), outs.back().get()})
      op->device.upload(op->host);
    const Roi roi = i % 2 == 1 ? Roi{1, 2, w - 4, h - 3} : Roi{};
    const std::pair<ImageBatch*, ImageBatch*> sides[] = {
        {&h_frame, &d_frame}, {&h_mask, &d_mask}, {&h_out, &d_out}};
    Operand* operands[] = {frames.back().get(), masks.back().get(), outs.back().get()};
    for (int s = 0; s < 3; ++s) {
      sides[s].first->images.push_back(operands[s]->host.view());
      sides[s].second->images.push_back(operands[s]->device.view());
      sides[s].first->rois.push_back(roi);
      sides[s].second->rois.push_back(roi);
    }
  }
  ASSERT_TRUE(run_blur_composite_cpu(h_frame, h_mask, h_out, params).is_ok());
  const Status status = run_blur_composite_cuda(nullptr, d_frame, d_mask, d_out, params);
  ASSERT_TRUE(status.is_ok()) << status.to_string();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    HostImage got = outs[i]->device.download(1);
    EXPECT_LE(max_abs_difference(got.view(), outs[i]->host.view()), kU8HalfPrecisionTolerance)
        << pixel_format_name(cases[i].format) << " image " << i << " " << cases[i].width << "x"
        << cases[i].height << " kernel " << params.kernel_width << "x" << params.kernel_height;
  }
}

TEST(BlurCompositeGpu, MatchesBlurThenBlendAcrossFormatsBordersAndRadii) {
  FOVEA_REQUIRE_GPU();
  for (PixelFormat format : {PixelFormat::kRGB8, PixelFormat::kBGR8, PixelFormat::kRGBA8}) {
    for (BorderMode border :
         {BorderMode::kReplicate, BorderMode::kReflect101, BorderMode::kConstant, BorderMode::kReflect}) {
      // 301x157 has interior tiles (the word-loading path); the small ones are all edge.
      expect_cuda_matches_cpu({{format, 13, 127}, {format, 301, 157}}, gaussian(15, 15, border));
      expect_cuda_matches_cpu({{format, 127, 13}, {format, 230, 141}, {format, 7, 5}},
                              gaussian(5, 3, border));
    }
  }
}

TEST(BlurCompositeGpu, WideAndBoxKernels) {
  FOVEA_REQUIRE_GPU();
  expect_cuda_matches_cpu({{PixelFormat::kRGB8, 333, 171}, {PixelFormat::kRGB8, 40, 33}},
                          gaussian(31, 21, BorderMode::kReflect101, 6.0));
  expect_cuda_matches_cpu({{PixelFormat::kRGBA8, 290, 133}}, gaussian(9, 27, BorderMode::kReflect));
  BlurParams box = gaussian(11, 7, BorderMode::kReplicate);
  box.kind = BlurKind::kBox;
  expect_cuda_matches_cpu({{PixelFormat::kRGB8, 257, 99}, {PixelFormat::kRGB8, 66, 35}}, box);
}

TEST(BlurCompositeGpu, MixedFormatsAndLargeBatchesTakeSeveralLaunches) {
  FOVEA_REQUIRE_GPU();
  expect_cuda_matches_cpu(
      {{PixelFormat::kRGB8, 100, 70}, {PixelFormat::kRGBA8, 90, 61}, {PixelFormat::kBGR8, 77, 40}},
      gaussian(7, 7, BorderMode::kReflect101));
  std::vector<Case> many;
  for (int i = 0; i < 17; ++i) many.push_back({PixelFormat::kRGB8, 20 + 13 * i, 9 + 7 * i});
  expect_cuda_matches_cpu(many, gaussian(15, 15, BorderMode::kReflect101));
}

// More tiles than the GPU holds blocks (two per SM): each persistent block walks several tiles,
// fetching the next while it blurs one, across opaque (copied), clear and blended tiles and two
// images.
TEST(BlurCompositeGpu, PersistentBlocksWalkManyTiles) {
  FOVEA_REQUIRE_GPU();
  expect_cuda_matches_cpu({{PixelFormat::kRGB8, 1283, 1401}, {PixelFormat::kRGB8, 1920, 1080}},
                          gaussian(15, 15, BorderMode::kReflect101));
  expect_cuda_matches_cpu({{PixelFormat::kRGBA8, 1500, 1201}}, gaussian(31, 31, BorderMode::kReplicate));
}

// Every byte of the image set to `value`.
void fill(HostImage& image, std::uint8_t value) {
  const ImageView& v = image.view();
  for (int y = 0; y < v.height; ++y)
    std::fill(v.row(0, y), v.row(0, y) + v.width * pixel_bytes(v.format), value);
}

// A flat frame blurs to itself exactly: the kernel has no clamp, so a white frame must not wrap
// past 255 (its taps rounded to halves may sum to a little over 1, which must keep the byte under
// 255.5), and a black one must stay 0. The mask is clear, so the output is the blurred frame itself.
TEST(BlurCompositeGpu, FlatFramesBlurToThemselves) {
  FOVEA_REQUIRE_GPU();
  BlurParams box = gaussian(11, 7, BorderMode::kReplicate);
  box.kind = BlurKind::kBox;
  for (const BlurParams& params :
       {gaussian(15, 15, BorderMode::kReflect101), gaussian(5, 3, BorderMode::kReflect101),
        gaussian(31, 31, BorderMode::kReplicate, 9.0), box}) {
    for (PixelFormat format : {PixelFormat::kRGB8, PixelFormat::kRGBA8}) {
      for (std::uint8_t value : {std::uint8_t{255}, std::uint8_t{0}}) {
        HostImage frame(format, 200, 150);
        HostImage mask(PixelFormat::kGRAY8, 200, 150);
        fill(frame, value);
        fill(mask, 0);
        DeviceImage d_frame(format, 200, 150);
        DeviceImage d_mask(PixelFormat::kGRAY8, 200, 150);
        DeviceImage d_out(format, 200, 150);
        d_frame.upload(frame);
        d_mask.upload(mask);
        const Status status = run_blur_composite_cuda(nullptr, {{d_frame.view()}, {}}, {{d_mask.view()}, {}},
                                                      {{d_out.view()}, {}}, params);
        ASSERT_TRUE(status.is_ok()) << status.to_string();
        EXPECT_EQ(max_abs_difference(d_out.download().view(), frame.view()), 0.0)
            << pixel_format_name(format) << " value " << int{value} << " kernel " << params.kernel_width
            << "x" << params.kernel_height;
      }
    }
  }
}

TEST(BlurCompositeGpu, RejectsBadInputBeforeLaunching) {
  FOVEA_REQUIRE_GPU();
  DeviceImage frame(PixelFormat::kRGB8, 16, 16);
  DeviceImage mask(PixelFormat::kGRAY8, 16, 16);
  const ImageBatch f{{frame.view()}, {}};
  EXPECT_FALSE(
      run_blur_composite_cuda(nullptr, f, {{mask.view()}, {}}, f, gaussian(3, 3, BorderMode::kReplicate))
          .is_ok());
  DeviceImage out(PixelFormat::kRGB8, 16, 16);
  EXPECT_FALSE(run_blur_composite_cuda(nullptr, f, {{mask.view()}, {}}, {{out.view()}, {}},
                                       gaussian(33, 3, BorderMode::kReplicate))
                   .is_ok());
}

}  // namespace
}  // namespace fovea::image::testing
