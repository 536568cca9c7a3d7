#include <cmath>

#include <fmt/format.h>

#include "image/blur.h"

namespace fovea::image {

namespace {

// cv::getGaussianKernel's fixed kernels for ksize <= 9 with sigma <= 0 (OpenCV 4's
// small_gaussian_tab: binomial up to 7 taps, then {4, 13, 30, 51, 60, ...} / 256).
constexpr std::array<std::array<float, 9>, 5> kSmallGaussian = {{
    {1.0f},
    {0.25f, 0.5f, 0.25f},
    {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f},
    {0.03125f, 0.109375f, 0.21875f, 0.28125f, 0.21875f, 0.109375f, 0.03125f},
    {0.015625f, 0.05078125f, 0.1171875f, 0.19921875f, 0.234375f, 0.19921875f, 0.1171875f, 0.05078125f,
     0.015625f},
}};

Status check_kernel_size(int ksize, const char* what) {
  if (ksize < 1 || ksize > kMaxBlurKernelSize || ksize % 2 == 0) {
    return make_error(StatusCode::kInvalidArgument, fmt::format("blur: {} {} must be odd and within 1..{}",
                                                                what, ksize, kMaxBlurKernelSize));
  }
  return Status::ok();
}

// Blurs one plane of C interleaved channels: a horizontal pass over every row into float, then a
// vertical pass. Rows beyond the edges under kConstant are the border value itself.
template <typename T, int C>
void blur_plane(const detail::PlaneJob& job, const std::vector<float>& wx, const std::vector<float>& wy,
                const BlurParams& params) {
  const int w = job.width;
  const int h = job.height;
  const int rx = params.kernel_width / 2;
  const int ry = params.kernel_height / 2;
  std::vector<float> horizontal(static_cast<std::size_t>(w) * h * C);
  for (int y = 0; y < h; ++y) {
    const T* row = reinterpret_cast<const T*>(static_cast<const std::uint8_t*>(job.src) + y * job.src_pitch);
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < C; ++c) {
        float sum = 0.0f;
        for (int k = 0; k < params.kernel_width; ++k) {
          const int sx = border_index(x - rx + k, w, params.border);
          const float v = sx < 0 ? params.border_value : static_cast<float>(row[sx * C + c]);
          sum += wx[k] * v;
        }
        horizontal[(static_cast<std::size_t>(y) * w + x) * C + c] = sum;
      }
    }
  }
  for (int y = 0; y < h; ++y) {
    T* out = reinterpret_cast<T*>(static_cast<std::uint8_t*>(job.dst) + y * job.dst_pitch);
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < C; ++c) {
        float sum = 0.0f;
        for (int k = 0; k < params.kernel_height; ++k) {
          const int sy = border_index(y - ry + k, h, params.border);
          const float v =
              sy < 0 ? params.border_value : horizontal[(static_cast<std::size_t>(sy) * w + x) * C + c];
          sum += wy[k] * v;
        }
        detail::store_sample(&out[x * C + c], sum);
      }
    }
  }
}

}  // namespace

std::vector<float> blur_weights(BlurKind kind, int ksize, double sigma) {
  std::vector<float> weights(static_cast<std::size_t>(ksize));
  if (kind == BlurKind::kBox) {
    for (float& w : weights) w = 1.0f / static_cast<float>(ksize);
    return weights;
  }
  const bool fixed = ksize <= 9 && sigma <= 0.0;
  const double s = sigma > 0.0 ? sigma : ((ksize - 1) * 0.5 - 1.0) * 0.3 + 0.8;
  const double scale = -0.5 / (s * s);
  std::vector<double> raw(static_cast<std::size_t>(ksize));
  double sum = 0.0;
  for (int i = 0; i < ksize; ++i) {
    const double x = i - (ksize - 1) * 0.5;
    raw[i] = fixed ? kSmallGaussian[ksize / 2][i] : std::exp(scale * x * x);
    sum += raw[i];
  }
  for (int i = 0; i < ksize; ++i) weights[i] = static_cast<float>(raw[i] / sum);
  return weights;
}

