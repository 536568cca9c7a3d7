// Fused preprocess on the CPU: the fused op against the composition of the separate steps it is
// defined as (image/preprocess.h), NV12 and RGB8/BGR8 batches, a hand-computed RGB8 case, the
// pix2pix half-image ROI, and bad input.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "core/half.h"
#include "image/color_math.h"
#include "image/image_test_util.h"
#include "image/preprocess.h"
#include "image/resize.h"
#include "image/tolerances.h"

namespace fovea::image::testing {
namespace {

// Step 1 of the definition: float RGB planes at full resolution, not clamped. NV12 converts with
// nearest chroma; RGB8/BGR8 take their pixel values.
HostImage to_planar_rgb(const ImageView& image, ColorMatrix matrix, ColorRange range) {
  HostImage rgb(PixelFormat::kPlanarF32, image.width, image.height, 3, 4);
  const YuvCoefficients k = yuv_coefficients(matrix, range);
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x) {
      float values[3];
      if (image.format == PixelFormat::kNV12) {
        const std::uint8_t* uv = image.row(1, y / 2) + (x / 2) * 2;
        const Rgb p = yuv_to_rgb(image.row(0, y)[x], uv[0], uv[1], k);
        values[0] = p.r, values[1] = p.g, values[2] = p.b;
      } else {
        const std::uint8_t* pixel = image.row(0, y) + 3 * x;
        const bool bgr = image.format == PixelFormat::kBGR8;
        for (int c = 0; c < 3; ++c) values[c] = pixel[bgr ? 2 - c : c];
      }
      for (int c = 0; c < 3; ++c) rgb.view().row<float>(c, y)[x] = values[c];
    }
  }
  return rgb;
}

// Steps 2 and 3: crop + resize the float image with the resize op, clamp, then normalize and lay
// out.
std::vector<float> composition(const ImageBatch& input, const PreprocessParams& params) {
  const int plane = params.width * params.height;
  std::vector<float> out(static_cast<std::size_t>(input.size()) * 3 * plane);
  for (int n = 0; n < input.size(); ++n) {
    HostImage rgb = to_planar_rgb(input.images[static_cast<std::size_t>(n)], params.matrix, params.range);
    HostImage resized(PixelFormat::kPlanarF32, params.width, params.height, 3, 2);
    ResizeParams resize{params.filter, ResizeCompat::kOpenCv, params.fit, {}};
    const int red = params.bgr ? 2 : 0;
    // The resize works on RGB planes; the pad value is given in tensor channel order.
    resize.pad_value = {params.pad_value[red], params.pad_value[1], params.pad_value[2 - red], 0.0f};
    const Status status =
        run_resize_cpu(ImageBatch{{rgb.view()}, {input.roi(n)}}, ImageBatch{{resized.view()}, {}}, resize);
    EXPECT_TRUE(status.is_ok()) << status.to_string();
    for (int c = 0; c < 3; ++c) {
      const int source_plane = c == 1 ? 1 : (c == red ? 0 : 2);
      for (int y = 0; y < params.height; ++y) {
        for (int x = 0; x < params.width; ++x) {
          const float v = std::clamp(resized.view().row<float>(source_plane, y)[x], 0.0f, 255.0f);
          const float normalized = (v * params.scale - params.mean[c]) / params.std[c];
          const std::size_t pixel = static_cast<std::size_t>(y) * params.width + x;
          const std::size_t index = params.layout == TensorLayout::kNCHW
                                        ? (static_cast<std::size_t>(n) * 3 + c) * plane + pixel
                                        : (static_cast<std::size_t>(n) * plane + pixel) * 3 + c;
          out[index] = normalized;
        }
      }
    }
  }
  return out;
}

double max_difference(const std::vector<float>& expected, const void* actual, DataType dtype) {
  double worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const float a = dtype == DataType::kFloat32
                        ? static_cast<const float*>(actual)[i]
                        : half_to_float(Half{static_cast<const std::uint16_t*>(actual)[i]});
    worst = std::max(worst, std::abs(static_cast<double>(a) - expected[i]));
  }
  return worst;
}

struct Frames {
  std::vector<std::unique_ptr<HostImage>> images;
  ImageBatch batch;
};

struct FrameSpec {
  PixelFormat format;
  int width, height;
  Roi roi;
};

