#include "pipeline/model_ops.h"

#include <fmt/format.h>

#include "core/log.h"
#include "post/non_finite.h"
#include "runtime/onnx_loader.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "core/pool.h"
#endif

namespace fovea::pipeline {

namespace {

// A dense row-major view of `shape` with its first dimension cut to `items`.
TensorView first_items(void* data, DataType dtype, MemoryKind memory, const runtime::Shape& shape,
                       std::size_t items) {
  TensorView view{.data = data, .dtype = dtype, .memory = memory, .rank = static_cast<int>(shape.size())};
  std::int64_t stride = 1;
  for (int d = view.rank - 1; d >= 0; --d) {
    const auto i = static_cast<std::size_t>(d);
    view.shape[i] = d == 0 ? static_cast<std::int64_t>(items) : shape[i];
    view.strides[i] = stride;
    stride *= shape[i];
  }
  return view;
}

image::ImageBatch inferred_images(const FrameBatch& batch) {
  image::ImageBatch images;
  for (std::size_t i : inferred_frames(batch)) images.images.push_back(batch.image(i));
  return images;
}

// The input size the model runs at: its own when its input fixes one (a configured size must then
// agree), else the configuration's, else the frames'.
Result<std::pair<int, int>> input_size(const ModelConfig& config, const runtime::Dims& dims,
                                       const FlowShape& shape) {
  int width = config.input_width.value_or(shape.frame_width);
  int height = config.input_height.value_or(shape.frame_height);
  if (dims[2].known() && dims[3].known()) {
    const auto fixed_h = static_cast<int>(dims[2].value), fixed_w = static_cast<int>(dims[3].value);
    if (config.input_width && (fixed_w != width || fixed_h != height)) {
      return make_error(
          StatusCode::kInvalidArgument, config.path,
          fmt::format(": input_width/input_height {}x{} differ from the model's fixed input size {}x{}",
                      width, height, fixed_w, fixed_h));
    }
    width = fixed_w;
    height = fixed_h;
  }
  if (width <= 0 || height <= 0) {
    // An image flow's frames have no common size to fall back on.
    return make_error(StatusCode::kInvalidArgument, config.path,
                      ": the model's input has no fixed height and width; give input_width and input_height "
                      "(--size WxH)");
  }
  return std::pair{width, height};
}

}  // namespace

std::string FlowModel::description() const {
  return fmt::format("model {} at {}x{} batch {} {}", config.path, input_width(), input_height(), batch_size,
                     runtime::precision_name(session->options().precision));
}

Result<std::unique_ptr<FlowModel>> open_flow_model(const ModelConfig& config, int batch_size,
                                                   const FlowShape& shape) {
  FOVEA_ASSIGN_OR_RETURN(runtime::Model loaded, runtime::load_onnx(config.path));
  const runtime::Graph& graph = loaded.graph;
  if (graph.inputs.size() != 1 || graph.outputs.empty()) {
    return make_error(
        StatusCode::kInvalidArgument, config.path,
        fmt::format(": an image model takes one input (it has {}) and gives at least one output "
                    "(it has {})",
                    graph.inputs.size(), graph.outputs.size()));
  }
  const runtime::Value& input = graph.value(graph.inputs[0]);
  if (config.input_name && *config.input_name != input.name) {
    return make_error(StatusCode::kInvalidArgument, config.path, ": input_name '", *config.input_name,
                      "': the model's input is '", input.name, "'");
  }
  const std::optional<runtime::Dims>& dims = input.type.dims;
  if (!dims || dims->size() != 4 || ((*dims)[1].known() && (*dims)[1].value != 3)) {
    return make_error(StatusCode::kInvalidArgument, config.path, ": input '", input.name, "' is ",
                      dims ? runtime::dims_string(*dims) : std::string("of unknown rank"),
                      "; an image model takes [N, 3, H, W]");
  }
  if ((*dims)[0].known() && (*dims)[0].value != batch_size) {
    return make_error(
        StatusCode::kInvalidArgument, config.path,
        fmt::format(": input '{}' fixes the batch at {}, the flow batches {} frames (mux.batch_size, "
                    "--batch); export the model with a dynamic batch or match it",
                    input.name, (*dims)[0].value, batch_size));
  }
  FOVEA_ASSIGN_OR_RETURN(const auto size, input_size(config, *dims, shape));
  runtime::SessionOptions options;
  if (shape.gpu) {
    options.device = runtime::Device::kCuda;
    options.precision = config.precision;
    // In fp16 the preprocess writes float16 and the post ops read float16 outputs: no Casts.
    options.float16_interface = config.precision == runtime::Precision::kFloat16;
    if (config.engine_cache) options.engine_cache = *config.engine_cache;
  } else if (config.precision == runtime::Precision::kInt8) {
    // The CPU runs the int8 plan as the reference does (quantize/dequantize pairs): the accuracy a
    // user checks there is the GPU's.
    options.precision = runtime::Precision::kInt8;
  } else if (config.precision == runtime::Precision::kFloat16) {
    // fp16 is the default, so this is every CPU run: not worth more than a debug line.
    log_debug("{}: precision fp16 applies to the GPU; the CPU path runs the model in fp32", config.path);
  }
  auto model = std::make_unique<FlowModel>();
  model->config = config;
  model->batch_size = batch_size;
  model->tensor_buffer = "tensor " + config.name;
  const runtime::Shape input_shape = {batch_size, 3, size.second, size.first};
  if (config.calibration) options.calibration = *config.calibration;
  FOVEA_ASSIGN_OR_RETURN(model->session,
                         runtime::InferenceSession::create(graph, {{input.name, input_shape}}, options));
  model->preprocess = image::PreprocessParams{
      .width = size.first,
      .height = size.second,
      .layout = image::TensorLayout::kNCHW,
      .dtype = model->session->input_spec(0).dtype,
      .bgr = config.color_order == ColorOrder::kBgr,
      .fit = config.keep_aspect ? image::ResizeFit::kLetterbox : image::ResizeFit::kStretch,
      .mean = config.mean,
      .std = config.std};
  return model;
}

std::vector<std::size_t> inferred_frames(const FrameBatch& batch) {
  std::vector<std::size_t> frames;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (batch.results[i].inferred) frames.push_back(i);
  }
  return frames;
}

