#include "pipeline/segmentation_ops.h"

#include <cstring>

#include <fmt/format.h>

#include "core/log.h"
#include "image/bilateral.h"
#include "image/blur_composite.h"
#include "image/color_convert.h"
#include "image/encode_convert.h"
#include "post/class_map.h"
#include "post/class_mask.h"
#include "runtime/onnx_loader.h"

#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_check.h"
#include "core/cuda_raii.h"
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

// The first `count` items of a dense [batch, C, H, W] tensor (the model's input and scores, whose
// rank load_model checks), as core's contiguous view.
TensorView first_items(const void* data, DataType dtype, MemoryKind memory, const runtime::Shape& shape,
                       std::size_t count) {
  return contiguous_tensor(const_cast<void*>(data), dtype, memory,
                           {static_cast<std::int64_t>(count), shape[1], shape[2], shape[3]});
}

}  // namespace

struct SegmentationOps::Streams {
#if defined(FOVEA_HAVE_CUDA)
  CudaStream preprocess, inference, postprocess, composite;
#endif
};

SegmentationOps::SegmentationOps(const SegmentationSettings& settings) : settings_(settings) {}
SegmentationOps::~SegmentationOps() = default;

Result<std::unique_ptr<SegmentationOps>> SegmentationOps::create(const SegmentationSettings& settings) {
  if (settings.batch_size < 1 || settings.frame_width < 2 || settings.frame_height < 2 ||
      settings.slots < 1) {
    return make_error(
        StatusCode::kInvalidArgument,
        fmt::format("segmentation: batch size {}, frame size {}x{} and {} slots: each must be positive",
                    settings.batch_size, settings.frame_width, settings.frame_height, settings.slots));
  }
#if !defined(FOVEA_HAVE_CUDA)
  if (settings.gpu) {
    return make_error(StatusCode::kUnsupported, "segmentation on the GPU: this fovea was built without CUDA");
  }
#endif
  std::unique_ptr<SegmentationOps> ops(new SegmentationOps(settings));
  ops->streams_ = std::make_unique<Streams>();
#if defined(FOVEA_HAVE_CUDA)
  if (settings.gpu) {
    FOVEA_CUDA_TRY(cudaSetDevice(settings.device));
    // The model's long kernels run at normal priority; the short stages around it at high
    // priority, so that they slot in between the model's kernels instead of waiting for a whole
    // inference to drain (which would leave the next batch's input late and the GPU idle).
    FOVEA_ASSIGN_OR_RETURN(ops->streams_->inference, CudaStream::create());
    for (CudaStream* stream :
         {&ops->streams_->preprocess, &ops->streams_->postprocess, &ops->streams_->composite}) {
      FOVEA_ASSIGN_OR_RETURN(*stream, CudaStream::create(CudaStream::Priority::kHigh));
    }
  }
#endif
  FOVEA_TRY(ops->load_model());
  const TaskConfig& task = settings.task;
  ops->blur_params_ = image::BlurParams{.kind = image::BlurKind::kGaussian,
                                        .kernel_width = task.blur_kernel,
                                        .kernel_height = task.blur_kernel,
                                        .sigma_x = task.sigma.value_or(0.0),
                                        .sigma_y = task.sigma.value_or(0.0)};
  FOVEA_TRY(ops->allocate_slots());
  return ops;
}

std::string SegmentationOps::description() const {
  const bool half = model_->input_spec(0).dtype == DataType::kFloat16 ||
                    settings_.model.precision == runtime::Precision::kFloat16;
  return model_->device_description() + ", model " + settings_.model.path + " at " +
         std::to_string(input_width()) + "x" + std::to_string(input_height()) + " batch " +
         std::to_string(settings_.batch_size) + (settings_.gpu && half ? " fp16" : " fp32");
}