// Random frames, pitched: 6 bytes of row padding for NV12, 5 for packed rows (odd pitches).
Frames make_frames(const std::vector<FrameSpec>& specs) {
  Frames f;
  for (const FrameSpec& spec : specs) {
    const int extra_pitch = spec.format == PixelFormat::kNV12 ? 6 : 5;
    f.images.push_back(std::make_unique<HostImage>(spec.format, spec.width, spec.height, 3, extra_pitch));
    f.images.back()->fill_random(static_cast<std::uint32_t>(20 + f.batch.size()));
    f.batch.images.push_back(f.images.back()->view());
    f.batch.rois.push_back(spec.roi);
  }
  return f;
}

// NV12: batch 1 or 3 frames of different even sizes (not multiples of 16), with ROIs (odd offsets
// and sizes included).
const std::vector<FrameSpec> kNv12Frames = {{PixelFormat::kNV12, 126, 78, Roi{}},
                                            {PixelFormat::kNV12, 200, 150, Roi{13, 7, 151, 99}},
                                            {PixelFormat::kNV12, 64, 302, Roi{1, 31, 62, 201}}};
// RGB8 and BGR8 of odd sizes (1x1 and single rows included) mixed with NV12, with odd ROIs and the
// pix2pix halves of a 512x256 pair.
const std::vector<FrameSpec> kMixedFrames = {{PixelFormat::kRGB8, 37, 23, Roi{3, 5, 31, 17}},
                                             {PixelFormat::kNV12, 126, 78, Roi{13, 7, 99, 61}},
                                             {PixelFormat::kBGR8, 1, 1, Roi{}},
                                             {PixelFormat::kRGB8, 255, 3, Roi{}},
                                             {PixelFormat::kBGR8, 512, 256, Roi{256, 0, 256, 256}},
                                             {PixelFormat::kRGB8, 512, 256, Roi{0, 0, 256, 256}}};

void expect_matches_composition(const std::vector<FrameSpec>& specs) {
  Frames frames = make_frames(specs);
  for (ResizeFilter filter : {ResizeFilter::kBilinear, ResizeFilter::kNearest}) {
    for (ResizeFit fit : {ResizeFit::kStretch, ResizeFit::kLetterbox, ResizeFit::kKeepAspectTopLeft}) {
      for (TensorLayout layout : {TensorLayout::kNCHW, TensorLayout::kNHWC}) {
        for (DataType dtype : {DataType::kFloat32, DataType::kFloat16}) {
          PreprocessParams params;
          params.width = 97;
          params.height = 64;
          params.layout = layout;
          params.dtype = dtype;
          params.filter = filter;
          params.fit = fit;
          params.bgr = layout == TensorLayout::kNHWC;
          params.matrix = dtype == DataType::kFloat16 ? ColorMatrix::kBt709 : ColorMatrix::kBt601;
          params.range = fit == ResizeFit::kLetterbox ? ColorRange::kFull : ColorRange::kLimited;
          params.mean = {0.485f, 0.456f, 0.406f};
          params.std = {0.229f, 0.224f, 0.225f};
          params.pad_value = {114.0f, 100.0f, 50.0f};
          SCOPED_TRACE(::testing::Message()
                       << "batch " << specs.size() << " filter " << static_cast<int>(filter) << " fit "
                       << static_cast<int>(fit) << " layout " << static_cast<int>(layout) << " dtype "
                       << data_type_name(dtype));
          auto plan = plan_preprocess(frames.batch, params);
          ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
          std::vector<std::uint8_t> bytes(plan->output_bytes);
          const auto& s = plan->shape;
          const TensorView out =
              contiguous_tensor(bytes.data(), dtype, MemoryKind::kHost, {s[0], s[1], s[2], s[3]});
          const Status status = run_preprocess_cpu(frames.batch, params, out);
          ASSERT_TRUE(status.is_ok()) << status.to_string();
          EXPECT_LE(max_difference(composition(frames.batch, params), bytes.data(), dtype),
                    dtype == DataType::kFloat32 ? kF32Tolerance : kF16Tolerance);
        }
      }
    }
  }
}

TEST(Preprocess, MatchesTheCompositionOfColorResizeNormalize) {
  expect_matches_composition({kNv12Frames.begin(), kNv12Frames.begin() + 1});
  expect_matches_composition(kNv12Frames);
}

TEST(Preprocess, PackedRgbMixedWithNv12MatchesTheComposition) {
  expect_matches_composition(kMixedFrames);
}

