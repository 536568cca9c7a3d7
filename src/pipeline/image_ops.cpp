#include "pipeline/image_ops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pipeline/frame_batch.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime_api.h>

#include "core/cuda_check.h"
#endif

namespace fovea::pipeline {
namespace {

// The inverse of the input normalization, per tensor channel (image_ops.h says why).
post::TensorImageParams picture_params(const ModelConfig& model) {
  post::TensorImageParams params;
  params.bgr = model.color_order == ColorOrder::kBgr;
  // scale and offset are per picture channel (R, G, B); mean and std per tensor channel.
  for (std::size_t c = 0; c < 3; ++c) {
    const std::size_t t = params.bgr ? 2 - c : c;
    params.scale[c] = model.std[t] * 255.0f;
    params.offset[c] = model.mean[t] * 255.0f;
  }
  return params;
}

}  // namespace

Result<std::unique_ptr<PictureOp>> PictureOp::create(const InferenceOp& inference, const FlowShape& shape) {
  const FlowModel& model = inference.model();
  const runtime::InferenceSession& session = *model.session;
  const runtime::TensorSpec& output = session.output_spec(0);
  const runtime::Shape dims = output.shape.value_or(runtime::Shape{});
  const bool image_shaped = dims.size() == 4 && (dims[1] == 1 || dims[1] == 3) && dims[2] > 0 && dims[3] > 0;
  if (session.output_count() != 1 || output.rows_vary || !image_shaped) {
    return make_error(
        StatusCode::kInvalidArgument, model.config.path,
        fmt::format(
            ": image2image: output '{}' is [{}]{}; an image-to-image model gives one "
            "output [N, 3, H, W] (or [N, 1, H, W])",
            output.name, fmt::join(dims, ", "),
            session.output_count() != 1 ? fmt::format(" (of {} outputs)", session.output_count()) : ""));
  }
  std::unique_ptr<PictureOp> op(new PictureOp(inference, shape));
  op->params_ = picture_params(model.config);
  op->height_ = static_cast<int>(dims[2]);
  op->width_ = static_cast<int>(dims[3]);
  return op;
}

Status PictureOp::declare(BufferPlan& plan) {
  const ImageBufferSpec host{
      .format = PixelFormat::kRGB8, .width = width_, .height = height_, .place = BufferPlace::kPinnedHost};
  if (shape_.gpu) {
    ImageBufferSpec device = host;
    device.place = BufferPlace::kDevice;
    FOVEA_TRY(plan.images(kPicturesDevice, device));
  }
  return plan.images(kPicturesHost, host);
}

void PictureOp::attach(FrameBatch& batch) const {
  const std::vector<ImageView>& pictures = batch.slot->images(kPicturesHost);
  const std::vector<std::size_t> frames = inferred_frames(batch);
  for (std::size_t k = 0; k < frames.size(); ++k) batch.results[frames[k]].picture = pictures[k];
  if (!shape_.gpu) return;
  const std::vector<ImageView>& device = batch.slot->images(kPicturesDevice);
  for (std::size_t k = 0; k < frames.size(); ++k) batch.results[frames[k]].picture_device = device[k];
}

Status PictureOp::run_cpu(FrameBatch& batch) {
  const std::vector<std::size_t> frames = inferred_frames(batch);
  if (frames.empty()) return Status::ok();
  const std::vector<TensorView> outputs = inference_.outputs(frames.size());
  const std::vector<ImageView>& pictures = batch.slot->images(kPicturesHost);
  FOVEA_TRY(post::run_tensor_to_image_cpu(outputs[0], params_,
                                          std::span<const ImageView>(pictures.data(), frames.size())));
  attach(batch);
  return Status::ok();
}

Status PictureOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  const std::vector<std::size_t> frames = inferred_frames(batch);
  if (frames.empty()) return Status::ok();
  const std::vector<TensorView> outputs = inference_.outputs(frames.size());
  const std::vector<ImageView>& device = batch.slot->images(kPicturesDevice);
  const std::vector<ImageView>& host = batch.slot->images(kPicturesHost);
  FOVEA_TRY(post::run_tensor_to_image_cuda(stream, outputs[0], params_,
                                           std::span<const ImageView>(device.data(), frames.size())));
  for (std::size_t k = 0; k < frames.size(); ++k) {
    FOVEA_CUDA_TRY(cudaMemcpy2DAsync(host[k].planes[0].data, host[k].planes[0].pitch,
                                     device[k].planes[0].data, device[k].planes[0].pitch,
                                     static_cast<std::size_t>(width_) * 3, static_cast<std::size_t>(height_),
                                     cudaMemcpyDeviceToHost, stream));
  }
  // The host views are filled once the batch's GPU work is done: resolve() runs this after it.
  batch.after_gpu.push_back([this](FrameBatch& done) {
    attach(done);
    return Status::ok();
  });
  return Status::ok();
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return make_error(StatusCode::kUnsupported, "pictures on the GPU: this fovea was built without CUDA");
#endif
}

}  // namespace fovea::pipeline
