// One thread per source: demux, decode at the mux's size, place each frame on the source's output
// timeline (start, duration, loops) and push it into the mux.
//
// A pass runs from a seek to `start` to the end of the file or of `duration`; a looping source
// restarts its decoder for the next pass (nothing of the old stream's reference pictures or
// reordering is left to flush, and no new NVDEC session slows the others) and shifts its timestamps
// by the length of the pass before, so that they keep increasing.
#include "pipeline/video_source.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "core/log.h"
#include "core/pool.h"
#include "io/demuxer.h"
#include "io/url.h"
#include "pipeline/backoff.h"
#include "trace/tracer.h"

#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#endif

namespace fovea::pipeline {
namespace {

// A frame's duration when the stream does not state its frame rate: 30 fps, the most common rate
// of cameras and files, so a looping source without one still advances by a plausible step.
constexpr Rational kFallbackFrameRate{30, 1};

// A live stream's pts that jumps forwards by more than this (seconds) is a wrong clock, not a gap:
// a camera that lost frames for longer has lost its connection and reconnects.
constexpr double kMaxLiveClockJump = 10.0;
// A live connection's first frames, whose pts may still step back once (Timeline::place).
constexpr std::int64_t kSettlingFrames = 60;

std::int64_t unix_time_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool valid(Rational r) {
  return r.num > 0 && r.den > 0;
}

// Errors name the source once: most io errors start with the uri already.
Status naming(const Status& status, const std::string& uri) {
  return status.message().find(uri) != std::string::npos ? status : status.with_context(uri);
}

// "uri: what: reason", from an io error that may start with "uri: " itself.
Status explained(const Status& status, const std::string& uri, std::string_view what) {
  std::string_view reason = status.message();
  const std::string prefix = uri + ": ";
  if (reason.substr(0, prefix.size()) == prefix) {
    reason.remove_prefix(prefix.size());
  }
  return Status(status.code(), fmt::format("{}: {}: {}", uri, what, reason));
}

// The source's output timeline, in the stream's time_base units. A pass's frames map to
//   output = offset + (source pts - start)
// where offset is the length of the passes before (last pts - first pts + one frame), so the first
// frame of a pass follows the last of the pass before by one frame duration.
//
// A live source's timeline only moves forwards: a frame whose pts goes back, or jumps forwards by
// more than kMaxLiveClockJump (a camera whose clock was reset or is wrong), is placed one frame
// after the frame before, and the timeline goes on from there (counted in clock_jumps()). After a
// reconnect the new connection's first frame follows the old connection's last one (resume_after).
//
// `start` and `duration` count from `origin`, the stream's first timestamp (an MPEG-TS starts at 1.4 s
// or more): start 1.0 is one second into the video. The output pts is the source's less `start`, as
// before a stream's own origin was known.
// How far before a source's start its seeks aim (see the pass loop).
constexpr double kSeekPreroll = 2.0;

class Timeline {
 public:
  Timeline(Rational time_base, Rational frame_rate, double origin, double start,
           std::optional<double> duration, bool live)
      : time_base_(time_base),
        frame_duration_(std::max<std::int64_t>(
            1, to_ticks(1.0 / (valid(frame_rate) ? frame_rate : kFallbackFrameRate).to_double()))),
        start_(to_ticks(origin + start)),
        shift_(to_ticks(start)),
        has_end_(duration.has_value()),
        end_(duration ? to_ticks(origin + start + *duration) : 0),
        live_(live),
        max_jump_(to_ticks(kMaxLiveClockJump)) {}

  // The first frame placed goes one frame after `pts_us` (the previous connection's last frame).
  void resume_after(std::int64_t pts_us) {
    resume_ = std::llround(static_cast<long double>(pts_us) * time_base_.den / time_base_.num / 1'000'000) +
              frame_duration_;
  }
  int clock_jumps() const { return clock_jumps_; }

  void begin_pass() {
    if (pass_frames_ > 0) {
      offset_ += last_ - first_ + frame_duration_;
    }
    pass_frames_ = 0;
    ++pass_;
  }
  // 0-based: the passes begun before this one.
  int pass() const { return pass_; }

