#include "pipeline/sinks.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
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
// A live output's queue drops rather than waits, so it rides out a longer hiccup (a segment's
// rename, a slow write to the server) before it loses pictures.
constexpr std::size_t kLiveQueueFrames = 32;

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

std::filesystem::path hls_playlist_path(const std::string& hls_folder, const std::string& stream_name) {
  return std::filesystem::path(hls_folder) / stream_name / "index.m3u8";
}

std::string rtsp_push_url(const std::string& rtsp, const std::string& stream_name, bool mosaic) {
  if (mosaic) return rtsp;
  return rtsp.ends_with('/') ? rtsp + stream_name : rtsp + "/" + stream_name;
}

Status check_hls_folder(const std::string& hls_folder, const std::vector<std::string>& inputs) {
  std::error_code error;
  const std::filesystem::path folder = std::filesystem::weakly_canonical(hls_folder, error);
  if (error) return Status::ok();  // check_outputs says why it cannot be written
  for (const std::string& input : inputs) {
    if (input.find("://") != std::string::npos) continue;
    const std::filesystem::path path = std::filesystem::weakly_canonical(input, error);
    if (error) continue;
    const auto [folder_end, path_at] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
    if (folder_end == folder.end()) {
      return make_error(StatusCode::kInvalidArgument, "sinks.stream.hls ", hls_folder,
                        (path == folder ? " is the input " : " holds the input "), input,
                        "; HLS writes playlists and segments there as it goes: choose a folder of its own");
    }
  }
  return Status::ok();
}

struct EncodingSink::Output {
  Target target;
  Rational frame_rate;
  BoundedQueue<EncodeJob> queue;
  std::thread thread;
  std::unique_ptr<io::Encoder> encoder;
  std::int64_t pictures = 0;                          // given to it, encoded or dropped
  std::vector<std::optional<std::int64_t>> first_us;  // per source: its first frame's time (since_start)
  std::int64_t last_us = 0;                           // the last since_start picture's time
  std::chrono::steady_clock::time_point retry_at;     // a reconnecting output: when it tries again
  mutable std::mutex mutex;  // guards the report fields below, read by reports() while it runs
  // A reconnecting output away from its server (written by the encoder thread under `mutex`).
  bool away = false;
  std::string encoder_name;
  std::int64_t frames = 0;
  std::int64_t dropped = 0;
  std::int64_t reconnects = 0;
  std::string error;

  explicit Output(Target spec)
      : target(std::move(spec)), queue(target.live ? kLiveQueueFrames : kEncoderQueueFrames) {}

  void run() {
    while (std::optional<EncodeJob> job = queue.pop()) {
      handle(*job);
      ++pictures;
    }
    close_encoder();
  }

  void handle(const EncodeJob& job) {
    if (has_failed()) return;
    if (away && std::chrono::steady_clock::now() < retry_at) {
      count_drop();
      return;
    }
    const Status status = encode(job);
    if (status.is_ok()) {
      if (away) reconnected();
      return;
    }
    if (!target.reconnect) {
      fail(status);
      return;
    }
    lose(status);
    count_drop();
  }