Status SegmentationOps::load_model() {
  const ModelConfig& config = settings_.model;
  FOVEA_ASSIGN_OR_RETURN(runtime::Model loaded, runtime::load_onnx(config.path));
  const runtime::Graph& graph = loaded.graph;
  if (graph.inputs.size() != 1 || graph.outputs.empty()) {
    return make_error(StatusCode::kInvalidArgument, config.path,
                      fmt::format(": a segmentation model takes one image input (it has {}) and gives class "
                                  "scores first (it has {} outputs)",
                                  graph.inputs.size(), graph.outputs.size()));
  }
  const runtime::Value& input = graph.value(graph.inputs[0]);
  if (config.input_name && *config.input_name != input.name) {
    return make_error(StatusCode::kInvalidArgument, config.path, ": model.input_name '", *config.input_name,
                      "': the model's input is '", input.name, "'");
  }
  const std::optional<runtime::Dims>& dims = input.type.dims;
  if (!dims || dims->size() != 4 || ((*dims)[1].known() && (*dims)[1].value != 3)) {
    return make_error(StatusCode::kInvalidArgument, config.path, ": input '", input.name, "' is ",
                      dims ? runtime::dims_string(*dims) : std::string("of unknown rank"),
                      "; a segmentation model takes [N, 3, H, W] images");
  }
  // The input size: the model's own when it fixes it, else the configuration's, else the frames'.
  int height = config.input_height.value_or(settings_.frame_height);
  int width = config.input_width.value_or(settings_.frame_width);
  if ((*dims)[2].known() && (*dims)[3].known()) {
    const auto fixed_h = static_cast<int>((*dims)[2].value), fixed_w = static_cast<int>((*dims)[3].value);
    if (config.input_width && (fixed_w != width || fixed_h != height)) {
      return make_error(
          StatusCode::kInvalidArgument, config.path,
          fmt::format(": model.input_width/input_height {}x{} differ from the model's fixed input "
                      "size {}x{}",
                      width, height, fixed_w, fixed_h));
    }
    width = fixed_w;
    height = fixed_h;
  }
  runtime::SessionOptions options;
  if (settings_.gpu) {
    options.device = runtime::Device::kCuda;
    options.precision = config.precision;
    // In fp16 the preprocess writes float16 and the class map reads float16 scores: no Casts.
    options.float16_interface = config.precision == runtime::Precision::kFloat16;
    if (config.engine_cache) options.engine_cache = *config.engine_cache;
  } else if (config.precision == runtime::Precision::kFloat16) {
    // fp16 is the default, so this is every CPU run: not worth more than a debug line.
    log_debug("model.precision fp16 applies to the GPU; the CPU path runs the model in fp32");
  }
  const runtime::Shape input_shape = {settings_.batch_size, 3, height, width};
  FOVEA_ASSIGN_OR_RETURN(model_,
                         runtime::InferenceSession::create(graph, {{input.name, input_shape}}, options));
  const runtime::TensorSpec& scores = model_->output_spec(0);
  if (scores.rows_vary || !scores.shape || scores.shape->size() != 4) {
    return make_error(StatusCode::kInvalidArgument, config.path, ": output '", scores.name,
                      "' must be class scores [N, C, H, W]");
  }
  const std::int64_t classes = (*scores.shape)[1];
  if (classes < 1 || classes > post::kMaxMapClasses) {
    return make_error(StatusCode::kInvalidArgument, config.path,
                      fmt::format(": {} classes; segmentation takes 1 to 256", classes));
  }
  map_height_ = static_cast<int>((*scores.shape)[2]);
  map_width_ = static_cast<int>((*scores.shape)[3]);
  classes_ = settings_.task.classes;
  if (classes_.empty()) {
    for (int c = 1; c < classes; ++c) classes_.push_back(c);
  }
  for (int c : classes_) {
    if (c < 0 || c >= classes) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("task.classes: class {} is not among the model's {} classes (0..{})", c,
                                    classes, classes - 1));
    }
  }
  preprocess_params_ = image::PreprocessParams{
      .width = width,
      .height = height,
      .layout = image::TensorLayout::kNCHW,
      .dtype = model_->input_spec(0).dtype,
      .bgr = config.color_order == ColorOrder::kBgr,
      .fit = config.keep_aspect ? image::ResizeFit::kLetterbox : image::ResizeFit::kStretch,
      .mean = config.mean,
      .std = config.std};
  return Status::ok();
}

