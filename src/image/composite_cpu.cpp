#include <fmt/format.h>

#include "image/blur.h"
#include "image/composite.h"

namespace fovea::image {

namespace {

const std::initializer_list<PixelFormat> kCompositeFormats = {PixelFormat::kRGB8, PixelFormat::kBGR8,
                                                              PixelFormat::kRGBA8, PixelFormat::kNV12};

// `other` must match `reference` image by image in format (unless it is the mask) and ROI size.
Status check_matches(const ImageBatch& reference, const ImageBatch& other, const char* what, bool is_mask) {
  FOVEA_TRY(check_same_batch_size(reference, other, "composite image", what));
  for (int i = 0; i < reference.size(); ++i) {
    const Roi r = reference.roi(i);
    const Roi o = other.roi(i);
    if (!is_mask && reference.images[i].format != other.images[i].format) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("composite {} image {}: format {} differs from {}", what, i,
                                    pixel_format_name(other.images[i].format),
                                    pixel_format_name(reference.images[i].format)));
    }
    if (r.width != o.width || r.height != o.height) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("composite {} image {}: size {}x{} differs from the image's {}x{}", what,
                                    i, o.width, o.height, r.width, r.height));
    }
    const bool nv12 = reference.images[i].format == PixelFormat::kNV12;
    if (nv12 && !is_mask && (o.x % 2 != 0 || o.y % 2 != 0 || o.width % 2 != 0 || o.height % 2 != 0)) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("composite {} image {}: NV12 ROI {}x{}+{}+{} must be even", what, i,
                                    o.width, o.height, o.x, o.y));
    }
  }
  return Status::ok();
}

Status check_images_and_mask(const ImageBatch& image, const ImageBatch& mask) {
  FOVEA_TRY(check_batch(image, kCompositeFormats, "composite image"));
  FOVEA_TRY(check_batch(mask, {PixelFormat::kGRAY8}, "composite mask"));
  FOVEA_TRY(check_matches(image, image, "image", false));  // the NV12 ROI rule
  return check_matches(image, mask, "mask", true);
}

CompositePlan plan_for(const ImageBatch& image) {
  CompositePlan plan;
  for (int i = 0; i < image.size(); ++i)
    plan.output_sizes.push_back({image.roi(i).width, image.roi(i).height});
  return plan;
}

void run_jobs_cpu(const ImageBatch& a, const ImageBatch* b, const ImageBatch& mask, const ImageBatch& output,
                  const OverlayParams& params) {
  for (int i = 0; i < a.size(); ++i) {
    detail::CompositeJob jobs[detail::kMaxCompositePlanes];
    const int planes = detail::composite_jobs(a, b, mask, output, i, params, jobs);
    for (int p = 0; p < planes; ++p) {
      const detail::CompositeJob& job = jobs[p];
      for (int row = 0; row < job.rows; ++row) {
        for (int e = 0; e < job.elements; ++e) {
          job.out[row * job.out_pitch + e] = b != nullptr
                                                 ? detail::blend_element(job, e, row)
                                                 : detail::overlay_element(job, params.alpha, e, row);
        }
      }
    }
  }
}

}  // namespace