  // A reconnecting output lost its server (or never reached it): it closes the encoder and waits
  // its backoff; its pictures are dropped meanwhile. Said once per loss, not per attempt.
  void lose(const Status& status) {
    if (encoder != nullptr) {
      // The session ends as far as a dead connection allows; that it cannot end cleanly is the loss.
      const Status closed = encoder->finish();
      if (!closed.is_ok()) log_debug("stream sink {}: closing: {}", target.stream_name, closed.to_string());
      encoder.reset();
    }
    Backoff& backoff = *target.reconnect;
    backoff.next();
    retry_at =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double>(backoff.wait_seconds()));
    if (backoff.attempt() == 1) {
      log_warn(
          "stream sink {}: {}; dropping its frames (counted) and trying again with backoff, from {:.1f} s",
          target.stream_name, status.to_string(), backoff.wait_seconds());
    } else {
      log_debug("stream sink {}: attempt {} failed: {}; next in {:.1f} s", target.stream_name,
                backoff.attempt(), status.to_string(), backoff.wait_seconds());
    }
    std::lock_guard lock(mutex);
    away = true;
  }

  void reconnected() {
    log_info("stream sink {}: {} connected again after {} attempts", target.stream_name, target.location,
             target.reconnect->attempt());
    target.reconnect->reset();
    std::lock_guard lock(mutex);
    away = false;
    ++reconnects;
  }

  void close_encoder() {
    if (encoder == nullptr) return;
    const Status status = encoder->finish();
    if (!status.is_ok()) fail(status);
  }

  // The picture's timing: its frame's, since its source's start (the mosaic), or the stream's own
  // count at its frame rate.
  Frame timed_picture(const EncodeJob& job) {
    Frame frame;
    frame.image = job.picture.image;
    if (job.picture.frame && job.picture.since_start) {
      const BatchFrame& source_frame = job.batch->frames[*job.picture.frame];
      const Rational base = source_frame.payload.time_base;
      const auto at_us = static_cast<std::int64_t>(static_cast<double>(source_frame.payload.frame.pts) *
                                                   base.to_double() * 1e6);
      if (source_frame.source >= first_us.size()) first_us.resize(source_frame.source + 1);
      std::optional<std::int64_t>& first = first_us[source_frame.source];
      if (!first) first = at_us;
      last_us = pictures == 0 ? at_us - *first : std::max(last_us + 1, at_us - *first);
      frame.pts = last_us;
      frame.has_pts = true;
      frame.time_base = Rational{1, 1'000'000};
      frame.index = pictures;
    } else if (job.picture.frame) {
      const BatchFrame& source_frame = job.batch->frames[*job.picture.frame];
      frame.pts = source_frame.payload.frame.pts;
      frame.has_pts = source_frame.payload.frame.has_pts;
      frame.time_base = source_frame.payload.time_base;
      frame.index = source_frame.index;
    } else {
      frame.pts = pictures;
      frame.has_pts = true;
      frame.time_base = Rational{frame_rate.den, frame_rate.num};
      frame.index = pictures;
    }
    return frame;
  }

  Status encode(const EncodeJob& job) {
    FOVEA_TRACE_RANGE("encode", static_cast<std::int64_t>(job.batch->number));
    const Frame frame = timed_picture(job);
    if (encoder == nullptr) {
      target.options.time_base = frame.time_base;
      target.options.frame_rate = frame_rate;
      FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<io::Encoder> opened,
                             io::Encoder::open(target.location, target.options));
      std::lock_guard lock(mutex);
      encoder = std::move(opened);
      encoder_name = encoder->encoder_name();
    }
    FOVEA_TRY(encoder->encode(frame));
    std::lock_guard lock(mutex);
    ++frames;
    return Status::ok();
  }

  void count_drop() {
    std::lock_guard lock(mutex);
    ++dropped;
  }

  bool has_failed() const {
    std::lock_guard lock(mutex);
    return !error.empty();
  }

  void fail(const Status& status) {
    log_error("{} sink {}: {}; the other outputs carry on", target.live ? "stream" : "video",
              target.stream_name, status.with_context(target.location).to_string());
    std::lock_guard lock(mutex);
    if (error.empty()) error = status.with_context(target.location).message();
  }
};

EncodingSink::EncodingSink(Streams streams, std::size_t stream_count, PicturePicker pick)
    : streams_(streams), pick_(std::move(pick)), by_stream_(stream_count) {}

EncodingSink::~EncodingSink() {
  static_cast<void>(finish());
}

void EncodingSink::add_output(Target target) {
  const std::size_t stream = target.stream;
  outputs_.push_back(std::make_unique<Output>(std::move(target)));
  by_stream_.at(stream).push_back(outputs_.back().get());
}

void EncodingSink::start_outputs(std::span<const Rational> source_frame_rates) {
  for (auto& output : outputs_) {
    const std::size_t source = streams_ == Streams::kPerSource ? output->target.stream : 0;
    Rational rate = source < source_frame_rates.size() ? source_frame_rates[source] : Rational{};
    if (rate.num <= 0 || rate.den <= 0) rate = Rational{30, 1};  // unknown: the common camera rate
    output->frame_rate = rate;
    // A live target's keyframe interval is its segment length (in frames), so that every HLS
    // segment, and an RTSP viewer joining, starts on a keyframe.
    io::EncoderOptions& options = output->target.options;
    if (options.target != io::EncoderTarget::kFile) {
      options.gop = std::max(1, options.hls_segment_seconds * rate.num / rate.den);
    }
  }
  for (auto& output : outputs_) {
    Output* o = output.get();
    o->thread = std::thread([o] { o->run(); });
  }
}

Status EncodingSink::write(const std::shared_ptr<const FrameBatch>& batch) {
  pictures_.clear();
  pick_(*batch, pictures_);
  for (const Picture& picture : pictures_) {
    for (Output* output : by_stream_.at(picture.stream)) {
      // A closed queue (finish() already ran) drops the frame; that happens only while shutting down.
      if (!output->target.live) {
        static_cast<void>(output->queue.push(EncodeJob{batch, picture}));
      } else if (output->queue.try_push(EncodeJob{batch, picture}) == PushResult::kTimedOut) {
        output->count_drop();
      }
    }
  }
  return Status::ok();
}

Status EncodingSink::finish() {
  for (auto& output : outputs_) output->queue.close();
  for (auto& output : outputs_) {
    if (output->thread.joinable()) output->thread.join();
  }
  // A failed output is reported per file (reports()); the others are finalized all the same.
  return Status::ok();
}

std::vector<LiveOutputStats> EncodingSink::output_stats() const {
  std::vector<LiveOutputStats> stats;
  for (const auto& output : outputs_) {
    std::lock_guard lock(output->mutex);
    stats.push_back({.stream = output->target.stream_name,
                     .location = output->target.location,
                     .frames = output->frames,
                     .dropped = output->dropped,
                     .reconnects = output->reconnects,
                     .connected = !output->away && output->error.empty(),
                     .error = output->error});
  }
  return stats;
}