Status SegmentationOps::allocate_slots() {
  const int batch = settings_.batch_size;
  const MemoryKind work_memory = settings_.gpu ? MemoryKind::kDevice : MemoryKind::kHost;
  const MemoryKind host_memory = settings_.gpu ? MemoryKind::kPinnedHost : MemoryKind::kHost;
  const auto slots = static_cast<std::size_t>(settings_.slots);

  struct ImageSet {
    std::vector<ImageView> BatchBuffers::*views;
    PixelFormat format;
    int width, height;
    MemoryKind memory;
    bool wanted;
  };
  const int fw = settings_.frame_width, fh = settings_.frame_height;
  const bool refine = settings_.task.refine_mask;
  const bool encode = settings_.encode_outputs;
  const std::vector<ImageSet> sets = {
      {&BatchBuffers::class_maps, PixelFormat::kGRAY8, map_width_, map_height_, work_memory, true},
      {&BatchBuffers::masks, PixelFormat::kGRAY8, fw, fh, work_memory, true},
      {&BatchBuffers::refined_masks, PixelFormat::kGRAY8, fw, fh, work_memory, refine},
      {&BatchBuffers::rgb, PixelFormat::kRGB8, fw, fh, work_memory, true},
      {&BatchBuffers::composited, PixelFormat::kRGB8, fw, fh, work_memory, true},
      {&BatchBuffers::yuv_device, PixelFormat::kYUV420P, fw, fh, work_memory, encode && settings_.gpu},
      {&BatchBuffers::yuv_host, PixelFormat::kYUV420P, fw, fh, host_memory, encode},
      {&BatchBuffers::class_maps_host, PixelFormat::kGRAY8, map_width_, map_height_, host_memory,
       settings_.class_maps_on_host && settings_.gpu},
  };
  std::vector<std::unique_ptr<BatchBuffers>> buffers;
  for (std::size_t s = 0; s < slots; ++s) buffers.push_back(std::make_unique<BatchBuffers>());

  const auto add_pool = [&](const std::string& name, MemoryKind memory,
                            std::size_t bytes) -> Result<BufferPool*> {
    FOVEA_ASSIGN_OR_RETURN(BufferPool pool, BufferPool::create("segmentation " + name, memory, bytes, slots));
    pools_.push_back(std::move(pool));
    return &pools_.back();
  };
  pools_.reserve(sets.size() + 1);
  const runtime::TensorSpec& input = model_->input_spec(0);
  const std::size_t tensor_bytes =
      static_cast<std::size_t>(runtime::element_count(*input.shape)) * data_type_size(input.dtype);
  FOVEA_ASSIGN_OR_RETURN(BufferPool * tensor_pool, add_pool("input tensor", work_memory, tensor_bytes));
  for (auto& slot : buffers) {
    FOVEA_ASSIGN_OR_RETURN(PooledBuffer block, tensor_pool->acquire());
    slot->tensor = block.data();
    // Zeroed once: a partial batch leaves the tail of the tensor as it is, and it must be numbers.
#if defined(FOVEA_HAVE_CUDA)
    if (settings_.gpu) {
      FOVEA_CUDA_TRY(cudaMemset(block.data(), 0, tensor_bytes));
    }
#endif
    if (!settings_.gpu) std::memset(block.data(), 0, tensor_bytes);
    slot->blocks.push_back(std::move(block));
  }
  for (const ImageSet& set : sets) {
    if (!set.wanted) continue;
    FOVEA_ASSIGN_OR_RETURN(ImageAllocation allocation,
                           plan_image_allocation(set.format, set.width, set.height));
    if (set.views == &BatchBuffers::class_maps) class_map_image_bytes_ = allocation.total_bytes;
    FOVEA_ASSIGN_OR_RETURN(BufferPool * pool,
                           add_pool(std::string(pixel_format_name(set.format)), set.memory,
                                    allocation.total_bytes * static_cast<std::size_t>(batch)));
    for (auto& slot : buffers) {
      FOVEA_ASSIGN_OR_RETURN(PooledBuffer block, pool->acquire());
      for (int i = 0; i < batch; ++i) {
        void* base =
            static_cast<std::byte*>(block.data()) + allocation.total_bytes * static_cast<std::size_t>(i);
        ((*slot).*(set.views))
            .push_back(image_view_in(base, allocation, set.format, set.width, set.height, set.memory));
      }
      slot->blocks.push_back(std::move(block));
    }
  }
  for (auto& slot : buffers) {
    if (!settings_.gpu || !settings_.class_maps_on_host) {
      slot->class_maps_host = slot->class_maps;  // the CPU path's maps are host memory already
    }
#if defined(FOVEA_HAVE_CUDA)
    if (settings_.gpu) {
      cudaEvent_t event = nullptr;
      FOVEA_CUDA_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
      slot->ready =
          std::shared_ptr<void>(event, [](void* e) { cudaEventDestroy(static_cast<cudaEvent_t>(e)); });
    }
#endif
  }
#if defined(FOVEA_HAVE_CUDA)
  if (settings_.gpu) {
    // The tensors' cudaMemset runs on the legacy stream, which the stages' non-blocking streams are
    // not ordered after.
    FOVEA_CUDA_TRY(cudaDeviceSynchronize());
  }
#endif
  slots_ = std::make_unique<SlotPool<BatchBuffers>>(std::move(buffers));
  return Status::ok();
}

// GPU: the stage's stream waits for the previous stage's work on this batch (its ready event).
Status SegmentationOps::begin(const SegmentBatch& batch, void* stream) const {
#if defined(FOVEA_HAVE_CUDA)
  if (settings_.gpu) {
    FOVEA_CUDA_TRY(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream),
                                       static_cast<cudaEvent_t>(batch.buffers->ready.get()), 0));
  }