  // The frame's source pts; one without a pts gets the seek target plus its index in the pass's
  // frames times the frame duration (the decoder restarts its index at each pass).
  std::int64_t source_pts(const Frame& frame) const {
    return frame.has_pts ? frame.pts : start_ + frame.index * frame_duration_;
  }
  bool before_start(std::int64_t pts) const { return pts < start_; }
  bool past_end(std::int64_t pts) const { return has_end_ && pts >= end_; }

  // Places a frame that passed the start and end checks; returns its output pts.
  std::int64_t place(std::int64_t pts) {
    if (resume_) {
      offset_ = *resume_ - (pts - shift_);
      resume_.reset();
    }
    const bool first_of_pass = pass_frames_++ == 0;
    if (first_of_pass) {
      first_ = pts;
    }
    last_ = pts;
    std::int64_t out = offset_ + pts - shift_;
    // A repeated timestamp is the stream's, not a wrong clock: FFmpeg's RTP client gives a frame
    // sent as two access units (a camera's sliced keyframe) the same pts twice.
    const bool repeated = live_ && placed_ && out == last_out_;
    const bool jumped = live_ && placed_ && (out < last_out_ || out - last_out_ > max_jump_);
    if (repeated || jumped) {
      offset_ += last_out_ + frame_duration_ - out;
      out = last_out_ + frame_duration_;
      // FFmpeg's RTSP client rebases a new connection's pts once the first RTCP sender report
      // arrives, a step back within its first second: re-anchored, but not a wrong clock.
      if (jumped && pass_frames_ > kSettlingFrames) ++clock_jumps_;
    }
    placed_ = true;
    last_out_ = out;
    return out;
  }
  std::int64_t pass_frames() const { return pass_frames_; }

  std::int64_t to_us(std::int64_t ticks) const {
    return std::llround(static_cast<long double>(ticks) * 1'000'000 * time_base_.num / time_base_.den);
  }

 private:
  std::int64_t to_ticks(double seconds) const {
    return std::llround(static_cast<long double>(seconds) * time_base_.den / time_base_.num);
  }

  Rational time_base_;
  std::int64_t frame_duration_;
  std::int64_t start_;  // the first pts kept: origin + start
  std::int64_t shift_;  // taken off the output pts: start
  // A plain pair, not std::optional: GCC 12 takes the optional's value for uninitialized at -O3.
  bool has_end_;
  std::int64_t end_;
  bool live_;
  std::int64_t max_jump_;
  std::int64_t offset_ = 0;
  std::int64_t first_ = 0;
  std::int64_t last_ = 0;
  std::int64_t pass_frames_ = 0;
  int pass_ = -1;  // none begun yet
  std::optional<std::int64_t> resume_;
  bool placed_ = false;
  std::int64_t last_out_ = 0;
  int clock_jumps_ = 0;
};

enum class PassEnd { kEndOfPass, kStopped };
enum class Step { kNext, kEndOfPass, kStopped };

}  // namespace

struct VideoSources::Source {
  Source(std::size_t position, SourceConfig source, std::string source_name,
         const VideoSourceOptions& source_options, StreamMux<SourceFrame>& target)
      : index(position),
        config(std::move(source)),
        name(std::make_shared<const std::string>(std::move(source_name))),
        options(source_options),
        mux(target),
        live(io::is_network_url(config.uri)) {
    report.name = *name;
    report.uri = config.uri;
  }

  void run() {
    if (!live) mux.hold_when_full(index);  // a file waits for the flow; only a camera cannot
    Status status = check_options();
    if (status.is_ok()) status = prepare_device();
    if (status.is_ok()) status = run_connections();
    const bool stopped = stop.load();
    set_state(status.is_ok() || stopped ? SourceState::kEnded : SourceState::kFailed);
    if (status.is_ok() || stopped) {
      mux.end(index);
    } else {
      mux.fail(index, naming(status, config.uri));
    }
    finished.store(true);
  }