std::vector<SinkReport> EncodingSink::reports() const {
  std::vector<SinkReport> reports;
  for (const auto& output : outputs_) {
    std::lock_guard lock(output->mutex);
    reports.push_back({.source = output->target.stream_name,
                       .path = output->frames > 0 ? output->target.location : std::string(),
                       .encoder = output->encoder_name,
                       .frames = output->frames,
                       .error = output->error,
                       .dropped = output->dropped,
                       .reconnects = output->reconnects});
  }
  return reports;
}

namespace {

io::EncoderOptions encoder_options(io::EncoderCodec codec, const std::string& preset, std::optional<int> qp,
                                   int width, int height, int encoder_threads) {
  io::EncoderOptions options;
  options.codec = codec;
  options.width = width;
  options.height = height;
  options.preset = preset;
  options.threads = encoder_threads;
  options.qp = qp.value_or(-1);
  return options;
}

}  // namespace

VideoSink::VideoSink(VideoSinkConfig config, std::vector<std::string> stream_names, Streams streams,
                     int width, int height, int encoder_threads, PicturePicker pick)
    : EncodingSink(streams, stream_names.size(), std::move(pick)), config_(std::move(config)) {
  for (std::size_t s = 0; s < stream_names.size(); ++s) {
    add_output({.stream = s,
                .stream_name = stream_names[s],
                .location = video_output_path(config_, stream_names[s]).string(),
                .options = encoder_options(config_.codec, config_.preset, config_.qp, width, height,
                                           encoder_threads)});
  }
}

Status VideoSink::start(std::span<const Rational> source_frame_rates) {
  std::error_code error;
  std::filesystem::create_directories(config_.output_dir, error);
  if (error) {
    return make_error(StatusCode::kIoError, "sinks.video.output_dir ", config_.output_dir, ": ",
                      error.message());
  }
  start_outputs(source_frame_rates);
  return Status::ok();
}

StreamSink::StreamSink(StreamSinkConfig config, std::vector<std::string> stream_names, Streams streams,
                       int width, int height, int encoder_threads, PicturePicker pick)
    : EncodingSink(streams, stream_names.size(), std::move(pick)),
      config_(std::move(config)),
      stream_names_(std::move(stream_names)) {
  io::EncoderOptions options =
      encoder_options(config_.codec, config_.preset, config_.qp, width, height, encoder_threads);
  options.hls_segment_seconds = config_.segment_seconds;
  options.hls_playlist_size = config_.playlist_size;
  options.rtsp_transport = config_.transport;
  options.max_b_frames = 0;  // live: a frame leaves the encoder as soon as it is encoded
  for (std::size_t s = 0; s < stream_names_.size(); ++s) {
    if (config_.hls) {
      options.target = io::EncoderTarget::kHls;
      add_output({.stream = s,
                  .stream_name = stream_names_[s],
                  .location = hls_playlist_path(*config_.hls, stream_names_[s]).string(),
                  .options = options,
                  .live = true});
    }
    if (config_.rtsp) {
      options.target = io::EncoderTarget::kRtsp;
      add_output(
          {.stream = s,
           .stream_name = stream_names_[s],
           .location = rtsp_push_url(*config_.rtsp, stream_names_[s], streams == Streams::kMosaic),
           .options = options,
           .live = true,
           .reconnect = Backoff(config_.reconnect_min_ms / 1000.0, config_.reconnect_max_ms / 1000.0)});
    }
  }
}

Status StreamSink::start(std::span<const Rational> source_frame_rates) {
  if (config_.hls) {
    for (const std::string& name : stream_names_) {
      const std::filesystem::path folder = hls_playlist_path(*config_.hls, name).parent_path();
      std::error_code error;
      std::filesystem::create_directories(folder, error);
      if (error) {
        return make_error(StatusCode::kIoError, "sinks.stream.hls ", folder.string(), ": ", error.message());
      }
    }
  }
  start_outputs(source_frame_rates);
  return Status::ok();
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
  if (!error_.empty()) return Status::ok();
  errno = 0;
  for (std::size_t i = 0; i < batch->size(); ++i) {
    file_ << frame_record_line(*batch, i, source_names_, labels_) << '\n';
  }
  if (!file_) {
    fail(errno != 0 ? std::strerror(errno) : "write failed");
    return Status::ok();
  }
  frames_ += static_cast<std::int64_t>(batch->size());
  return Status::ok();
}

void MetadataSink::fail(std::string reason) {
  error_ = reason + "; the partial file was removed";
  log_error("sinks.metadata.path {}: {}; the other outputs carry on", config_.path, error_);
  file_.close();
  pending_->discard();
}

Status MetadataSink::finish() {
  if (!file_.is_open()) return Status::ok();
  errno = 0;
  file_.close();
  if (file_.fail()) {
    fail(errno != 0 ? std::strerror(errno) : "close failed");
    return Status::ok();
  }
  return pending_->commit();
}

std::vector<SinkReport> MetadataSink::reports() const {
  if (error_.empty()) return {};  // the summary lists the video outputs; this one only when it failed
  return {SinkReport{
      .source = "metadata", .path = config_.path, .encoder = "", .frames = frames_, .error = error_}};
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