// A 3x2 RGB8 image at its own size (the resize is the identity: bilinear taps at weight 1 and 0),
// normalized to [-1, 1]: (v / 255 - 0.5) / 0.5, so 0, 51, 102, 153, 204, 255 give -1, -0.6, -0.2,
// 0.2, 0.6, 1. BGR8 holds the same bytes in the other order; the tensor's bgr flag swaps again.
TEST(Preprocess, PackedRgbHandComputed) {
  const std::uint8_t pixels[2][3][3] = {{{0, 51, 102}, {153, 204, 255}, {255, 0, 51}},
                                        {{102, 153, 204}, {51, 255, 0}, {204, 102, 153}}};
  // Planes of bytes 0, 1, 2 in NCHW order.
  const std::vector<float> by_byte[3] = {{-1.0f, 0.2f, 1.0f, -0.2f, -0.6f, 0.6f},
                                         {-0.6f, 0.6f, -1.0f, 0.2f, 1.0f, -0.2f},
                                         {-0.2f, 1.0f, -0.6f, 0.6f, -1.0f, 0.2f}};
  struct Case {
    PixelFormat format;
    bool bgr;
    int planes[3];  // the byte behind tensor channels 0, 1, 2
  };
  for (const Case& c :
       {Case{PixelFormat::kRGB8, false, {0, 1, 2}}, Case{PixelFormat::kRGB8, true, {2, 1, 0}},
        Case{PixelFormat::kBGR8, false, {2, 1, 0}}, Case{PixelFormat::kBGR8, true, {0, 1, 2}}}) {
    SCOPED_TRACE(::testing::Message() << pixel_format_name(c.format) << " bgr " << c.bgr);
    HostImage image(c.format, 3, 2, 3, 5);
    for (int y = 0; y < 2; ++y) {
      for (int x = 0; x < 3; ++x) {
        for (int b = 0; b < 3; ++b) image.view().row(0, y)[3 * x + b] = pixels[y][x][b];
      }
    }
    PreprocessParams params;
    params.width = 3;
    params.height = 2;
    params.dtype = DataType::kFloat32;
    params.bgr = c.bgr;
    params.matrix = ColorMatrix::kBt709;  // ignored for packed RGB
    params.mean = {0.5f, 0.5f, 0.5f};
    params.std = {0.5f, 0.5f, 0.5f};
    std::vector<float> out(3 * 2 * 3);
    const Status status = run_preprocess_cpu(
        ImageBatch{{image.view()}, {}}, params,
        contiguous_tensor(out.data(), DataType::kFloat32, MemoryKind::kHost, {1, 3, 2, 3}));
    ASSERT_TRUE(status.is_ok()) << status.to_string();
    for (int ch = 0; ch < 3; ++ch) {
      for (int i = 0; i < 6; ++i) {
        EXPECT_NEAR(out[static_cast<std::size_t>(ch * 6 + i)],
                    by_byte[c.planes[ch]][static_cast<std::size_t>(i)], kF32Tolerance)
            << "channel " << ch << " pixel " << i;
      }
    }
  }
}

// pix2pix's "AB" images hold the input and the target side by side; the model takes one half,
// given as the ROI (x = 0 or x = width / 2). At 256x256 the resize is the identity, so the tensor
// is that half's pixels, normalized to [-1, 1].
TEST(Preprocess, Pix2PixHalfImageRoi) {
  HostImage pair(PixelFormat::kRGB8, 512, 256, 3, 3);
  pair.fill_random(7);
  for (int left : {0, 256}) {
    SCOPED_TRACE(::testing::Message() << "ROI x " << left);
    PreprocessParams params;
    params.width = 256;
    params.height = 256;
    params.dtype = DataType::kFloat32;
    params.mean = {0.5f, 0.5f, 0.5f};
    params.std = {0.5f, 0.5f, 0.5f};
    std::vector<float> out(3 * 256 * 256);
    const Status status = run_preprocess_cpu(
        ImageBatch{{pair.view()}, {Roi{left, 0, 256, 256}}}, params,
        contiguous_tensor(out.data(), DataType::kFloat32, MemoryKind::kHost, {1, 3, 256, 256}));
    ASSERT_TRUE(status.is_ok()) << status.to_string();
    double worst = 0;
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 256; ++y) {
        for (int x = 0; x < 256; ++x) {
          const double expected = pair.view().row(0, y)[3 * (left + x) + c] / 127.5 - 1.0;
          const float actual = out[static_cast<std::size_t>((c * 256 + y) * 256 + x)];
          worst = std::max(worst, std::abs(actual - expected));
        }
      }
    }
    EXPECT_LE(worst, kF32Tolerance);
  }
}