  // Connects, and for a live source connects again after each loss, with backoff, until it stops,
  // ends for good or runs out of attempts. A file runs once.
  Status run_connections() {
    Backoff backoff(config.reconnect_initial, config.reconnect_max, config.reconnect_attempts);
    for (;;) {
      const std::int64_t delivered_before = delivered;
      const Status status = run_passes();
      // A clean end is one the source asked for (the end of `duration`, of a network file): a live
      // stream that ends by itself is an error (io/demuxer.h), the connection lost.
      if (stop.load() || !live || !config.reconnect || status.is_ok()) return status;
      if (delivered > delivered_before) backoff.reset();  // it was connected: start the waits over
      if (!backoff.next()) {
        return status.with_context(
            fmt::format("gave up after {} attempts to reconnect", config.reconnect_attempts));
      }
      const std::string reason = status.message();
      {
        const std::lock_guard lock(mutex);
        if (backoff.attempt() == 1) ++report.reconnects;  // a loss, however many attempts it takes
        report.last_error = reason;
        report.state = SourceState::kReconnecting;
      }
      const std::string attempts =
          config.reconnect_attempts > 0 ? fmt::format(" of {}", config.reconnect_attempts) : "";
      if (backoff.attempt() == 1) {
        log_warn("source {}: connection lost ({}); reconnecting in {:.1f} s", *name, reason,
                 backoff.wait_seconds());
      } else {
        log_warn("source {}: reconnect attempt {}{} failed ({}); next in {:.1f} s", *name,
                 backoff.attempt() - 1, attempts, reason, backoff.wait_seconds());
      }
      if (!wait_or_stop(backoff.wait_seconds())) return Status::ok();
    }
  }

