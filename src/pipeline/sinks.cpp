#include "pipeline/sinks.h"

#include <filesystem>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/log.h"
#include "io/encoder.h"
#include "io/mqtt_publisher.h"
#include "pipeline/frame_record.h"
#include "pipeline/queue.h"
#include "trace/tracer.h"

namespace fovea::pipeline {

namespace {

// Frames one encoder may have waiting: enough to ride out an encoder's uneven pace (x264's
// lookahead makes some frames slower) without holding many slots, whose buffers the frames share.
constexpr std::size_t kEncoderQueueFrames = 8;

struct EncodeJob {
  std::shared_ptr<const FrameBatch> batch;
  Picture picture;
};

// A service's sources come and go: the frame names its source.
std::string_view source_name(const BatchFrame& frame, const std::vector<std::string>& source_names) {
  return frame.payload.name ? std::string_view(*frame.payload.name) : source_names.at(frame.source);
}

// The metadata record of the batch's frame `i` (docs/metadata.md), without its newline: the line
// the metadata file gets and the message the broker gets.
std::string frame_record_line(const FrameBatch& batch, std::size_t i,
                              const std::vector<std::string>& source_names,
                              const std::vector<std::string>& labels) {
  const BatchFrame& frame = batch.frames[i];
  const FrameRecordContext context{.source = source_name(frame, source_names),
                                   .source_id = frame.source,
                                   .frame = frame.index,
                                   .pts_us = frame.pts_us,
                                   .capture_time_us = frame.payload.capture_time_us,
                                   .batch = batch.number,
                                   .labels = labels};
  return frame_record_json(context, batch.results[i]);
}

}  // namespace

std::filesystem::path video_output_path(const VideoSinkConfig& config, const std::string& stream_name) {
  return std::filesystem::path(config.output_dir) / (stream_name + ".mp4");
}

struct VideoSink::Output {
  std::string stream;
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

  // The picture's timing: its frame's, or (the mosaic) the stream's own count at its frame rate.
  Frame timed_picture(const EncodeJob& job) const {
    Frame frame;
    frame.image = job.picture.image;
    if (job.picture.frame) {
      const BatchFrame& source_frame = job.batch->frames[*job.picture.frame];
      frame.pts = source_frame.payload.frame.pts;
      frame.has_pts = source_frame.payload.frame.has_pts;
      frame.time_base = source_frame.payload.time_base;
      frame.index = source_frame.index;
    } else {
      frame.pts = frames;
      frame.has_pts = true;
      frame.time_base = Rational{frame_rate.den, frame_rate.num};
      frame.index = frames;
    }
    return frame;
  }

  Status encode(const EncodeJob& job) {
    FOVEA_TRACE_RANGE("encode", static_cast<std::int64_t>(job.batch->number));
    const Frame frame = timed_picture(job);
    if (encoder == nullptr) {
      options.time_base = frame.time_base;
      options.frame_rate = frame_rate;
      FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<io::Encoder> opened, io::Encoder::open(path, options));
      std::lock_guard lock(mutex);
      encoder = std::move(opened);
      encoder_name = encoder->encoder_name();
    }
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
    log_error("video sink {}: {}; the other outputs carry on", stream, status.with_context(path).to_string());
    std::lock_guard lock(mutex);
    if (error.empty()) error = status.with_context(path).message();
  }
};

VideoSink::VideoSink(VideoSinkConfig config, std::vector<std::string> stream_names, Streams streams,
                     int width, int height, int encoder_threads, PicturePicker pick)
    : config_(std::move(config)), streams_(streams), pick_(std::move(pick)) {
  for (std::size_t s = 0; s < stream_names.size(); ++s) {
    auto output = std::make_unique<Output>();
    output->stream = stream_names[s];
    output->path = video_output_path(config_, stream_names[s]).string();
    output->options.codec = config_.codec;
    output->options.width = width;
    output->options.height = height;
    output->options.preset = config_.preset;
    output->options.threads = encoder_threads;
    output->options.qp = config_.qp.value_or(-1);
    outputs_.push_back(std::move(output));
  }
}

VideoSink::~VideoSink() {
  static_cast<void>(finish());
}