#endif
  static_cast<void>(batch);
  static_cast<void>(stream);
  return Status::ok();
}

// GPU: the batch's ready event now marks the end of this stage's work.
Status SegmentationOps::end(const SegmentBatch& batch, void* stream) const {
#if defined(FOVEA_HAVE_CUDA)
  if (settings_.gpu) {
    FOVEA_CUDA_TRY(cudaEventRecord(static_cast<cudaEvent_t>(batch.buffers->ready.get()),
                                   static_cast<cudaStream_t>(stream)));
  }
#endif
  static_cast<void>(batch);
  static_cast<void>(stream);
  return Status::ok();
}

Status SegmentationOps::preprocess(SegmentBatch& batch) {
  BatchBuffers& buffers = *batch.buffers;
  const std::size_t n = batch.frames.size();
  image::ImageBatch frames;
  for (const MuxFrame<SourceFrame>& frame : batch.frames) frames.images.push_back(frame.payload.frame.image);
  FOVEA_ASSIGN_OR_RETURN(image::PreprocessPlan plan, image::plan_preprocess(frames, preprocess_params_));
  buffers.placements = plan.placements;
  const runtime::TensorSpec& input = model_->input_spec(0);
  const TensorView tensor = first_items(
      buffers.tensor, input.dtype, settings_.gpu ? MemoryKind::kDevice : MemoryKind::kHost, *input.shape, n);
  const image::ImageBatch rgb = first_images(buffers.rgb, n);
  if (!settings_.gpu) {
    FOVEA_TRACE_RANGE("preprocess", static_cast<std::int64_t>(batch.number));
    FOVEA_TRY(image::run_preprocess_cpu(frames, preprocess_params_, tensor));
    return image::run_color_convert_cpu(frames, rgb, kToRgb);
  }
#if defined(FOVEA_HAVE_CUDA)
  cudaStream_t stream = streams_->preprocess.get();
  FOVEA_TRACE_RANGE("preprocess", static_cast<std::int64_t>(batch.number), stream);
  for (const MuxFrame<SourceFrame>& frame : batch.frames) {
    if (frame.payload.ready != nullptr) FOVEA_CUDA_TRY(cudaStreamWaitEvent(stream, frame.payload.ready, 0));
  }
  FOVEA_TRY(image::run_preprocess_cuda(stream, frames, preprocess_params_, tensor));
  FOVEA_TRY(image::run_color_convert_cuda(stream, frames, rgb, kToRgb));
  return end(batch, stream);
#else
  return Status::ok();
#endif
}

Status SegmentationOps::infer(SegmentBatch& batch) {
  BatchBuffers& buffers = *batch.buffers;
  const std::size_t n = batch.frames.size();
  const image::ImageBatch class_maps = first_images(buffers.class_maps, n);
  const auto number = static_cast<std::int64_t>(batch.number);
  if (!settings_.gpu) {
    std::vector<runtime::Tensor> outputs;
    {
      FOVEA_TRACE_RANGE("inference", number);
      const runtime::TensorSpec& input = model_->input_spec(0);
      // The slot's tensor itself, borrowed: the CPU executor reads it in place.
      FOVEA_ASSIGN_OR_RETURN(
          outputs,
          model_->run_host(nullptr, {runtime::Tensor::borrow(input.dtype, *input.shape, buffers.tensor)}));
    }
    FOVEA_TRACE_RANGE("postprocess", number);
    const TensorView scores =
        first_items(outputs[0].raw(), outputs[0].dtype(), MemoryKind::kHost, outputs[0].shape(), n);
    return post::run_class_map_cpu(scores, {}, class_maps);
  }
#if defined(FOVEA_HAVE_CUDA)
  cudaStream_t stream = streams_->inference.get();
  FOVEA_TRY(begin(batch, stream));
  {
    FOVEA_TRACE_RANGE("inference", number, stream);
    // The session's input lives at a fixed address (its CUDA graph reads it there); the slot's
    // tensor is copied in so that preprocess can fill the next batch's slot meanwhile.
    FOVEA_TRY(model_->copy_input(stream, 0, buffers.tensor, static_cast<std::int64_t>(n)));
    FOVEA_TRY(model_->run(stream));
  }
  FOVEA_TRACE_RANGE("postprocess", number, stream);
  const runtime::Tensor& output = model_->output(0);
  const TensorView scores = first_items(output.raw(), output.dtype(), MemoryKind::kDevice, output.shape(), n);
  FOVEA_TRY(post::run_class_map_cuda(stream, scores, {}, class_maps));
  return end(batch, stream);
#else
  return Status::ok();
#endif
}