  // Sleeps, waking at once when the source is stopped; false if it was.
  bool wait_or_stop(double seconds) {
    std::unique_lock lock(stop_mutex);
    return !stop_changed.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return stop.load(); });
  }

  void request_stop() {
    {
      const std::lock_guard lock(stop_mutex);
      stop.store(true);
    }
    stop_changed.notify_all();
  }

  void set_state(SourceState state) {
    const std::lock_guard lock(mutex);
    report.state = state;
  }

  Status check_options() const {
    for (const auto& [option, value] :
         {std::pair{"width", options.width}, std::pair{"height", options.height}}) {
      if (value < 2 || value % 2 != 0) {
        return make_error(
            StatusCode::kInvalidArgument,
            fmt::format("video source option {} (the mux size) must be a positive even number, not {}",
                        option, value));
      }
    }
    if (options.max_frames_in_flight < 1) {
      return make_error(StatusCode::kInvalidArgument,
                        fmt::format("video source option max_frames_in_flight must be at least 1, not {}",
                                    options.max_frames_in_flight));
    }
    return Status::ok();
  }

  // The frames one pass delivers, from the container's frame count (a share of it for a start or
  // duration); 0 when unknown or endless (a looping or live source), for the progress line's ETA.
  std::int64_t expected_frames(const io::StreamInfo& info) const {
    if (config.loop || info.frame_count <= 0) return 0;
    if (config.start <= 0.0 && !config.duration) return info.frame_count;
    if (info.duration_s <= 0.0) return 0;
    const double end = std::min(info.duration_s, config.start + config.duration.value_or(info.duration_s));
    const double share = std::max(0.0, end - config.start) / info.duration_s;
    return static_cast<std::int64_t>(std::llround(share * static_cast<double>(info.frame_count)));
  }

  // One connection (a file: the whole run): opens the stream and runs its passes.
  Status run_passes() {
    set_state(delivered > 0 ? SourceState::kReconnecting : SourceState::kConnecting);
    FOVEA_ASSIGN_OR_RETURN(
        std::unique_ptr<io::Demuxer> demuxer,
        io::Demuxer::open(config.uri, {.timeout_ms = static_cast<int>(std::lround(config.timeout * 1000)),
                                       .rtsp_transport = config.transport,
                                       .cancel = &stop}));
    const io::StreamInfo& info = demuxer->info();
    if (info.bit_depth > 8) {
      log_info("{}: {}-bit video ({}{}{}); the pipeline works on it in 8 bits", config.uri, info.bit_depth,
               info.codec_name, info.profile.empty() ? "" : " ", info.profile);
    }
    if (!valid(info.time_base)) {
      return make_error(StatusCode::kCorruptData, config.uri, ": the video stream has no valid time base");
    }
    {
      const std::lock_guard lock(mutex);
      report.frame_rate = info.frame_rate;
      report.expected_frames = expected_frames(info);
    }
    if (valid(info.frame_rate)) mux.set_frame_rate(index, info.frame_rate.to_double());
    // A file's start and duration count from its first timestamp; without them nothing is cut, as
    // before (a live stream's first timestamp says nothing of where the user wants to start).
    const bool cut = config.start > 0.0 || config.duration.has_value();
    const double origin = cut && !live ? info.start_s : 0.0;
    Timeline timeline(info.time_base, info.frame_rate, origin, config.start, config.duration, live);
    if (last_pts_us) timeline.resume_after(*last_pts_us);
    const int passes_before = passes;
    const int jumps_before = clock_jumps;
    connection = demuxer.get();
    // The passes of this connection count on from the ones before, however it ends.
    struct Tally {
      Source& source;
      Timeline& timeline;
      int passes_before, jumps_before;
      ~Tally() {
        source.connection = nullptr;
        source.passes = passes_before + timeline.pass() + 1;
        source.clock_jumps = jumps_before + timeline.clock_jumps();
        const std::lock_guard lock(source.mutex);
        source.report.clock_jumps = source.clock_jumps;
        source.decoded_before = source.report.frames_decoded;
        source.decoded_after_stop = 0;
        source.damaged_before = source.report.frames_damaged;
      }
    } tally{*this, timeline, passes_before, jumps_before};
    std::unique_ptr<io::Decoder> decoder;
    for (int pass = 0;; ++pass) {
      if (pass > 0 || config.start > 0.0) {
        // Seeking lands on a keyframe before the target, but MPEG-TS's search by timestamp can land
        // after it: the seek aims kSeekPreroll earlier, and the Timeline drops the frames before start.
        const Status sought = demuxer->seek(origin + std::max(0.0, config.start - kSeekPreroll));
        if (!sought.is_ok()) {
          return explained(
              sought, config.uri,
              fmt::format("cannot seek to start = {} s{}", config.start, pass > 0 ? " to loop" : ""));
        }
      }
      timeline.begin_pass();
      FOVEA_TRY(start_decoding(info, decoder));
      FOVEA_ASSIGN_OR_RETURN(PassEnd end, run_pass(*demuxer, *decoder, timeline));
      if (end == PassEnd::kStopped) {
        return Status::ok();
      }
      if (timeline.pass_frames() == 0) {
        // Also what keeps a looping source from spinning on a range without frames.
        return make_error(
            StatusCode::kInvalidArgument,
            fmt::format(
                "{}: no frame at or after start = {} s{}{}", config.uri, config.start,
                config.duration ? fmt::format(" within duration = {} s", *config.duration) : "",
                info.duration_s > 0.0 ? fmt::format(" (the video lasts {} s)", info.duration_s) : ""));
      }
      {
        const std::lock_guard lock(mutex);
        ++report.loops;
      }
      if (!config.loop) {
        return Status::ok();
      }
    }
  }

  // Always the mux size: the decoders scale only frames of another size (NVDEC's scaler costs time
  // even at 1:1, and unscaled frames are bit-exact with a software decode), so a stream whose
  // resolution changes mid-stream keeps the mux size after the change too. 10/12-bit sources are
  // narrowed to 8 bits by the decoder: every op downstream works on NV12.
  io::DecoderOptions decoder_options() const {
    io::DecoderOptions decoder;
    decoder.backend = options.gpu ? config.decoder : io::DecoderBackend::kCpu;
    decoder.cpu_output = PixelFormat::kNV12;
    decoder.output_width = options.width;
    decoder.output_height = options.height;
    decoder.eight_bit_output = true;
    decoder.device = options.device;
    decoder.max_frames_in_flight = options.max_frames_in_flight;
#if defined(FOVEA_HAVE_CUDA)
    decoder.stream = stream.get();
#endif
    return decoder;
  }

  // Opens the decoder for the first pass and restarts it for the next ones. One decoder serves every
  // pass of a looping source: an NVDEC decoder created while other sources decode slows them all
  // (8 sessions making a new one per pass of a 300-frame clip: 42%; docs/perf.md, "Run E").
  Status start_decoding(const io::StreamInfo& info, std::unique_ptr<io::Decoder>& decoder) {
    if (decoder) {
      return decoder->restart();
    }
    FOVEA_ASSIGN_OR_RETURN(io::OpenedDecoder opened, io::open_decoder(info, decoder_options()));
    decoder = std::move(opened.decoder);
    const std::lock_guard lock(mutex);
    report.backend = decoder->backend();
    const bool nvdec_refused = !options.gpu && config.decoder == io::DecoderBackend::kNvdec;
    report.fallback_reason = nvdec_refused ? "nvdec needs the GPU path" : opened.fallback_reason;
    return Status::ok();
  }

  // One pass: reads until the end of the file (draining the decoder), the end of `duration`, or a
  // stop. A read error (a truncated or damaged file) ends the pass as the end of the file does,
  // after the frames the decoder still holds have been delivered, and is then returned.
  Result<PassEnd> run_pass(io::Demuxer& demuxer, io::Decoder& decoder, Timeline& timeline) {
    std::vector<Frame> decoded;
    const auto collect = [&decoded](Frame&& frame) { decoded.push_back(std::move(frame)); };
    const auto result = [&](PassEnd end) {
      record_decoder_stats(decoder.stats());
      return end;
    };
    io::Packet packet;
    while (true) {
      const Result<bool> read = demuxer.read(packet);
      const bool got = read.is_ok() && read.value();
      {
        FOVEA_TRACE_RANGE("decode");
        const Status decoded_status =
            got ? io::send_and_receive(decoder, packet, collect) : io::finish_and_receive(decoder, collect);
        // After a read error, the read error is the one to report; the drain's is a consequence.
        if (!decoded_status.is_ok() && read.is_ok()) {
          return decoded_status;
        }
        if (!decoded_status.is_ok()) {
          log_warn("{}: draining the decoder after a read error failed: {}", config.uri,
                   decoded_status.to_string());
        }
      }
      record_decoder_stats(decoder.stats());
      for (std::size_t i = 0; i < decoded.size(); ++i) {
        FOVEA_ASSIGN_OR_RETURN(Step step, deliver(std::move(decoded[i]), timeline));
        // The frames a stop leaves undelivered were decoded for nothing: not the run's.
        if (step == Step::kStopped) decoded_after_stop += static_cast<std::int64_t>(decoded.size() - i);
        if (step != Step::kNext) {
          return result(step == Step::kStopped ? PassEnd::kStopped : PassEnd::kEndOfPass);
        }
      }
      decoded.clear();
      if (!read.is_ok()) {
        return read.status();
      }
      if (!got) {
        return result(PassEnd::kEndOfPass);
      }
    }
  }

  // The decoder's counters, over every pass so far.
  // Each connection has a decoder of its own: the counts of the ones before are added.
  void record_decoder_stats(const io::DecoderStats& stats) {
    const std::lock_guard lock(mutex);
    report.frames_decoded = decoded_before + stats.frames_decoded - decoded_after_stop;
    report.frames_damaged = damaged_before + stats.frames_damaged;
  }

  // A wrong camera clock is seen while the connection lasts: in the live report and the log.
  void note_clock_jump(std::int64_t source_pts, const Timeline& timeline) {
    const int jumps = clock_jumps + timeline.clock_jumps();
    {
      const std::lock_guard lock(mutex);
      report.clock_jumps = jumps;
    }
    // The first jumps, then every power of two: a camera whose clock is always wrong does not fill
    // the log.
    if ((jumps & (jumps - 1)) != 0) return;
    log_warn(
        "source {}: its clock jumped (camera time {:.3f} s); the frame is placed one frame after the last "
        "(clock jumps: {}; logged at 1, 2, 4, 8...)",
        *name, static_cast<double>(timeline.to_us(source_pts)) / 1e6, jumps);
  }

  Result<Step> deliver(Frame&& frame, Timeline& timeline) {
    if (stop.load()) {
      return Step::kStopped;  // frames decoded after a stop are not part of the run
    }
    const std::int64_t pts = timeline.source_pts(frame);
    if (timeline.before_start(pts)) {
      return Step::kNext;
    }
    if (timeline.past_end(pts)) {
      return Step::kEndOfPass;
    }
    if (frame.image.format != PixelFormat::kNV12 || frame.image.width != options.width ||
        frame.image.height != options.height) {
      return make_error(StatusCode::kInternal,
                        fmt::format("{}: the decoder delivered {} at {}x{}, not NV12 at the mux size {}x{}",
                                    config.uri, pixel_format_name(frame.image.format), frame.image.width,
                                    frame.image.height, options.width, options.height));
    }
    SourceFrame out;
    out.time_base = frame.time_base;
    if (live) out.capture_time_us = stream_wall_clock(pts).value_or(unix_time_us());
    const int jumps_before = timeline.clock_jumps();
    frame.pts = timeline.place(pts);
    if (timeline.clock_jumps() != jumps_before) note_clock_jump(pts, timeline);
    frame.has_pts = true;
    frame.index = delivered++;
    out.pts_us = timeline.to_us(frame.pts);
    last_pts_us = out.pts_us;
    out.pass = passes + timeline.pass();
    out.name = name;
    out.frame = std::move(frame);
    if (delivered == 1 || timeline.pass_frames() == 1) set_state(SourceState::kRunning);
    FOVEA_TRY(make_ready(out));
    const std::int64_t pts_us = out.pts_us;
    return mux.push(index, std::move(out), pts_us) ? Step::kNext : Step::kStopped;
  }