Status GateOp::run_host(FrameBatch& batch) {
  // By the frame's own index, so each source keeps its rhythm whatever the batches mix; a frame the
  // source dropped before the mux leaves a gap, as it would in DeepStream's per-source count.
  const auto period = static_cast<std::int64_t>(interval_) + 1;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    batch.results[i].inferred = batch.frames[i].index % period == 0;
  }
  return Status::ok();
}

Status PreprocessOp::declare(BufferPlan& plan) {
  const runtime::TensorSpec& input = model_.session->input_spec(0);
  // Zeroed: a partial batch leaves the tensor's tail as it was, and it must hold numbers.
  return plan.bytes(
      model_.tensor_buffer,
      {.bytes = static_cast<std::size_t>(runtime::element_count(*input.shape)) * data_type_size(input.dtype),
       .place = BufferPlace::kDevice,
       .zeroed = true});
}

Status PreprocessOp::run_cpu(FrameBatch& batch) {
  const image::ImageBatch frames = inferred_images(batch);
  if (frames.images.empty()) return Status::ok();
  const runtime::TensorSpec& input = model_.session->input_spec(0);
  const TensorView tensor = first_items(batch.slot->bytes(model_.tensor_buffer), input.dtype,
                                        MemoryKind::kHost, *input.shape, frames.images.size());
  return image::run_preprocess_cpu(frames, model_.preprocess, tensor);
}

Status PreprocessOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  // Every frame's decode, not only the inferred ones': the stages after this one read the frames
  // through the batch's ready event, which this stream records.
  for (const BatchFrame& frame : batch.frames) {
    if (frame.payload.ready != nullptr) FOVEA_CUDA_TRY(cudaStreamWaitEvent(stream, frame.payload.ready, 0));
  }
  const image::ImageBatch frames = inferred_images(batch);
  if (frames.images.empty()) return Status::ok();
  const runtime::TensorSpec& input = model_.session->input_spec(0);
  const TensorView tensor = first_items(batch.slot->bytes(model_.tensor_buffer), input.dtype,
                                        MemoryKind::kDevice, *input.shape, frames.images.size());
  return image::run_preprocess_cuda(stream, frames, model_.preprocess, tensor);
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return make_error(StatusCode::kUnsupported, "preprocess on the GPU: this fovea was built without CUDA");
#endif
}

// The GPU path's count: the device counter the kernels add to, and the pinned word it is copied to
// after each batch (read by counters(), a batch behind at most while the flow runs).
struct InferenceOp::DeviceCount {
#if defined(FOVEA_HAVE_CUDA)
  DeviceMemory counter;
  BufferPool pinned_pool;
  PooledBuffer pinned;