Status VideoSink::start(std::span<const Rational> source_frame_rates) {
  for (std::size_t s = 0; s < outputs_.size(); ++s) {
    const std::size_t source = streams_ == Streams::kPerSource ? s : 0;
    Rational rate = source < source_frame_rates.size() ? source_frame_rates[source] : Rational{};
    if (rate.num <= 0 || rate.den <= 0) rate = Rational{30, 1};  // unknown: the common camera rate
    outputs_[s]->frame_rate = rate;
  }
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

Status VideoSink::write(const std::shared_ptr<const FrameBatch>& batch) {
  pictures_.clear();
  pick_(*batch, pictures_);
  for (const Picture& picture : pictures_) {
    Output& output = *outputs_.at(picture.stream);
    // A closed queue (finish() already ran) drops the frame; that happens only while shutting down.
    static_cast<void>(output.queue.push(EncodeJob{batch, picture}));
  }
  return Status::ok();
}

Status VideoSink::finish() {
  for (auto& output : outputs_) output->queue.close();
  for (auto& output : outputs_) {
    if (output->thread.joinable()) output->thread.join();
  }
  // A failed output is reported per file (reports()); the others are finalized all the same.
  return Status::ok();
}

std::vector<SinkReport> VideoSink::reports() const {
  std::vector<SinkReport> reports;
  for (const auto& output : outputs_) {
    std::lock_guard lock(output->mutex);
    reports.push_back({.source = output->stream,
                       .path = output->frames > 0 ? output->path : std::string(),
                       .encoder = output->encoder_name,
                       .frames = output->frames,
                       .error = output->error});
  }
  return reports;
}

MetadataSink::MetadataSink(MetadataSinkConfig config, std::vector<std::string> source_names,
                           std::vector<std::string> labels)
    : config_(std::move(config)), source_names_(std::move(source_names)), labels_(std::move(labels)) {}

Status MetadataSink::start(std::span<const Rational>) {
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

Status MetadataSink::write(const std::shared_ptr<const FrameBatch>& batch) {
  for (std::size_t i = 0; i < batch->size(); ++i) {
    file_ << frame_record_line(*batch, i, source_names_, labels_) << '\n';
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

MqttSink::MqttSink(MqttSinkConfig config, std::vector<std::string> source_names,
                   std::vector<std::string> labels)
    : config_(std::move(config)), source_names_(std::move(source_names)), labels_(std::move(labels)) {}

Status MqttSink::start(std::span<const Rational>) {
  Result<std::unique_ptr<io::MqttPublisher>> publisher = io::MqttPublisher::create(mqtt_options(config_));
  if (!publisher.is_ok()) return with_sink_mqtt_keys(publisher.status());
  publisher_ = std::move(publisher).value();
  return Status::ok();
}

Status MqttSink::write(const std::shared_ptr<const FrameBatch>& batch) {
  for (std::size_t i = 0; i < batch->size(); ++i) {
    publisher_->publish(io::mqtt_topic(config_.topic_prefix, source_name(batch->frames[i], source_names_)),
                        frame_record_line(*batch, i, source_names_, labels_));
  }
  return Status::ok();
}

Status MqttSink::finish() {
  if (publisher_ == nullptr || std::exchange(finished_, true)) return Status::ok();
  // A timeout is what the counters below say; the run ends as it would have.
  static_cast<void>(publisher_->flush(kMqttSinkFinishTimeout));
  const io::MqttStats stats = publisher_->stats();
  const std::uint64_t undelivered = stats.queued + stats.in_flight;
  const std::uint64_t lost = undelivered + stats.dropped + stats.rejected;
  if (lost > 0) {
    // The metadata file, when there is one, still has them; the broker's subscribers miss them.
    log_warn(
        "mqtt sink: {} of {} frame records did not reach broker {}:{}: {} dropped from the full buffer while "
        "it was away, {} rejected, {} not delivered within {} ms of the end{}",
        lost, stats.published, config_.host, config_.port, stats.dropped, stats.rejected, undelivered,
        kMqttSinkFinishTimeout.count(),
        stats.last_error.empty() ? "" : " (last error: " + stats.last_error + ")");
  }
  return Status::ok();
}

std::optional<BrokerStats> MqttSink::broker_stats() const {
  if (publisher_ == nullptr) return std::nullopt;
  const io::MqttStats stats = publisher_->stats();
  return BrokerStats{.broker = fmt::format("{}:{}", config_.host, config_.port),
                     .published = stats.published,
                     .delivered = stats.delivered,
                     .dropped = stats.dropped,
                     .rejected = stats.rejected,
                     .queued = stats.queued + stats.in_flight,
                     .reconnects = stats.reconnects,
                     .connected = stats.connected,
                     .last_error = stats.last_error};
}

}  // namespace fovea::pipeline
