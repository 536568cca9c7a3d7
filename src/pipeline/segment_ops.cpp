#include "pipeline/segment_ops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "image/bilateral.h"
#include "image/blur_composite.h"
#include "image/color_convert.h"
#include "image/encode_convert.h"
#include "post/class_map.h"
#include "post/class_mask.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#endif

namespace fovea::pipeline {

namespace {

// Frames go to RGB and back to YUV with the same matrix, so colors survive the round trip; BT.601
// limited range is what the demo clip is encoded with and what preprocess assumes by default.
constexpr image::ColorConvertParams kToRgb{PixelFormat::kRGB8, image::ColorMatrix::kBt601,
                                           image::ColorRange::kLimited};
constexpr image::EncodeConvertParams kToEncoder{PixelFormat::kYUV420P, image::ColorMatrix::kBt601,
                                                image::ColorRange::kLimited};

image::ImageBatch first_images(const std::vector<ImageView>& views, std::size_t count) {
  return image::ImageBatch{.images = {views.begin(), views.begin() + static_cast<std::ptrdiff_t>(count)}};
}

image::ImageBatch frame_images(const FrameBatch& batch) {
  image::ImageBatch images;
  for (std::size_t i = 0; i < batch.size(); ++i) images.images.push_back(batch.image(i));
  return images;
}

#if defined(FOVEA_HAVE_CUDA)
// The maps of a slot are one block, image after image: one copy for the batch's first n, from the
// first map's start to the last one's end.
Status copy_class_maps_to_host(const FrameBatch& batch, std::size_t n, cudaStream_t stream) {
  const std::vector<ImageView>& device = batch.slot->images(kClassMaps);
  const auto* first = static_cast<const std::byte*>(device[0].planes[0].data);
  const auto* last = static_cast<const std::byte*>(device[n - 1].planes[0].data);
  const std::size_t bytes =
      static_cast<std::size_t>(last - first) +
      static_cast<std::size_t>(device[0].planes[0].pitch) * static_cast<std::size_t>(device[0].height);
  FOVEA_CUDA_TRY(cudaMemcpyAsync(batch.slot->images(kClassMapsHost)[0].planes[0].data,
                                 device[0].planes[0].data, bytes, cudaMemcpyDeviceToHost, stream));
  return Status::ok();
}

// The GPU path's frames are read after the decoders' copies are done.
Status wait_for_frames(const FrameBatch& batch, cudaStream_t stream) {
  for (const BatchFrame& frame : batch.frames) {
    if (frame.payload.ready != nullptr) FOVEA_CUDA_TRY(cudaStreamWaitEvent(stream, frame.payload.ready, 0));
  }
  return Status::ok();
}
#endif

[[maybe_unused]] Status no_cuda(std::string_view what) {
  return make_error(StatusCode::kUnsupported, what, " on the GPU: this fovea was built without CUDA");
}

}  // namespace

Result<SegmentSetup> plan_segment(const FlowModel& model, const TaskConfig& task, bool encode,
                                  bool maps_on_host) {
  const runtime::TensorSpec& scores = model.session->output_spec(0);
  if (scores.rows_vary || !scores.shape || scores.shape->size() != 4) {
    return make_error(StatusCode::kInvalidArgument, model.config.path,
                      fmt::format(": output '{}' is [{}]; segmentation takes class scores [N, C, H, W]",
                                  scores.name, fmt::join(scores.shape.value_or(runtime::Shape{}), ", ")));
  }
  const std::int64_t classes = (*scores.shape)[1];
  if (classes < 1 || classes > post::kMaxMapClasses) {
    return make_error(StatusCode::kInvalidArgument, model.config.path,
                      fmt::format(": {} classes; segmentation takes 1 to 256", classes));
  }
  SegmentSetup setup{.classes = task.classes,
                     .map_width = static_cast<int>((*scores.shape)[3]),
                     .map_height = static_cast<int>((*scores.shape)[2]),
                     .refine = task.refine_mask,
                     .encode = encode,
                     .maps_on_host = maps_on_host,
                     .blur = image::BlurParams{.kind = image::BlurKind::kGaussian,
                                               .kernel_width = task.blur_kernel,
                                               .kernel_height = task.blur_kernel,
                                               .sigma_x = task.sigma.value_or(0.0),
                                               .sigma_y = task.sigma.value_or(0.0)}};
  if (setup.classes.empty()) {
    for (int c = 1; c < classes; ++c) setup.classes.push_back(c);
  }
  for (int c : setup.classes) {
    if (c < 0 || c >= classes) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("task.classes: class {} is not among the model's {} classes (0..{})", c,
                                    classes, classes - 1));
    }
  }
  return setup;
}

Status FrameRgbOp::declare(BufferPlan& plan) {
  return plan.images(
      kRgbFrames, {.format = PixelFormat::kRGB8, .width = shape_.frame_width, .height = shape_.frame_height});
}