#if defined(FOVEA_HAVE_CUDA)
  Status prepare_device() {
    if (!options.gpu) {
      return Status::ok();
    }
    // The runtime's current device is per thread.
    FOVEA_CUDA_TRY(cudaSetDevice(options.device));
    // High priority: the decoder's surface copies are short and every stage downstream waits on
    // them; at normal priority they queue behind the inference kernels and starve the flow.
    FOVEA_ASSIGN_OR_RETURN(stream, CudaStream::create(CudaStream::Priority::kHigh));
    // A ring of ready events, reused in turn. cudaStreamWaitEvent waits for the record that
    // precedes the call, so once the consumer has enqueued its wait, recording the event again
    // cannot change it. A slot comes round again max_frames_in_flight + 1 frames later; the
    // consumer holds at most max_frames_in_flight frames of this source (the bound the pools are
    // sized by) and releases a frame only after it enqueued its wait, so by then the wait on the
    // slot's previous frame is in. A consumer holding more would at worst have a late wait see a
    // later record on the same stream: it waits longer, never too short.
    for (int i = 0; i <= options.max_frames_in_flight; ++i) {
      FOVEA_ASSIGN_OR_RETURN(CudaEvent event, CudaEvent::create());
      events.push_back(std::move(event));
    }
    return Status::ok();
  }

  // GPU path: the frame is in device memory, ordered on `stream`, and `ready` is recorded after
  // it. An NVDEC frame was copied out on `stream` already; a cpu-decoded one (fallback) is
  // uploaded first.
  Status make_ready(SourceFrame& out) {
    if (!options.gpu) {
      return Status::ok();
    }
    if (out.frame.image.memory != MemoryKind::kDevice) {
      FOVEA_TRY(upload(out.frame));
    }
    const CudaEvent& event = events[next_event];
    next_event = (next_event + 1) % events.size();
    FOVEA_TRY(event.record(stream.get()));
    out.ready = event.get();
    return Status::ok();
  }

  Status upload(Frame& frame) {
    if (!upload_pool) {
      FOVEA_ASSIGN_OR_RETURN(upload_layout,
                             plan_image_allocation(PixelFormat::kNV12, options.width, options.height));
      FOVEA_ASSIGN_OR_RETURN(
          BufferPool pool,
          BufferPool::create("source upload " + config.uri, MemoryKind::kDevice, upload_layout.total_bytes,
                             static_cast<std::size_t>(options.max_frames_in_flight)));
      upload_pool.emplace(std::move(pool));
    }
    Result<PooledBuffer> block = upload_pool->acquire();
    if (!block.is_ok()) {
      return block.status().code() == StatusCode::kResourceExhausted
                 ? make_error(StatusCode::kResourceExhausted,
                              fmt::format("{}: the consumer holds more than {} frames of this source "
                                          "(max_frames_in_flight); release frames sooner or raise it",
                                          config.uri, options.max_frames_in_flight))
                 : block.status();
    }
    const ImageView device = image_view_in(block->data(), upload_layout, PixelFormat::kNV12, options.width,
                                           options.height, MemoryKind::kDevice);
    // From pageable memory the copy returns once the host rows are staged, so the host frame may
    // go as soon as the call returns.
    for (int p = 0; p < device.num_planes; ++p) {
      const PlaneShape shape = upload_layout.layout.planes[p];
      FOVEA_CUDA_TRY(
          cudaMemcpy2DAsync(device.planes[p].data, device.planes[p].pitch, frame.image.planes[p].data,
                            frame.image.planes[p].pitch, static_cast<std::size_t>(shape.width_bytes),
                            static_cast<std::size_t>(shape.height), cudaMemcpyHostToDevice, stream.get()));
    }
    frame.image = device;
    frame.owner = std::make_shared<PooledBuffer>(std::move(block).value());
    return Status::ok();
  }
