#include "pipeline/detect_ops.h"

#include <cstring>

#include <fmt/format.h>

#include "post/label_file.h"
#include "post/ssd_priors.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#endif

namespace fovea::pipeline {

namespace {

constexpr const char* kWorkspace = "detect workspace";
constexpr const char* kDetections = "detections";
constexpr const char* kCounts = "detection counts";
constexpr const char* kDetectionsHost = "detections host";
constexpr const char* kCountsHost = "detection counts host";

std::vector<post::OutputInfo> output_infos(const runtime::InferenceSession& session) {
  std::vector<post::OutputInfo> infos;
  for (int i = 0; i < session.output_count(); ++i) {
    const runtime::TensorSpec& spec = session.output_spec(i);
    infos.push_back({.name = spec.name, .shape = spec.shape.value_or(runtime::Shape{}), .dtype = spec.dtype});
  }
  return infos;
}

// torchvision's SSD exports stop at the head, without the anchors: fovea makes them for the two
// torchvision models it knows by their anchor count and input size.
Result<std::vector<float>> torchvision_priors(const FlowModel& model, int anchors) {
  const int w = model.input_width(), h = model.input_height();
  if (anchors == 8732 && w == 300 && h == 300)
    return post::default_boxes(post::ssd300_vgg16_default_boxes(), w, h);
  if (anchors == 3234 && w == 320 && h == 320)
    return post::default_boxes(post::ssdlite320_default_boxes(), w, h);
  return make_error(
      StatusCode::kInvalidArgument, model.config.path,
      fmt::format(": an SSD model with {} anchors at {}x{} and no priors output; fovea knows the "
                  "anchors of torchvision's SSD300-VGG16 (8732 at 300x300) and SSDLite320 (3234 at "
                  "320x320), other SSD models must output their priors [A, 4]",
                  anchors, w, h));
}

post::DetectPostParams detect_params(post::DetectParser parser, const DetectConfig& detect) {
  post::DetectPostParams params = post::default_detect_params(parser);
  params.score_threshold = detect.confidence;
  for (const ClassThreshold& t : detect.class_confidence)
    params.class_thresholds.emplace_back(t.class_id, t.threshold);
  params.classes = detect.classes;
  params.iou_threshold = detect.iou;
  params.top_k = detect.top_k;
  if (detect.candidates_per_class) params.max_candidates_per_class = *detect.candidates_per_class;
  params.min_width = detect.min_width;
  params.min_height = detect.min_height;
  return params;
}

std::size_t detection_bytes(const post::DetectPostPlan& plan) {
  return static_cast<std::size_t>(plan.layout.batch) * static_cast<std::size_t>(plan.detections_per_image) *
         sizeof(post::Detection);
}

std::size_t count_bytes(const post::DetectPostPlan& plan) {
  return static_cast<std::size_t>(plan.layout.batch) * sizeof(std::int32_t);
}

}  // namespace

Result<DetectSetup> plan_detect(const FlowModel& model, const DetectConfig& detect, bool gpu) {
  const ModelConfig& config = model.config;
  if (!config.parser) {
    return make_error(StatusCode::kInvalidArgument, "models: '", config.name,
                      "' has no parser; a detector needs one (ssd, yolo, detectnet or boxes)");
  }
  DetectSetup setup;
  if (config.labels) {
    FOVEA_ASSIGN_OR_RETURN(setup.labels, post::read_label_file(*config.labels));
  }
  post::DetectPostConfig post_config{.parser = *config.parser,
                                     .params = detect_params(*config.parser, detect)};
  post_config.options.input_width = model.input_width();
  post_config.options.input_height = model.input_height();
  const std::vector<post::OutputInfo> outputs = output_infos(*model.session);
  auto planned = post::plan_detect_post(post_config, outputs,
                                        gpu ? post::DetectDevice::kCuda : post::DetectDevice::kCpu);
  if (!planned.is_ok()) return planned.status().with_context(config.path);
  setup.plan = std::move(*planned);
  if (!setup.labels.empty()) {
    FOVEA_TRY(
        post::check_label_count(setup.labels.size(), setup.plan.layout.classes, *config.labels, config.path));
  }
  if (setup.plan.layout.kind == post::DetectLayoutKind::kSsd && setup.plan.layout.priors < 0) {
    FOVEA_ASSIGN_OR_RETURN(setup.priors, torchvision_priors(model, setup.plan.layout.rows));
  }
  return setup;
}

DetectOp::DetectOp(const InferenceOp& inference, DetectSetup setup, const FlowShape& shape)
    : inference_(inference), setup_(std::move(setup)), shape_(shape) {}
DetectOp::~DetectOp() = default;

Result<std::unique_ptr<DetectOp>> DetectOp::create(const InferenceOp& inference, DetectSetup setup,
                                                   const FlowShape& shape) {
  std::unique_ptr<DetectOp> op(new DetectOp(inference, std::move(setup), shape));
  op->mappings_.assign(static_cast<std::size_t>(op->setup_.plan.layout.batch),
                       op->mapping_for(shape.frame_width, shape.frame_height));
#if defined(FOVEA_HAVE_CUDA)
  if (shape.gpu && !op->setup_.priors.empty()) {
    const std::size_t bytes = op->setup_.priors.size() * sizeof(float);
    void* data = nullptr;
    FOVEA_CUDA_TRY(cudaMalloc(&data, bytes));
    op->device_priors_ = std::shared_ptr<void>(data, [](void* p) { cudaFree(p); });
    FOVEA_CUDA_TRY(cudaMemcpy(data, op->setup_.priors.data(), bytes, cudaMemcpyHostToDevice));
    // From pageable memory the copy may return before its DMA lands, and the stages' streams are
    // non-blocking: the priors must be in place before a decode kernel reads them.
    FOVEA_CUDA_TRY(cudaDeviceSynchronize());
  }
#endif
  return op;
}

Status DetectOp::declare(BufferPlan& plan) {
  const post::DetectPostPlan& p = setup_.plan;
  if (shape_.gpu) {
    FOVEA_TRY(plan.bytes(kWorkspace, {.bytes = p.workspace_bytes}));
    FOVEA_TRY(plan.bytes(kDetections, {.bytes = detection_bytes(p)}));
    FOVEA_TRY(plan.bytes(kCounts, {.bytes = count_bytes(p)}));
  }
  FOVEA_TRY(plan.bytes(kDetectionsHost, {.bytes = detection_bytes(p), .place = BufferPlace::kPinnedHost}));
  return plan.bytes(kCountsHost, {.bytes = count_bytes(p), .place = BufferPlace::kPinnedHost});
}

post::FrameMapping DetectOp::mapping_for(int frame_width, int frame_height) const {
  const FlowModel& model = inference_.model();
  const int iw = model.input_width(), ih = model.input_height();
  return model.config.keep_aspect ? post::letterbox_mapping(iw, ih, frame_width, frame_height)
                                  : post::stretch_mapping(iw, ih, frame_width, frame_height);
}

void DetectOp::map_frames(const FrameBatch& batch) {
  const std::vector<std::size_t> frames = inferred_frames(batch);
  for (std::size_t k = 0; k < frames.size() && k < mappings_.size(); ++k) {
    const ImageView& image = batch.image(frames[k]);
    mappings_[k] = mapping_for(image.width, image.height);
  }
}

post::DetectInputs DetectOp::inputs(const std::vector<TensorView>& outputs, void* priors) const {
  post::DetectInputs in{.outputs = outputs, .mappings = mappings_};
  if (priors != nullptr) {
    in.priors =
        contiguous_tensor(priors, DataType::kFloat32, shape_.gpu ? MemoryKind::kDevice : MemoryKind::kHost,
                          {static_cast<std::int64_t>(setup_.priors.size() / 4), 4});
  }
  return in;
}

Status DetectOp::collect(FrameBatch& batch, const post::DetectionList& host) const {
  const std::vector<std::size_t> frames = inferred_frames(batch);
  const auto stride = static_cast<std::size_t>(setup_.plan.detections_per_image);
  for (std::size_t k = 0; k < frames.size(); ++k) {
    std::vector<ObjectResult>& objects = batch.results[frames[k]].objects;
    objects.clear();
    const std::int32_t count = host.counts[k];
    for (std::int32_t d = 0; d < count; ++d) {
      const post::Detection& detection = host.detections[k * stride + static_cast<std::size_t>(d)];
      objects.push_back({.box = detection.box, .class_id = detection.class_id, .score = detection.score});
    }
  }
  return Status::ok();
}

Status DetectOp::run_cpu(FrameBatch& batch) {
  if (inferred_frames(batch).empty()) return Status::ok();
  map_frames(batch);
  // The plan's whole batch: a partial batch's tail frames are decoded too, and ignored.
  const std::vector<TensorView> outputs =
      inference_.outputs(static_cast<std::size_t>(setup_.plan.layout.batch));
  const post::DetectionList host{static_cast<post::Detection*>(batch.slot->bytes(kDetectionsHost)),
                                 static_cast<std::int32_t*>(batch.slot->bytes(kCountsHost))};
  FOVEA_TRY(post::run_detect_post_cpu(
      setup_.plan,
      inputs(outputs, setup_.priors.empty() ? nullptr : const_cast<float*>(setup_.priors.data())), host));
  return collect(batch, host);
}

Status DetectOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  if (inferred_frames(batch).empty()) return Status::ok();
  map_frames(batch);
  const std::vector<TensorView> outputs =
      inference_.outputs(static_cast<std::size_t>(setup_.plan.layout.batch));
  const post::DetectionList device{static_cast<post::Detection*>(batch.slot->bytes(kDetections)),
                                   static_cast<std::int32_t*>(batch.slot->bytes(kCounts))};
  const post::DetectionList host{static_cast<post::Detection*>(batch.slot->bytes(kDetectionsHost)),
                                 static_cast<std::int32_t*>(batch.slot->bytes(kCountsHost))};
  FOVEA_TRY(post::run_detect_post_cuda(stream, setup_.plan, inputs(outputs, device_priors_.get()),
                                       batch.slot->bytes(kWorkspace), setup_.plan.workspace_bytes, device));
  FOVEA_TRY(
      post::copy_detections_to_host(stream, setup_.plan.nms_shape, setup_.plan.nms_params, device, host));
  batch.after_gpu.push_back([this, host](FrameBatch& done) { return collect(done, host); });
  return Status::ok();
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return make_error(StatusCode::kUnsupported, "detect on the GPU: this fovea was built without CUDA");
#endif
}

}  // namespace fovea::pipeline