Status FrameRgbOp::run_cpu(FrameBatch& batch) {
  return image::run_color_convert_cpu(frame_images(batch),
                                      first_images(batch.slot->images(kRgbFrames), batch.size()), kToRgb);
}

Status FrameRgbOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  FOVEA_TRY(wait_for_frames(batch, stream));
  return image::run_color_convert_cuda(stream, frame_images(batch),
                                       first_images(batch.slot->images(kRgbFrames), batch.size()), kToRgb);
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return no_cuda("color conversion");
#endif
}

Status ClassMapOp::declare(BufferPlan& plan) {
  return plan.images(kClassMaps,
                     {.format = PixelFormat::kGRAY8, .width = setup_.map_width, .height = setup_.map_height});
}

Status ClassMapOp::run_cpu(FrameBatch& batch) {
  const std::vector<TensorView> scores = inference_.outputs(batch.size());
  return post::run_class_map_cpu(scores.at(0), {},
                                 first_images(batch.slot->images(kClassMaps), batch.size()));
}

Status ClassMapOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  const std::vector<TensorView> scores = inference_.outputs(batch.size());
  return post::run_class_map_cuda(stream, scores.at(0), {},
                                  first_images(batch.slot->images(kClassMaps), batch.size()));
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return no_cuda("class map");
#endif
}

Status SegmentMaskOp::declare(BufferPlan& plan) {
  const ImageBufferSpec mask{
      .format = PixelFormat::kGRAY8, .width = shape_.frame_width, .height = shape_.frame_height};
  FOVEA_TRY(plan.images(kMasks, mask));
  if (setup_.refine) FOVEA_TRY(plan.images(kRefinedMasks, mask));
  if (setup_.maps_on_host && shape_.gpu) {
    FOVEA_TRY(plan.images(kClassMapsHost, {.format = PixelFormat::kGRAY8,
                                           .width = setup_.map_width,
                                           .height = setup_.map_height,
                                           .place = BufferPlace::kPinnedHost}));
  }
  return Status::ok();
}

Result<std::vector<post::MaskMapping>> class_map_mappings(const FlowModel& model, const SegmentSetup& setup,
                                                          const image::ImageBatch& frames) {
  FOVEA_ASSIGN_OR_RETURN(const image::PreprocessPlan plan, image::plan_preprocess(frames, model.preprocess));
  std::vector<post::MaskMapping> mappings;
  for (std::size_t i = 0; i < plan.placements.size(); ++i) {
    const image::ResizePlacement& p = plan.placements[i];
    const ImageView& frame = frames.images[i];
    mappings.push_back(post::preprocess_mask_mapping(
        image::Roi{0, 0, frame.width, frame.height}, p.scale_x, p.scale_y, static_cast<float>(p.offset_x),
        static_cast<float>(p.offset_y), model.input_width(), model.input_height(), setup.map_width,
        setup.map_height));
  }
  return mappings;
}

Result<post::ClassMaskParams> SegmentMaskOp::mask_params(const FrameBatch& batch) const {
  post::ClassMaskParams params{.classes = setup_.classes,
                               .interpolation = post::MaskInterpolation::kBilinear};
  FOVEA_ASSIGN_OR_RETURN(params.mappings, class_map_mappings(model_, setup_, frame_images(batch)));
  return params;
}

// Each frame's share of target-class pixels in its class map (host memory by now).
void SegmentMaskOp::count_target_pixels(FrameBatch& batch) const {
  std::vector<bool> in_set(256, false);
  for (int c : setup_.classes) in_set[static_cast<std::size_t>(c)] = true;
  const std::vector<ImageView>& maps = batch.slot->images(shape_.gpu ? kClassMapsHost : kClassMaps);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const ImageView& map = maps[i];
    std::uint64_t selected = 0;
    for (int y = 0; y < map.height; ++y) {
      const std::uint8_t* row = map.row(0, y);
      for (int x = 0; x < map.width; ++x) selected += in_set[row[x]] ? 1u : 0u;
    }
    const double pixels = static_cast<double>(map.width) * map.height;
    batch.results[i].target_fraction = pixels > 0 ? static_cast<double>(selected) / pixels : 0.0;
  }
}

Status SegmentMaskOp::run_cpu(FrameBatch& batch) {
  const std::size_t n = batch.size();
  FOVEA_ASSIGN_OR_RETURN(const post::ClassMaskParams params, mask_params(batch));
  const image::ImageBatch masks = first_images(batch.slot->images(kMasks), n);
  FOVEA_TRY(post::run_class_mask_cpu(first_images(batch.slot->images(kClassMaps), n), params, masks));
  if (setup_.refine) {
    // The CV-CUDA sample's refinement: the upscaled mask follows the frame's own edges.
    FOVEA_TRY(image::run_joint_bilateral_cpu(masks, first_images(batch.slot->images(kRgbFrames), n),
                                             first_images(batch.slot->images(kRefinedMasks), n), {}));
  }
  if (setup_.maps_on_host) count_target_pixels(batch);
  return Status::ok();
}

