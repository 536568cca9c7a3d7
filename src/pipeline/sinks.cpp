#include "pipeline/sinks.h"

#include <filesystem>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "io/encoder.h"
#include "pipeline/queue.h"
#include "trace/tracer.h"

namespace fovea::pipeline {

namespace {

// Frames one encoder may have waiting: enough to ride out an encoder's uneven pace (x264's
// lookahead makes some frames slower) without holding many slots, whose buffers the frames share.
constexpr std::size_t kEncoderQueueFrames = 8;

struct EncodeJob {
  std::shared_ptr<const SegmentBatch> batch;
  std::size_t frame = 0;
};

}  // namespace

std::filesystem::path video_output_path(const VideoSinkConfig& config, const std::string& source_name) {
  return std::filesystem::path(config.output_dir) / (source_name + ".mp4");
}

struct VideoSink::Output {
  std::string source;
  std::string path;
  io::EncoderOptions options;
  Rational frame_rate;
  BoundedQueue<EncodeJob> queue{kEncoderQueueFrames};
  std::thread thread;
  std::unique_ptr<io::Encoder> encoder;
  mutable std::mutex mutex;  // guards the report fields below, read by reports() while it runs
  std::string encoder_name;
  std::int64_t frames = 0;
  std::string error;

  void run() {
    while (std::optional<EncodeJob> job = queue.pop()) {
      if (!has_failed()) {
        const Status status = encode(*job);
        if (!status.is_ok()) fail(status);
      }
    }
    if (encoder != nullptr) {
      const Status status = encoder->finish();
      if (!status.is_ok()) fail(status);
    }
  }

  Status encode(const EncodeJob& job) {
    const MuxFrame<SourceFrame>& source_frame = job.batch->frames[job.frame];
    FOVEA_TRACE_RANGE("encode", static_cast<std::int64_t>(job.batch->number));
    const Frame& decoded = source_frame.payload.frame;
    if (encoder == nullptr) {
      options.time_base = source_frame.payload.time_base;
      options.frame_rate = frame_rate;
      FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<io::Encoder> opened, io::Encoder::open(path, options));
      std::lock_guard lock(mutex);
      encoder = std::move(opened);
      encoder_name = encoder->encoder_name();
    }
    Frame frame;
    frame.image = job.batch->buffers->yuv_host[job.frame];
    frame.pts = decoded.pts;
    frame.has_pts = decoded.has_pts;
    frame.time_base = source_frame.payload.time_base;
    frame.index = source_frame.index;
    FOVEA_TRY(encoder->encode(frame));
    std::lock_guard lock(mutex);
    ++frames;
    return Status::ok();
  }

  bool has_failed() const {
    std::lock_guard lock(mutex);
    return !error.empty();
  }

  void fail(const Status& status) {
    log_error("video sink {}: {}; the other outputs carry on", source, status.with_context(path).to_string());
    std::lock_guard lock(mutex);
    if (error.empty()) error = status.with_context(path).message();
  }
};

VideoSink::VideoSink(VideoSinkConfig config, std::vector<std::string> source_names, int frame_width,
                     int frame_height, int encoder_threads, std::function<Rational(std::size_t)> frame_rate)
    : config_(std::move(config)) {
  for (std::size_t s = 0; s < source_names.size(); ++s) {
    auto output = std::make_unique<Output>();
    output->source = source_names[s];
    output->path = video_output_path(config_, source_names[s]).string();
    output->options.codec = config_.codec;
    output->options.width = frame_width;
    output->options.height = frame_height;
    output->options.preset = config_.preset;
    output->options.threads = encoder_threads;
    output->options.qp = config_.qp.value_or(-1);
    output->frame_rate = frame_rate(s);
    if (output->frame_rate.num <= 0) output->frame_rate = Rational{30, 1};
    outputs_.push_back(std::move(output));
  }
}

VideoSink::~VideoSink() {
  finish();
}

Status VideoSink::start() {
  std::error_code error;
  std::filesystem::create_directories(config_.output_dir, error);
  if (error) {
    return make_error(StatusCode::kIoError, "sinks.video.output_dir ", config_.output_dir, ": ",
                      error.message());
  }
  for (auto& output : outputs_) {
    Output* o = output.get();
    o->thread = std::thread([o] { o->run(); });
  }
  return Status::ok();
}

void VideoSink::write(const std::shared_ptr<const SegmentBatch>& batch) {
  for (std::size_t i = 0; i < batch->frames.size(); ++i) {
    Output& output = *outputs_.at(batch->frames[i].source);
    // A closed queue (finish() already ran) drops the frame; that happens only while shutting down.
    static_cast<void>(output.queue.push(EncodeJob{batch, i}));
  }
}

void VideoSink::finish() {
  for (auto& output : outputs_) output->queue.close();
  for (auto& output : outputs_) {
    if (output->thread.joinable()) output->thread.join();
  }
}

std::vector<SinkReport> VideoSink::reports() const {
  std::vector<SinkReport> reports;
  for (const auto& output : outputs_) {
    std::lock_guard lock(output->mutex);
    reports.push_back({.source = output->source,
                       .path = output->frames > 0 ? output->path : std::string(),
                       .encoder = output->encoder_name,
                       .frames = output->frames,
                       .error = output->error});
  }
  return reports;
}

MetadataSink::MetadataSink(MetadataSinkConfig config, std::vector<std::string> source_names,
                           std::vector<int> classes)
    : config_(std::move(config)), source_names_(std::move(source_names)), in_set_(256, false) {
  for (int c : classes) in_set_.at(static_cast<std::size_t>(c)) = true;
}

Status MetadataSink::start() {
  const std::filesystem::path path(config_.path);
  if (path.has_parent_path()) {
    std::error_code error;
    std::filesystem::create_directories(path.parent_path(), error);
  }
  pending_.emplace(path);
  file_.open(pending_->partial(), std::ios::out | std::ios::trunc);
  if (!file_) {
    return make_error(StatusCode::kIoError, "sinks.metadata.path ", config_.path,
                      ": cannot open for writing");
  }
  return Status::ok();
}

Status MetadataSink::write(const SegmentBatch& batch) {
  for (std::size_t i = 0; i < batch.frames.size(); ++i) {
    const MuxFrame<SourceFrame>& frame = batch.frames[i];
    const ImageView& map = batch.buffers->class_maps_host[i];
    std::uint64_t selected = 0;
    for (int y = 0; y < map.height; ++y) {
      const std::uint8_t* row = map.row(0, y);
      for (int x = 0; x < map.width; ++x) selected += in_set_[row[x]] ? 1u : 0u;
    }
    const double pixels = static_cast<double>(map.width) * map.height;
    const nlohmann::json line = {
        {"source", source_names_.at(frame.source)},
        {"frame", frame.index},
        {"pts_us", frame.payload.pts_us},
        {"batch", batch.number},
        {"target_fraction", pixels > 0 ? static_cast<double>(selected) / pixels : 0.0}};
    file_ << line.dump() << '\n';
  }
  if (!file_) {
    return make_error(StatusCode::kIoError, "sinks.metadata.path ", config_.path, ": write failed");
  }
  return Status::ok();
}

Status MetadataSink::finish() {
  if (!file_.is_open()) return Status::ok();
  file_.close();
  if (file_.fail()) {
    pending_->discard();
    return make_error(StatusCode::kIoError, "sinks.metadata.path ", config_.path, ": close failed");
  }
  return pending_->commit();
}

}  // namespace fovea::pipeline
