#include "pipeline/classify_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/log.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#endif

namespace fovea::pipeline {

namespace {

std::size_t items_of(const FlowModel& model) {
  return static_cast<std::size_t>(model.batch_size);
}

// Outward to even coordinates: 4:2:0 chroma needs an even origin, and an even end keeps the crop
// inside an even-sized frame.
int even_floor(float v) {
  return static_cast<int>(std::floor(v / 2.0f)) * 2;
}
int even_ceil(float v) {
  return static_cast<int>(std::ceil(v / 2.0f)) * 2;
}

}  // namespace

image::Roi object_roi(const Box& box, int frame_width, int frame_height) {
  const bool finite =
      std::isfinite(box.x1) && std::isfinite(box.y1) && std::isfinite(box.x2) && std::isfinite(box.y2);
  if (!finite || !(box.x2 > box.x1) || !(box.y2 > box.y1)) return {};
  // Clamped as floats first: a box far outside must not overflow the int conversion.
  const auto clamp_x = [&](float v) { return std::clamp(v, 0.0f, static_cast<float>(frame_width)); };
  const auto clamp_y = [&](float v) { return std::clamp(v, 0.0f, static_cast<float>(frame_height)); };
  const int x0 = std::clamp(even_floor(clamp_x(box.x1)), 0, frame_width);
  const int y0 = std::clamp(even_floor(clamp_y(box.y1)), 0, frame_height);
  const int x1 = std::clamp(even_ceil(clamp_x(box.x2)), 0, frame_width);
  const int y1 = std::clamp(even_ceil(clamp_y(box.y2)), 0, frame_height);
  if (x1 <= x0 || y1 <= y0) return {};
  return {.x = x0, .y = y0, .width = x1 - x0, .height = y1 - y0};
}

Result<ClassifySetup> plan_classify(const FlowModel& model, const SecondaryConfig& config, int max_objects) {
  FOVEA_ASSIGN_OR_RETURN(ClassifierHead head,
                         plan_classifier_head(model, fmt::format("secondary model '{}'", model.config.name)));
  return ClassifySetup{.config = config, .head = std::move(head), .max_objects = max_objects};
}

ClassifyOp::ClassifyOp(FlowModel& model, ClassifySetup setup, const FlowShape& shape)
    : model_(model),
      setup_(std::move(setup)),
      shape_(shape),
      picks_buffer_("classify picks " + model.config.name),
      scores_buffer_("classify scores " + model.config.name) {}

Status ClassifyOp::declare(BufferPlan& plan) {
  const runtime::TensorSpec& input = model_.session->input_spec(0);
  const auto objects = static_cast<std::size_t>(setup_.max_objects);
  // Zeroed: a partial chunk leaves the tensor's tail as it was, and it must hold numbers.
  FOVEA_TRY(plan.bytes(
      model_.tensor_buffer,
      {.bytes = static_cast<std::size_t>(runtime::element_count(*input.shape)) * data_type_size(input.dtype),
       .place = BufferPlace::kDevice,
       .zeroed = true}));
  FOVEA_TRY(plan.bytes(picks_buffer_, {.bytes = objects * sizeof(Pick), .place = BufferPlace::kPinnedHost}));
  return plan.bytes(scores_buffer_, {.bytes = objects * static_cast<std::size_t>(setup_.head.classes) *
                                              data_type_size(setup_.head.dtype),
                                     .place = BufferPlace::kPinnedHost});
}

bool ClassifyOp::qualifies(const ObjectResult& object) const {
  const SecondaryConfig& c = setup_.config;
  if (c.skip_untracked && object.track_id < 0) return false;
  if (!c.operate_on_classes.empty() && std::find(c.operate_on_classes.begin(), c.operate_on_classes.end(),
                                                 object.class_id) == c.operate_on_classes.end()) {
    return false;
  }
  const float width = object.box.x2 - object.box.x1, height = object.box.y2 - object.box.y1;
  if (!(width >= c.min_width && height >= c.min_height)) return false;
  const image::Roi roi = object_roi(object.box, shape_.frame_width, shape_.frame_height);
  return roi.width > 0 && roi.height > 0;
}

// Whether a tracked object takes its track's last labels: when its track was classified (or is
// being classified) fewer than reinfer_interval frames ago. When not, the track is marked as
// classified on this frame, and its labels are replaced by the batch's write-back.
bool ClassifyOp::reuses(const BatchFrame& frame, const ObjectResult& object) {
  if (object.track_id < 0 || setup_.config.reinfer_interval <= 1) return false;
  const std::lock_guard lock(tracks_mutex_);
  TrackLabels& track = tracks_[{frame.source, object.track_id}];
  const std::int64_t since = frame.index - track.frame;
  if (track.scheduled && since >= 0 && since < setup_.config.reinfer_interval) return true;
  track.frame = frame.index;
  track.scheduled = true;
  return false;
}

std::pair<std::size_t, std::size_t> ClassifyOp::select(const FrameBatch& batch) {
  auto* picks = static_cast<Pick*>(batch.slot->bytes(picks_buffer_));
  const auto capacity = static_cast<std::size_t>(setup_.max_objects);
  std::size_t count = 0, rows = 0, over = 0, untracked = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const std::vector<ObjectResult>& objects = batch.results[i].objects;
    for (std::size_t k = 0; k < objects.size(); ++k) {
      if (!qualifies(objects[k])) continue;
      if (count == capacity) {
        ++over;
        continue;
      }
      const bool reuse = reuses(batch.frames[i], objects[k]);
      if (objects[k].track_id < 0) ++untracked;
      picks[count++] = {.frame = static_cast<std::uint32_t>(i),
                        .object = static_cast<std::uint32_t>(k),
                        .row = reuse ? kReuse : static_cast<std::int32_t>(rows++)};
    }
  }
  classified_ += rows;
  untracked_ += untracked;
  reused_ += count - rows;
  if (over > 0 && skipped_.fetch_add(over) == 0) {
    log_warn(
        "{}: a batch had more objects to classify than the {} it is sized for (mux.batch_size x "
        "detect.top_k); the rest are not classified (counted, said once)",
        name(), capacity);
  }
  return {count, rows};
}