Status SegmentMaskOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  const std::size_t n = batch.size();
  FOVEA_ASSIGN_OR_RETURN(const post::ClassMaskParams params, mask_params(batch));
  const image::ImageBatch masks = first_images(batch.slot->images(kMasks), n);
  FOVEA_TRY(
      post::run_class_mask_cuda(stream, first_images(batch.slot->images(kClassMaps), n), params, masks));
  if (setup_.refine) {
    FOVEA_TRY(image::run_joint_bilateral_cuda(stream, masks, first_images(batch.slot->images(kRgbFrames), n),
                                              first_images(batch.slot->images(kRefinedMasks), n), {}));
  }
  if (setup_.maps_on_host) {
    FOVEA_TRY(copy_class_maps_to_host(batch, n, stream));
    batch.after_gpu.push_back([this](FrameBatch& done) {
      count_target_pixels(done);
      return Status::ok();
    });
  }
  return Status::ok();
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return no_cuda("mask");
#endif
}

Status LabelMapOp::declare(BufferPlan& plan) {
  if (!shape_.gpu) return Status::ok();  // the CPU path's maps are in host memory already
  return plan.images(kClassMapsHost, {.format = PixelFormat::kGRAY8,
                                      .width = setup_.map_width,
                                      .height = setup_.map_height,
                                      .place = BufferPlace::kPinnedHost});
}

void LabelMapOp::attach(FrameBatch& batch, const std::vector<ImageView>& maps,
                        const std::vector<post::MaskMapping>& mappings) const {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const ImageView& frame = batch.image(i);
    batch.results[i].class_map = FrameClassMap{.map = maps[i], .mapping = mappings[i]};
    batch.results[i].target_fraction =
        post::label_fraction(maps[i], mappings[i], frame.width, frame.height, setup_.classes);
  }
}

Status LabelMapOp::run_cpu(FrameBatch& batch) {
  FOVEA_ASSIGN_OR_RETURN(const std::vector<post::MaskMapping> mappings,
                         class_map_mappings(model_, setup_, frame_images(batch)));
  attach(batch, batch.slot->images(kClassMaps), mappings);
  return Status::ok();
}

Status LabelMapOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  FOVEA_ASSIGN_OR_RETURN(std::vector<post::MaskMapping> mappings,
                         class_map_mappings(model_, setup_, frame_images(batch)));
  FOVEA_TRY(copy_class_maps_to_host(batch, batch.size(), stream));
  // The host maps are filled once the batch's GPU work is done: resolve() runs this after it.
  batch.after_gpu.push_back([this, mappings = std::move(mappings)](FrameBatch& done) {
    attach(done, done.slot->images(kClassMapsHost), mappings);
    return Status::ok();
  });
  return Status::ok();
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return no_cuda("label map");
#endif
}

Status CompositeOp::declare(BufferPlan& plan) {
  const int w = shape_.frame_width, h = shape_.frame_height;
  FOVEA_TRY(plan.images(kComposited, {.format = PixelFormat::kRGB8, .width = w, .height = h}));
  if (!setup_.encode) return Status::ok();
  if (shape_.gpu)
    FOVEA_TRY(plan.images(kYuvScratch, {.format = PixelFormat::kYUV420P, .width = w, .height = h}));
  return plan.images(
      kYuvHost,
      {.format = PixelFormat::kYUV420P, .width = w, .height = h, .place = BufferPlace::kPinnedHost});
}

Status CompositeOp::run_cpu(FrameBatch& batch) {
  const std::size_t n = batch.size();
  const image::ImageBatch composited = first_images(batch.slot->images(kComposited), n);
  FOVEA_TRY(image::run_blur_composite_cpu(
      first_images(batch.slot->images(kRgbFrames), n),
      first_images(batch.slot->images(setup_.refine ? kRefinedMasks : kMasks), n), composited, setup_.blur));
  return setup_.encode ? image::run_rgb_to_yuv_for_encode_cpu(
                             composited, first_images(batch.slot->images(kYuvHost), n), kToEncoder)
                       : Status::ok();
}

Status CompositeOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  const std::size_t n = batch.size();
  const image::ImageBatch composited = first_images(batch.slot->images(kComposited), n);
  FOVEA_TRY(image::run_blur_composite_cuda(
      stream, first_images(batch.slot->images(kRgbFrames), n),
      first_images(batch.slot->images(setup_.refine ? kRefinedMasks : kMasks), n), composited, setup_.blur));
  if (!setup_.encode) return Status::ok();
  return image::run_rgb_to_yuv_for_encode_cuda(stream, composited,
                                               first_images(batch.slot->images(kYuvScratch), n),
                                               first_images(batch.slot->images(kYuvHost), n), kToEncoder);
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return no_cuda("composite");
#endif
}

}  // namespace fovea::pipeline