#else
  Status prepare_device() const {
    return options.gpu ? make_error(StatusCode::kUnsupported,
                                    "the GPU path needs CUDA, and this build of fovea has none")
                       : Status::ok();
  }
  Status make_ready(SourceFrame&) const {
    return Status::ok();
  }
#endif

  std::optional<std::int64_t> stream_wall_clock(std::int64_t pts) const {
    return connection != nullptr ? connection->wall_clock_us(pts) : std::nullopt;
  }

  const std::size_t index;
  const SourceConfig config;
  const std::shared_ptr<const std::string> name;
  const VideoSourceOptions options;
  StreamMux<SourceFrame>& mux;
  const bool live;  // a network stream: reconnects, and its timeline only moves forwards
  std::thread thread;
  std::atomic<bool> finished{false};
  std::atomic<bool> stop{false};  // removed, or the flow stops: blocking reads return at once
  std::mutex stop_mutex;          // with stop_changed, wakes a backoff wait
  std::condition_variable stop_changed;
  // The source thread's own, over every connection and pass.
  std::int64_t delivered = 0;  // frames pushed
  int passes = 0;              // passes of the connections before this one
  int clock_jumps = 0;
  std::int64_t decoded_before = 0;      // by the decoders of the connections before this one
  std::int64_t decoded_after_stop = 0;  // by this connection's decoder, not delivered because of a stop
  std::int64_t damaged_before = 0;
  std::optional<std::int64_t> last_pts_us;
  const io::Demuxer* connection = nullptr;  // the open connection's demuxer, while it is open

  mutable std::mutex mutex;  // guards report
  SourceReport report;