std::vector<StageCounter> ClassifyOp::counters() const {
  return {{"objects classified", classified_.load()},
          {"of them without a track", untracked_.load()},
          {"labels reused", reused_.load()},
          {"objects over the batch bound", skipped_.load()}};
}

void ClassifyOp::gather(const FrameBatch& batch, std::size_t picks, std::size_t begin, std::size_t end) {
  const auto* pick = static_cast<const Pick*>(batch.slot->bytes(picks_buffer_));
  crops_.images.clear();
  crops_.rois.clear();
  for (std::size_t p = 0; p < picks; ++p) {
    if (pick[p].row < 0) continue;
    const auto row = static_cast<std::size_t>(pick[p].row);
    if (row < begin || row >= end) continue;
    crops_.images.push_back(batch.image(pick[p].frame));
    crops_.rois.push_back(object_roi(batch.results[pick[p].frame].objects[pick[p].object].box,
                                     shape_.frame_width, shape_.frame_height));
  }
}

TensorView ClassifyOp::chunk_tensor(void* data, MemoryKind memory, std::size_t items) const {
  const runtime::TensorSpec& input = model_.session->input_spec(0);
  const runtime::Shape& shape = *input.shape;
  return contiguous_tensor(data, input.dtype, memory,
                           {static_cast<std::int64_t>(items), shape[1], shape[2], shape[3]});
}

std::vector<SecondaryLabel> ClassifyOp::top_labels(const void* scores, std::int32_t row) const {
  std::vector<SecondaryLabel> labels;
  for (ClassLabel& top : top_classes(scores, setup_.head.dtype, static_cast<std::size_t>(row), setup_.head,
                                     setup_.config.top_k, 0.0f)) {
    labels.push_back({.model = model_.config.name,
                      .class_id = top.class_id,
                      .label = std::move(top.label),
                      .score = top.score});
  }
  return labels;
}

// A track not classified for reinfer_interval frames would be classified again when seen: its
// labels can go.
void ClassifyOp::forget_old_tracks(const FrameBatch& batch) {
  for (const BatchFrame& frame : batch.frames) {
    std::erase_if(tracks_, [&](const auto& entry) {
      return entry.first.first == frame.source &&
             frame.index - entry.second.frame >= setup_.config.reinfer_interval;
    });
  }
}