  static Result<std::unique_ptr<DeviceCount>> create(cudaStream_t stream) {
    FOVEA_ASSIGN_OR_RETURN(DeviceMemory counter, DeviceMemory::allocate(sizeof(unsigned long long)));
    FOVEA_ASSIGN_OR_RETURN(BufferPool pool,
                           BufferPool::create("inference: non-finite count", MemoryKind::kPinnedHost,
                                              sizeof(unsigned long long)));
    FOVEA_ASSIGN_OR_RETURN(PooledBuffer pinned, pool.acquire());
    auto count =
        std::make_unique<DeviceCount>(DeviceCount{std::move(counter), std::move(pool), std::move(pinned)});
    *count->seen() = 0;
    FOVEA_CUDA_TRY(cudaMemsetAsync(count->counter.get(), 0, sizeof(unsigned long long), stream));
    return count;
  }
  unsigned long long* device() const {
    return static_cast<unsigned long long*>(counter.get());
  }
  // Written by the copies, read here: volatile, so each read goes to memory.
  volatile unsigned long long* seen() const {
    return static_cast<volatile unsigned long long*>(pinned.data());
  }
#endif
};

InferenceOp::InferenceOp(FlowModel& model) : model_(model) {}
InferenceOp::~InferenceOp() = default;

std::vector<TensorView> InferenceOp::float_outputs(std::size_t items) const {
  std::vector<TensorView> views = outputs(items);
  std::erase_if(views, [](const TensorView& view) {
    return (view.dtype != DataType::kFloat32 && view.dtype != DataType::kFloat16) || view.num_elements() == 0;
  });
  return views;
}

void InferenceOp::warn_non_finite(std::uint64_t found) {
  if (warned_ || found == 0) return;
  warned_ = true;
  log_warn(
      "{}: the model's outputs hold NaN or infinite values ({} so far): the results from them are wrong; "
      "a float16 plan that overflows does this (try precision fp32); the summary counts them",
      model_.config.path, found);
}

std::vector<StageCounter> InferenceOp::counters() const {
  std::uint64_t found = host_non_finite_.load();
#if defined(FOVEA_HAVE_CUDA)
  if (device_count_) found += *device_count_->seen();
#endif
  return {{"non-finite output values", found}};
}

Status InferenceOp::run_cpu(FrameBatch& batch) {
  host_outputs_.clear();
  const std::size_t n = inferred_frames(batch).size();
  if (n == 0) return Status::ok();
  const runtime::TensorSpec& input = model_.session->input_spec(0);
  // The slot's tensor itself, borrowed: the CPU executor reads it in place.
  FOVEA_ASSIGN_OR_RETURN(
      host_outputs_,
      model_.session->run_host(nullptr, {runtime::Tensor::borrow(input.dtype, *input.shape,
                                                                 batch.slot->bytes(model_.tensor_buffer))}));
  for (const TensorView& output : float_outputs(n)) {
    FOVEA_ASSIGN_OR_RETURN(const std::uint64_t found, post::count_non_finite_cpu(output));
    host_non_finite_ += found;
  }
  warn_non_finite(host_non_finite_.load());
  return Status::ok();
}

Status InferenceOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  const std::size_t n = inferred_frames(batch).size();
  if (n == 0) return Status::ok();
  if (!device_count_) {
    FOVEA_ASSIGN_OR_RETURN(device_count_, DeviceCount::create(stream));
  }
  warn_non_finite(*device_count_->seen());  // as of the batches whose copies have landed
  // The session's input lives at a fixed address (its CUDA graph reads it there); the slot's tensor
  // is copied in so that preprocess can fill the next batch's slot meanwhile.
  FOVEA_TRY(model_.session->copy_input(stream, 0, batch.slot->bytes(model_.tensor_buffer),
                                       static_cast<std::int64_t>(n)));
  FOVEA_TRY(model_.session->run(stream));
  for (const TensorView& output : float_outputs(n)) {
    FOVEA_TRY(post::count_non_finite_cuda(stream, output, device_count_->device()));
  }
  FOVEA_CUDA_TRY(cudaMemcpyAsync(const_cast<unsigned long long*>(device_count_->seen()),
                                 device_count_->device(), sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                 stream));
  return Status::ok();
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return make_error(StatusCode::kUnsupported, "inference on the GPU: this fovea was built without CUDA");
#endif
}

std::vector<TensorView> InferenceOp::outputs(std::size_t items) const {
  std::vector<TensorView> views;
  if (model_.session->device() == runtime::Device::kCpu) {
    for (const runtime::Tensor& t : host_outputs_) {
      views.push_back(
          first_items(const_cast<void*>(t.raw()), t.dtype(), MemoryKind::kHost, t.shape(), items));
    }
    return views;
  }
#if defined(FOVEA_HAVE_CUDA)
  for (int i = 0; i < model_.session->output_count(); ++i) {
    const runtime::Tensor& t = model_.session->output(i);
    views.push_back(
        first_items(const_cast<void*>(t.raw()), t.dtype(), MemoryKind::kDevice, t.shape(), items));
  }
#endif
  return views;
}

}  // namespace fovea::pipeline