#if defined(FOVEA_HAVE_CUDA)
  // The GPU path's decode stream, ready events and the fallback's upload pool. They outlive the
  // thread: the consumer may still wait on the events and read the frames after the source ended.
  CudaStream stream;
  std::vector<CudaEvent> events;
  std::size_t next_event = 0;
  std::optional<BufferPool> upload_pool;
  ImageAllocation upload_layout;
#endif
};

std::string_view source_state_name(SourceState state) {
  switch (state) {
    case SourceState::kConnecting: return "connecting";
    case SourceState::kRunning: return "running";
    case SourceState::kReconnecting: return "reconnecting";
    case SourceState::kEnded: return "ended";
    case SourceState::kFailed: return "failed";
  }
  return "unknown";
}

VideoSources::VideoSources(std::vector<SourceConfig> sources, std::vector<std::string> names,
                           VideoSourceOptions options, StreamMux<SourceFrame>& mux)
    : mux_(mux), options_(options), sources_(mux.source_count()) {
  FOVEA_CHECK_MSG(sources.size() == names.size(), "one name per video source");
  FOVEA_CHECK_MSG(sources.size() <= mux.source_count(), "a mux slot per video source");
  for (std::size_t i = 0; i < sources.size(); ++i) {
    sources_[i] = std::make_unique<Source>(i, std::move(sources[i]), std::move(names[i]), options, mux);
  }
}