namespace {

const std::initializer_list<PixelFormat> kBlurFormats = {PixelFormat::kRGB8, PixelFormat::kBGR8,
                                                         PixelFormat::kRGBA8, PixelFormat::kGRAY8,
                                                         PixelFormat::kPlanarF32};

Status check_blur_input(const ImageBatch& input, const BlurParams& params) {
  FOVEA_TRY(check_batch(input, kBlurFormats, "blur input"));
  FOVEA_TRY(check_kernel_size(params.kernel_width, "kernel width"));
  return check_kernel_size(params.kernel_height, "kernel height");
}

}  // namespace

namespace detail {

Status check_blur(const ImageBatch& input, const ImageBatch& output, const BlurParams& params) {
  FOVEA_TRY(check_blur_input(input, params));
  FOVEA_TRY(check_batch(output, kBlurFormats, "blur output"));
  FOVEA_TRY(check_same_batch_size(input, output, "blur input", "blur output"));
  for (int i = 0; i < input.size(); ++i) {
    const ImageView& in = input.images[i];
    const ImageView& out = output.images[i];
    const Roi ri = input.roi(i);
    const Roi ro = output.roi(i);
    if (in.format != out.format || in.channels != out.channels) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("blur image {}: output format {} differs from input format {}", i,
                                    pixel_format_name(out.format), pixel_format_name(in.format)));
    }
    if (ri.width != ro.width || ri.height != ro.height) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("blur image {}: output ROI {}x{} differs from input ROI {}x{}", i,
                                    ro.width, ro.height, ri.width, ri.height));
    }
    if (in.planes[0].data == out.planes[0].data) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("blur image {}: output aliases the input", i));
    }
  }
  return Status::ok();
}

int plane_count(const ImageView& view) {
  return view.format == PixelFormat::kPlanarF32 ? view.channels : 1;
}

PlaneJob plane_job(const ImageBatch& input, const ImageBatch& output, int image, int plane) {
  const ImageView in = roi_subview(input.images[image], input.roi(image));
  const ImageView out = roi_subview(output.images[image], output.roi(image));
  return PlaneJob{in.planes[plane].data,
                  in.planes[plane].pitch,
                  out.planes[plane].data,
                  out.planes[plane].pitch,
                  in.width,
                  in.height};
}

}  // namespace detail

Result<BlurPlan> plan_blur(const ImageBatch& input, const BlurParams& params) {
  FOVEA_TRY(check_blur_input(input, params));
  BlurPlan plan;
  for (int i = 0; i < input.size(); ++i)
    plan.output_sizes.push_back({input.roi(i).width, input.roi(i).height});
  return plan;
}

Status run_blur_cpu(const ImageBatch& input, const ImageBatch& output, const BlurParams& params) {
  FOVEA_TRY(detail::check_blur(input, output, params));
  const double sigma_y = params.sigma_y > 0.0 ? params.sigma_y : params.sigma_x;
  const std::vector<float> wx = blur_weights(params.kind, params.kernel_width, params.sigma_x);
  const std::vector<float> wy = blur_weights(params.kind, params.kernel_height, sigma_y);
  for (int i = 0; i < input.size(); ++i) {
    const PixelFormat format = input.images[i].format;
    for (int p = 0; p < detail::plane_count(input.images[i]); ++p) {
      const detail::PlaneJob job = detail::plane_job(input, output, i, p);
      switch (format) {
        case PixelFormat::kRGB8:
        case PixelFormat::kBGR8: blur_plane<std::uint8_t, 3>(job, wx, wy, params); break;
        case PixelFormat::kRGBA8: blur_plane<std::uint8_t, 4>(job, wx, wy, params); break;
        case PixelFormat::kGRAY8: blur_plane<std::uint8_t, 1>(job, wx, wy, params); break;
        default: blur_plane<float, 1>(job, wx, wy, params);
      }
    }
  }
  return Status::ok();
}

}  // namespace fovea::image
