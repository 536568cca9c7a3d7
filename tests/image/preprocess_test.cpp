// Fused preprocess on the CPU: the fused op against the composition of the separate steps it is
// defined as (image/preprocess.h), and bad input.
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

// Step 1 of the definition: NV12 to float RGB planes at full resolution, not clamped, nearest
// chroma.
HostImage nv12_to_planar_rgb(const ImageView& nv12, ColorMatrix matrix, ColorRange range) {
  HostImage rgb(PixelFormat::kPlanarF32, nv12.width, nv12.height, 3, 4);
  const YuvCoefficients k = yuv_coefficients(matrix, range);
  for (int y = 0; y < nv12.height; ++y) {
    for (int x = 0; x < nv12.width; ++x) {
      const std::uint8_t* uv = nv12.row(1, y / 2) + (x / 2) * 2;
      const Rgb p = yuv_to_rgb(nv12.row(0, y)[x], uv[0], uv[1], k);
      const float values[3] = {p.r, p.g, p.b};
      for (int c = 0; c < 3; ++c) rgb.view().row<float>(c, y)[x] = values[c];
    }
  }
  return rgb;
}

// Steps 2 and 3: crop + resize the float image with the resize op, clamp, then normalize and lay
// out.
std::vector<float> composition(const ImageBatch& nv12, const PreprocessParams& params) {
  const int plane = params.width * params.height;
  std::vector<float> out(static_cast<std::size_t>(nv12.size()) * 3 * plane);
  for (int n = 0; n < nv12.size(); ++n) {
    HostImage rgb = nv12_to_planar_rgb(nv12.images[static_cast<std::size_t>(n)], params.matrix, params.range);
    HostImage resized(PixelFormat::kPlanarF32, params.width, params.height, 3, 2);
    ResizeParams resize{params.filter, ResizeCompat::kOpenCv, params.fit, {}};
    const int red = params.bgr ? 2 : 0;
    // The resize works on RGB planes; the pad value is given in tensor channel order.
    resize.pad_value = {params.pad_value[red], params.pad_value[1], params.pad_value[2 - red], 0.0f};
    const Status status =
        run_resize_cpu(ImageBatch{{rgb.view()}, {nv12.roi(n)}}, ImageBatch{{resized.view()}, {}}, resize);
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

// Batch 1 or 3 frames of different even sizes (not multiples of 16), pitched, with ROIs (odd
// offsets and sizes included).
Frames make_frames(int count) {
  const int sizes[3][2] = {{126, 78}, {200, 150}, {64, 302}};
  const Roi rois[3] = {Roi{}, Roi{13, 7, 151, 99}, Roi{1, 31, 62, 201}};
  Frames f;
  for (int i = 0; i < count; ++i) {
    f.images.push_back(std::make_unique<HostImage>(PixelFormat::kNV12, sizes[i][0], sizes[i][1], 3, 6));
    f.images.back()->fill_random(static_cast<std::uint32_t>(20 + i));
    f.batch.images.push_back(f.images.back()->view());
    f.batch.rois.push_back(rois[i]);
  }
  return f;
}

TEST(Preprocess, MatchesTheCompositionOfColorResizeNormalize) {
  for (int count : {1, 3}) {
    Frames frames = make_frames(count);
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
                         << "batch " << count << " filter " << static_cast<int>(filter) << " fit "
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
  HostImage rgb(PixelFormat::kRGB8, 64, 48);
  EXPECT_EQ(run(ImageBatch{{rgb.view()}, {}}, params, out), StatusCode::kUnsupported);
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
