#include <fmt/format.h>

#include "image/bilateral.h"

namespace fovea::image {

namespace detail {

Status check_bilateral(const ImageBatch& mask, const ImageBatch& guide, const ImageBatch* output,
                       const BilateralParams& params) {
  if (!(params.sigma_color > 0.0f) || !(params.sigma_space > 0.0f)) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("joint bilateral: sigma_color {} and sigma_space {} must be positive",
                                  params.sigma_color, params.sigma_space));
  }
  if (params.border == BorderMode::kConstant) {
    return make_error(StatusCode::kInvalidArgument,
                      "joint bilateral: the constant border has no guide color");
  }
  FOVEA_TRY(check_batch(mask, {PixelFormat::kGRAY8}, "joint bilateral mask"));
  FOVEA_TRY(check_batch(guide,
                        {PixelFormat::kRGB8, PixelFormat::kBGR8, PixelFormat::kRGBA8, PixelFormat::kGRAY8},
                        "joint bilateral guide"));
  FOVEA_TRY(check_same_batch_size(mask, guide, "joint bilateral mask", "joint bilateral guide"));
  if (output != nullptr) {
    FOVEA_TRY(check_batch(*output, {PixelFormat::kGRAY8}, "joint bilateral output"));
    FOVEA_TRY(check_same_batch_size(mask, *output, "joint bilateral mask", "joint bilateral output"));
  }
  for (int i = 0; i < mask.size(); ++i) {
    const Roi m = mask.roi(i);
    const Roi g = guide.roi(i);
    if (m.width != g.width || m.height != g.height) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("joint bilateral image {}: mask {}x{} and guide {}x{} differ in size", i,
                                    m.width, m.height, g.width, g.height));
    }
    if (output == nullptr) continue;
    const Roi o = output->roi(i);
    if (o.width != m.width || o.height != m.height) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("joint bilateral image {}: output {}x{} differs from the mask's {}x{}", i,
                                    o.width, o.height, m.width, m.height));
    }
    if (output->images[i].planes[0].data == mask.images[i].planes[0].data) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("joint bilateral image {}: the output aliases the mask", i));
    }
  }
  return Status::ok();
}

BilateralKernel bilateral_kernel(const BilateralParams& params) {
  BilateralKernel k;
  k.radius =
      params.diameter > 0 ? params.diameter / 2 : static_cast<int>(std::lround(params.sigma_space * 1.5f));
  k.space_coeff = 0.5f / (params.sigma_space * params.sigma_space);
  k.color_coeff = 0.5f / (params.sigma_color * params.sigma_color);
  k.border = params.border;
  return k;
}

BilateralJob bilateral_job(const ImageBatch& mask, const ImageBatch& guide, const ImageBatch& output,
                           int image) {
  const ImageView m = roi_subview(mask.images[image], mask.roi(image));
  const ImageView g = roi_subview(guide.images[image], guide.roi(image));
  const ImageView o = roi_subview(output.images[image], output.roi(image));
  BilateralJob job;
  job.mask = static_cast<const std::uint8_t*>(m.planes[0].data);
  job.mask_pitch = m.planes[0].pitch;
  job.guide = static_cast<const std::uint8_t*>(g.planes[0].data);
  job.guide_pitch = g.planes[0].pitch;
  job.out = static_cast<std::uint8_t*>(o.planes[0].data);
  job.out_pitch = o.planes[0].pitch;
  job.width = m.width;
  job.height = m.height;
  job.guide_bytes = pixel_bytes(g.format);
  job.guide_channels = g.format == PixelFormat::kGRAY8 ? 1 : 3;
  return job;
}

}  // namespace detail

Result<BilateralPlan> plan_joint_bilateral(const ImageBatch& mask, const ImageBatch& guide,
                                           const BilateralParams& params) {
  FOVEA_TRY(detail::check_bilateral(mask, guide, nullptr, params));
  BilateralPlan plan;
  for (int i = 0; i < mask.size(); ++i) plan.output_sizes.push_back({mask.roi(i).width, mask.roi(i).height});
  return plan;
}

Status run_joint_bilateral_cpu(const ImageBatch& mask, const ImageBatch& guide, const ImageBatch& output,
                               const BilateralParams& params) {
  FOVEA_TRY(detail::check_bilateral(mask, guide, &output, params));
  const detail::BilateralKernel k = detail::bilateral_kernel(params);
  for (int i = 0; i < mask.size(); ++i) {
    const detail::BilateralJob job = detail::bilateral_job(mask, guide, output, i);
    for (int y = 0; y < job.height; ++y)
      for (int x = 0; x < job.width; ++x)
        job.out[y * job.out_pitch + x] = detail::joint_bilateral_pixel(job, k, x, y);
  }
  return Status::ok();
}

}  // namespace fovea::image