Result<std::size_t> FrameSources::add(SourceConfig source, std::string) {
  return make_error(StatusCode::kUnsupported, source.uri,
                    ": this flow's sources cannot be added to while it runs");
}

bool FrameSources::remove(std::size_t) {
  return false;
}

VideoSources::~VideoSources() {
  // A source blocked on its full mux queue would never end if nobody takes batches any more.
  const bool running =
      std::any_of(sources_.begin(), sources_.end(), [](const std::unique_ptr<Source>& source) {
        return source && source->thread.joinable() && !source->finished.load();
      });
  if (running) {
    request_stop();
    mux_.request_stop();
  }
  join();
}

void VideoSources::launch(Source& source) {
  FOVEA_CHECK_MSG(!source.thread.joinable(), "a video source started twice");
  try {
    source.thread = std::thread([raw = &source] { raw->run(); });
  } catch (const std::exception& error) {
    source.finished.store(true);
    mux_.fail(source.index, make_error(StatusCode::kResourceExhausted, source.config.uri,
                                       ": cannot start its thread: ", error.what()));
  }
}

void VideoSources::start() {
  const std::lock_guard lock(mutex_);
  FOVEA_CHECK_MSG(!started_, "VideoSources::start() called twice");
  started_ = true;
  const auto used = std::count_if(sources_.begin(), sources_.end(),
                                  [](const std::unique_ptr<Source>& source) { return source != nullptr; });
  const auto nvdec_asked =
      std::count_if(sources_.begin(), sources_.end(), [](const std::unique_ptr<Source>& source) {
        return source && !source->options.gpu && source->config.decoder == io::DecoderBackend::kNvdec;
      });
  if (nvdec_asked > 0) {
    log_info("{} of {} sources asked for nvdec; they decode on the CPU, since nvdec needs the GPU path",
             nvdec_asked, used);
  }
  for (const std::unique_ptr<Source>& source : sources_) {
    if (source) launch(*source);
  }
}

Result<std::size_t> VideoSources::add(SourceConfig source, std::string name) {
  const std::lock_guard lock(mutex_);
  FOVEA_CHECK_MSG(started_, "VideoSources::add() before start()");
  const std::optional<std::size_t> slot = mux_.open_source(name);
  if (!slot) {
    return make_error(StatusCode::kResourceExhausted,
                      fmt::format("no free source slot for {}: all {} are in use (or the flow is stopping)",
                                  source.uri, mux_.source_count()));
  }
  // The slot's last source has ended (the mux freed it); its thread is done or about to be.
  if (std::unique_ptr<Source>& old = sources_[*slot]; old) {
    if (old->thread.joinable()) old->thread.join();
    const std::lock_guard old_lock(old->mutex);
    retired_decoded_ += old->report.frames_decoded;
  }
  sources_[*slot] = std::make_unique<Source>(*slot, std::move(source), std::move(name), options_, mux_);
  launch(*sources_[*slot]);
  return *slot;
}

bool VideoSources::remove(std::size_t slot) {
  const std::lock_guard lock(mutex_);
  if (slot >= sources_.size() || !sources_[slot] || sources_[slot]->finished.load()) return false;
  sources_[slot]->request_stop();
  return true;
}

void VideoSources::request_stop() {
  const std::lock_guard lock(mutex_);
  for (const std::unique_ptr<Source>& source : sources_) {
    if (source) source->request_stop();
  }
}

void VideoSources::join() {
  const std::lock_guard lock(mutex_);
  for (const std::unique_ptr<Source>& source : sources_) {
    if (source && source->thread.joinable()) {
      source->thread.join();
    }
  }
}

std::int64_t VideoSources::retired_decoded() const {
  const std::lock_guard lock(mutex_);
  return retired_decoded_;
}

std::vector<std::optional<SourceReport>> VideoSources::reports() const {
  const std::lock_guard lock(mutex_);
  std::vector<std::optional<SourceReport>> reports;
  reports.reserve(sources_.size());
  for (const std::unique_ptr<Source>& source : sources_) {
    if (!source) {
      reports.emplace_back();
      continue;
    }
    const std::lock_guard source_lock(source->mutex);
    reports.emplace_back(source->report);
  }
  return reports;
}

}  // namespace fovea::pipeline