TEST(Preprocess, RejectsBadInput) {
  HostImage frame(PixelFormat::kNV12, 64, 48);
  PreprocessParams params;
  params.width = 32;
  params.height = 16;
  std::vector<std::uint8_t> bytes(2 * 3 * 32 * 16 * 2);
  const TensorView out =
      contiguous_tensor(bytes.data(), DataType::kFloat16, MemoryKind::kHost, {1, 3, 16, 32});
  auto run = [&](const ImageBatch& batch, const PreprocessParams& p, const TensorView& t) {
    return run_preprocess_cpu(batch, p, t).code();
  };
  const ImageBatch good{{frame.view()}, {}};
  EXPECT_EQ(run(good, params, out), StatusCode::kOk);
  EXPECT_EQ(run(ImageBatch{{frame.view()}, {Roi{0, 0, 0, 4}}}, params, out), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(ImageBatch{{frame.view()}, {Roi{60, 40, 8, 8}}}, params, out), StatusCode::kInvalidArgument);
  ImageView odd = frame.view();
  odd.width = 63;
  EXPECT_EQ(run(ImageBatch{{odd}, {}}, params, out), StatusCode::kInvalidArgument);
  // RGB8 may have odd sizes; other formats are not supported.
  HostImage rgb(PixelFormat::kRGB8, 63, 47);
  EXPECT_EQ(run(ImageBatch{{rgb.view()}, {}}, params, out), StatusCode::kOk);
  EXPECT_EQ(run(ImageBatch{{rgb.view()}, {Roi{32, 0, 32, 47}}}, params, out), StatusCode::kInvalidArgument);
  HostImage rgba(PixelFormat::kRGBA8, 64, 48);
  EXPECT_EQ(run(ImageBatch{{rgba.view()}, {}}, params, out), StatusCode::kUnsupported);
  // Two frames for a tensor of one: the batch sizes differ.
  const Status mismatch = run_preprocess_cpu(ImageBatch{{frame.view(), frame.view()}, {}}, params, out);
  EXPECT_EQ(mismatch.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.message().find("[2, 3, 16, 32]"), std::string::npos) << mismatch.message();
  const TensorView nhwc =
      contiguous_tensor(bytes.data(), DataType::kFloat16, MemoryKind::kHost, {1, 16, 32, 3});
  EXPECT_EQ(run(good, params, nhwc), StatusCode::kInvalidArgument);
  const TensorView f32 =
      contiguous_tensor(bytes.data(), DataType::kFloat32, MemoryKind::kHost, {1, 3, 16, 32});
  EXPECT_EQ(run(good, params, f32), StatusCode::kInvalidArgument);
  PreprocessParams bad = params;
  bad.width = 0;
  EXPECT_EQ(run(good, bad, out), StatusCode::kInvalidArgument);
  bad = params;
  bad.dtype = DataType::kUInt8;
  EXPECT_EQ(run(good, bad, out), StatusCode::kUnsupported);
  bad = params;
  bad.filter = ResizeFilter::kBicubic;
  EXPECT_EQ(run(good, bad, out), StatusCode::kUnsupported);
  bad = params;
  bad.std[1] = 0.0f;
  EXPECT_EQ(run(good, bad, out), StatusCode::kInvalidArgument);
}

// Letterboxing 1920x1080 into 960x544 keeps the aspect: 960x540, 2 rows of padding above.
TEST(Preprocess, ReportsLetterboxPlacement) {
  HostImage frame(PixelFormat::kNV12, 1920, 1080);
  PreprocessParams params;
  params.width = 960;
  params.height = 544;
  params.fit = ResizeFit::kLetterbox;
  auto plan = plan_preprocess(ImageBatch{{frame.view()}, {}}, params);
  ASSERT_TRUE(plan.is_ok());
  const ResizePlacement p = plan->placements[0];
  EXPECT_EQ(p.width, 960);
  EXPECT_EQ(p.height, 540);
  EXPECT_EQ(p.offset_x, 0);
  EXPECT_EQ(p.offset_y, 2);
  EXPECT_FLOAT_EQ(p.scale_y, 0.5f);
  EXPECT_EQ(plan->output_bytes, 3u * 960 * 544 * 2);
}

}  // namespace
}  // namespace fovea::image::testing