Status SegmentationOps::postprocess(SegmentBatch& batch) {
  BatchBuffers& buffers = *batch.buffers;
  const std::size_t n = batch.frames.size();
  post::ClassMaskParams mask_params{.classes = classes_, .interpolation = post::MaskInterpolation::kBilinear};
  for (const image::ResizePlacement& p : buffers.placements) {
    mask_params.mappings.push_back(post::preprocess_mask_mapping(
        image::Roi{0, 0, settings_.frame_width, settings_.frame_height}, p.scale_x, p.scale_y,
        static_cast<float>(p.offset_x), static_cast<float>(p.offset_y), input_width(), input_height(),
        map_width_, map_height_));
  }
  const image::ImageBatch class_maps = first_images(buffers.class_maps, n);
  const image::ImageBatch masks = first_images(buffers.masks, n);
  const image::ImageBatch rgb = first_images(buffers.rgb, n);
  const image::ImageBatch refined = first_images(buffers.refined_masks, settings_.task.refine_mask ? n : 0);
  // The CV-CUDA sample's refinement: the upscaled mask follows the frame's own edges.
  const image::BilateralParams refine_params;
  const auto number = static_cast<std::int64_t>(batch.number);
  if (!settings_.gpu) {
    FOVEA_TRACE_RANGE("postprocess", number);
    FOVEA_TRY(post::run_class_mask_cpu(class_maps, mask_params, masks));
    return settings_.task.refine_mask ? image::run_joint_bilateral_cpu(masks, rgb, refined, refine_params)
                                      : Status::ok();
  }
#if defined(FOVEA_HAVE_CUDA)
  cudaStream_t stream = streams_->postprocess.get();
  FOVEA_TRY(begin(batch, stream));
  FOVEA_TRACE_RANGE("postprocess", number, stream);
  FOVEA_TRY(post::run_class_mask_cuda(stream, class_maps, mask_params, masks));
  if (settings_.task.refine_mask) {
    FOVEA_TRY(image::run_joint_bilateral_cuda(stream, masks, rgb, refined, refine_params));
  }
  if (settings_.class_maps_on_host) {
    // The maps of a slot are one block, image after image: one copy for the batch.
    const std::size_t bytes = n * class_map_image_bytes_;
    FOVEA_CUDA_TRY(cudaMemcpyAsync(buffers.class_maps_host[0].planes[0].data,
                                   buffers.class_maps[0].planes[0].data, bytes, cudaMemcpyDeviceToHost,
                                   stream));
  }
  return end(batch, stream);
#else
  return Status::ok();
#endif
}

Status SegmentationOps::composite(SegmentBatch& batch) {
  BatchBuffers& buffers = *batch.buffers;
  const std::size_t n = batch.frames.size();
  const image::ImageBatch rgb = first_images(buffers.rgb, n);
  const image::ImageBatch mask =
      first_images(settings_.task.refine_mask ? buffers.refined_masks : buffers.masks, n);
  const image::ImageBatch composited = first_images(buffers.composited, n);
  const auto number = static_cast<std::int64_t>(batch.number);
  if (!settings_.gpu) {
    FOVEA_TRACE_RANGE("composite", number);
    FOVEA_TRY(image::run_blur_composite_cpu(rgb, mask, composited, blur_params_));
    return settings_.encode_outputs ? image::run_rgb_to_yuv_for_encode_cpu(
                                          composited, first_images(buffers.yuv_host, n), kToEncoder)
                                    : Status::ok();
  }
#if defined(FOVEA_HAVE_CUDA)
  cudaStream_t stream = streams_->composite.get();
  FOVEA_TRY(begin(batch, stream));
  FOVEA_TRACE_RANGE("composite", number, stream);
  FOVEA_TRY(image::run_blur_composite_cuda(stream, rgb, mask, composited, blur_params_));
  if (settings_.encode_outputs) {
    FOVEA_TRY(image::run_rgb_to_yuv_for_encode_cuda(stream, composited, first_images(buffers.yuv_device, n),
                                                    first_images(buffers.yuv_host, n), kToEncoder));
  }
  return end(batch, stream);
#else
  return Status::ok();
#endif
}

Status SegmentationOps::wait_for_outputs(const SegmentBatch& batch) {
#if defined(FOVEA_HAVE_CUDA)
  if (settings_.gpu) {
    FOVEA_CUDA_TRY(cudaEventSynchronize(static_cast<cudaEvent_t>(batch.buffers->ready.get())));
  }
#endif
  static_cast<void>(batch);
  return Status::ok();
}

}  // namespace fovea::pipeline