namespace detail {

int composite_jobs(const ImageBatch& a, const ImageBatch* b, const ImageBatch& mask, const ImageBatch& output,
                   int image, const OverlayParams& params, CompositeJob* jobs) {
  const ImageView va = roi_subview(a.images[image], a.roi(image));
  const ImageView vm = roi_subview(mask.images[image], mask.roi(image));
  const ImageView vo = roi_subview(output.images[image], output.roi(image));
  const ImageView vb = b != nullptr ? roi_subview(b->images[image], b->roi(image)) : va;
  const bool nv12 = va.format == PixelFormat::kNV12;
  const int channels = pixel_bytes(va.format);
  const float red = params.color[0];
  const float green = params.color[1];
  const float blue = params.color[2];
  const bool bgr = va.format == PixelFormat::kBGR8;
  const Yuv yuv = rgb_to_yuv(red, green, blue, params.matrix, params.range);
  // The color of each channel of each plane, in the plane's own order and color space.
  const float packed[3] = {bgr ? blue : red, green, bgr ? red : blue};
  const float luma[1] = {yuv.y};
  const float chroma[2] = {yuv.u, yuv.v};
  for (int p = 0; p < (nv12 ? 2 : 1); ++p) {
    CompositeJob& job = jobs[p];
    job = CompositeJob{};
    job.a = static_cast<const std::uint8_t*>(va.planes[p].data);
    job.a_pitch = va.planes[p].pitch;
    job.b = static_cast<const std::uint8_t*>(vb.planes[p].data);
    job.b_pitch = vb.planes[p].pitch;
    job.mask = static_cast<const std::uint8_t*>(vm.planes[0].data);
    job.mask_pitch = vm.planes[0].pitch;
    job.out = static_cast<std::uint8_t*>(vo.planes[p].data);
    job.out_pitch = vo.planes[p].pitch;
    job.elements = va.width * channels;  // NV12 chroma: w/2 UV pairs = w bytes
    job.rows = p == 0 ? va.height : va.height / 2;
    job.channels = p == 0 ? channels : 2;
    job.subsample = p == 0 ? 1 : 2;
    job.colored_channels = nv12 ? job.channels : 3;
    const float* color = !nv12 ? packed : (p == 0 ? luma : chroma);
    for (int c = 0; c < job.colored_channels; ++c) job.color[c] = color[c];
  }
  return nv12 ? 2 : 1;
}

Status check_blend(const ImageBatch& foreground, const ImageBatch& background, const ImageBatch& mask,
                   const ImageBatch* output) {
  FOVEA_TRY(check_images_and_mask(foreground, mask));
  FOVEA_TRY(check_batch(background, kCompositeFormats, "composite background"));
  FOVEA_TRY(check_matches(foreground, background, "background", false));
  if (output != nullptr) {
    FOVEA_TRY(check_batch(*output, kCompositeFormats, "composite output"));
    FOVEA_TRY(check_matches(foreground, *output, "output", false));
  }
  return Status::ok();
}

Status check_overlay(const ImageBatch& image, const ImageBatch& mask, const ImageBatch* output,
                     const OverlayParams& params) {
  if (!(params.alpha >= 0.0f && params.alpha <= 1.0f)) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("overlay: alpha {} is outside 0..1", params.alpha));
  }
  FOVEA_TRY(check_images_and_mask(image, mask));
  if (output != nullptr) {
    FOVEA_TRY(check_batch(*output, kCompositeFormats, "composite output"));
    FOVEA_TRY(check_matches(image, *output, "output", false));
  }
  return Status::ok();
}

}  // namespace detail

Result<CompositePlan> plan_blend(const ImageBatch& foreground, const ImageBatch& background,
                                 const ImageBatch& mask) {
  FOVEA_TRY(detail::check_blend(foreground, background, mask, nullptr));
  return plan_for(foreground);
}

Status run_blend_cpu(const ImageBatch& foreground, const ImageBatch& background, const ImageBatch& mask,
                     const ImageBatch& output) {
  FOVEA_TRY(detail::check_blend(foreground, background, mask, &output));
  run_jobs_cpu(foreground, &background, mask, output, OverlayParams{});
  return Status::ok();
}

Result<CompositePlan> plan_overlay(const ImageBatch& image, const ImageBatch& mask,
                                   const OverlayParams& params) {
  FOVEA_TRY(detail::check_overlay(image, mask, nullptr, params));
  return plan_for(image);
}

Status run_overlay_cpu(const ImageBatch& image, const ImageBatch& mask, const ImageBatch& output,
                       const OverlayParams& params) {
  FOVEA_TRY(detail::check_overlay(image, mask, &output, params));
  run_jobs_cpu(image, nullptr, mask, output, params);
  return Status::ok();
}

}  // namespace fovea::image