Status ClassifyOp::write_labels(FrameBatch& batch, std::size_t picks) {
  const auto* pick = static_cast<const Pick*>(batch.slot->bytes(picks_buffer_));
  const void* scores = batch.slot->bytes(scores_buffer_);
  const std::lock_guard lock(tracks_mutex_);
  // The classified objects first: an object later in the batch may take their labels.
  for (std::size_t p = 0; p < picks; ++p) {
    if (pick[p].row == kReuse) continue;
    ObjectResult& object = batch.results[pick[p].frame].objects[pick[p].object];
    std::vector<SecondaryLabel> labels = top_labels(scores, pick[p].row);
    if (object.track_id >= 0) {
      const auto found = tracks_.find({batch.frames[pick[p].frame].source, object.track_id});
      if (found != tracks_.end() && found->second.frame == batch.frames[pick[p].frame].index)
        found->second.labels = labels;
    }
    object.secondary.insert(object.secondary.end(), labels.begin(), labels.end());
  }
  for (std::size_t p = 0; p < picks; ++p) {
    if (pick[p].row != kReuse) continue;
    ObjectResult& object = batch.results[pick[p].frame].objects[pick[p].object];
    const auto found = tracks_.find({batch.frames[pick[p].frame].source, object.track_id});
    if (found == tracks_.end()) continue;
    object.secondary.insert(object.secondary.end(), found->second.labels.begin(), found->second.labels.end());
  }
  if (setup_.config.reinfer_interval > 1) forget_old_tracks(batch);
  return Status::ok();
}

Status ClassifyOp::run_cpu(FrameBatch& batch) {
  const auto [picks, rows] = select(batch);
  const std::size_t chunk = items_of(model_);
  const std::size_t row_bytes = static_cast<std::size_t>(setup_.head.classes) * sizeof(float);
  auto* scores = static_cast<unsigned char*>(batch.slot->bytes(scores_buffer_));
  void* tensor = batch.slot->bytes(model_.tensor_buffer);
  const runtime::TensorSpec& input = model_.session->input_spec(0);
  for (std::size_t begin = 0; begin < rows; begin += chunk) {
    const std::size_t end = std::min(rows, begin + chunk);
    gather(batch, picks, begin, end);
    FOVEA_TRY(image::run_preprocess_cpu(crops_, model_.preprocess,
                                        chunk_tensor(tensor, MemoryKind::kHost, end - begin)));
    FOVEA_ASSIGN_OR_RETURN(
        std::vector<runtime::Tensor> outputs,
        model_.session->run_host(nullptr, {runtime::Tensor::borrow(input.dtype, *input.shape, tensor)}));
    std::memcpy(scores + begin * row_bytes, outputs[0].raw(), (end - begin) * row_bytes);
  }
  return write_labels(batch, picks);
}

Status ClassifyOp::run(FrameBatch& batch, cudaStream_t stream) {
#if defined(FOVEA_HAVE_CUDA)
  const auto [picks, rows] = select(batch);
  if (picks == 0) return Status::ok();
  const std::size_t chunk = items_of(model_);
  const std::size_t row_bytes =
      static_cast<std::size_t>(setup_.head.classes) * data_type_size(setup_.head.dtype);
  auto* scores = static_cast<unsigned char*>(batch.slot->bytes(scores_buffer_));
  void* tensor = batch.slot->bytes(model_.tensor_buffer);
  for (std::size_t begin = 0; begin < rows; begin += chunk) {
    const std::size_t end = std::min(rows, begin + chunk);
    gather(batch, picks, begin, end);
    FOVEA_TRY(image::run_preprocess_cuda(stream, crops_, model_.preprocess,
                                         chunk_tensor(tensor, MemoryKind::kDevice, end - begin)));
    FOVEA_TRY(model_.session->copy_input(stream, 0, tensor, static_cast<std::int64_t>(end - begin)));
    FOVEA_TRY(model_.session->run(stream));
    FOVEA_CUDA_TRY(cudaMemcpyAsync(scores + begin * row_bytes, model_.session->output(0).raw(),
                                   (end - begin) * row_bytes, cudaMemcpyDeviceToHost, stream));
  }
  batch.after_gpu.push_back([this, picks](FrameBatch& done) { return write_labels(done, picks); });
  return Status::ok();
#else
  static_cast<void>(batch);
  static_cast<void>(stream);
  return make_error(StatusCode::kUnsupported, "classify on the GPU: this fovea was built without CUDA");
#endif
}

}  // namespace fovea::pipeline
