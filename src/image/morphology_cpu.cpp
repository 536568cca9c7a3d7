#include <fmt/format.h>

#include "image/blur.h"
#include "image/morphology.h"

namespace fovea::image {

namespace {

// Workspace planes start 256-byte aligned, the alignment cudaMalloc gives.
constexpr std::size_t kWorkAlignment = 256;

// One iteration of the separable op: rows of `src` into `work`, then columns of `work` into `dst`.
void morph_iteration(const std::uint8_t* src, std::size_t src_pitch, const detail::MorphologyJob& job,
                     const MorphologyParams& params) {
  const bool dilate = params.op == MorphologyOp::kDilate;
  for (int y = 0; y < job.height; ++y)
    for (int x = 0; x < job.width; ++x)
      job.work[y * job.width + x] =
          detail::morph_window(src + y * src_pitch, 1, x, job.width, params.element_width, dilate);
  for (int y = 0; y < job.height; ++y)
    for (int x = 0; x < job.width; ++x)
      job.dst[y * job.dst_pitch + x] =
          detail::morph_window(job.work + x, job.width, y, job.height, params.element_height, dilate);
}

}  // namespace

namespace detail {

Status check_morphology(const ImageBatch& input, const ImageBatch* output, const MorphologyParams& params) {
  if (params.element_width < 1 || params.element_height < 1 || params.iterations < 1) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("morphology: element {}x{} and iterations {} must be at least 1",
                                  params.element_width, params.element_height, params.iterations));
  }
  FOVEA_TRY(check_batch(input, {PixelFormat::kGRAY8}, "morphology input"));
  if (output == nullptr) return Status::ok();
  FOVEA_TRY(check_batch(*output, {PixelFormat::kGRAY8}, "morphology output"));
  FOVEA_TRY(check_same_batch_size(input, *output, "morphology input", "morphology output"));
  for (int i = 0; i < input.size(); ++i) {
    const Roi a = input.roi(i);
    const Roi b = output->roi(i);
    if (a.width != b.width || a.height != b.height) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("morphology image {}: output ROI {}x{} differs from input ROI {}x{}", i,
                                    b.width, b.height, a.width, a.height));
    }
  }
  return Status::ok();
}

std::size_t morphology_work_bytes(const ImageBatch& input, int image) {
  const Roi roi = input.roi(image);
  const std::size_t bytes = static_cast<std::size_t>(roi.width) * roi.height;
  return (bytes + kWorkAlignment - 1) / kWorkAlignment * kWorkAlignment;
}

MorphologyJob morphology_job(const ImageBatch& input, const ImageBatch& output, int image,
                             std::uint8_t* work) {
  const ImageView in = roi_subview(input.images[image], input.roi(image));
  const ImageView out = roi_subview(output.images[image], output.roi(image));
  return MorphologyJob{static_cast<const std::uint8_t*>(in.planes[0].data),
                       in.planes[0].pitch,
                       static_cast<std::uint8_t*>(out.planes[0].data),
                       out.planes[0].pitch,
                       work,
                       in.width,
                       in.height};
}

}  // namespace detail

Result<MorphologyPlan> plan_morphology(const ImageBatch& input, const MorphologyParams& params) {
  FOVEA_TRY(detail::check_morphology(input, nullptr, params));
  MorphologyPlan plan;
  for (int i = 0; i < input.size(); ++i) {
    plan.output_sizes.push_back({input.roi(i).width, input.roi(i).height});
    plan.workspace_bytes += detail::morphology_work_bytes(input, i);
  }
  return plan;
}

Status run_morphology_cpu(const ImageBatch& input, const ImageBatch& output, const MorphologyParams& params) {
  FOVEA_TRY(detail::check_morphology(input, &output, params));
  for (int i = 0; i < input.size(); ++i) {
    std::vector<std::uint8_t> work(detail::morphology_work_bytes(input, i));
    const detail::MorphologyJob job = detail::morphology_job(input, output, i, work.data());
    for (int it = 0; it < params.iterations; ++it) {
      morph_iteration(it == 0 ? job.src : job.dst, it == 0 ? job.src_pitch : job.dst_pitch, job, params);
    }
  }
  return Status::ok();
}

}  // namespace fovea::image
