// Video sources: one thread per source that demuxes, decodes and pushes frames into the stream mux.
//
// Each source runs on its own, at its decoder's pace, blocked by the mux when its queue is full
// (back-pressure), and ends by itself: at the end of its file (or of `duration`), on an error
// (reported to the mux with mux.fail(), which logs it and lets the other sources carry on), or when
// the mux is stopping (Ctrl-C: push() returns false). A looping source seeks back to `start` at
// the end, keeps its timestamps increasing across loops and numbers its passes (SourceFrame::pass).
//
// Frames leave a source at the mux's size (MuxConfig width x height), also after a resolution
// change mid-stream: NVDEC scales in hardware, the cpu decoder with libswscale. Their format is
// NV12: 10/12-bit sources are narrowed to 8 bits by the decoder (NVDEC in hardware where the GPU
// can, otherwise the source decodes on the CPU, logged as a fallback). A read error mid-stream (a
// truncated file) fails the source only after every frame the decoder still held was delivered.
// On the GPU path every frame is in device memory and carries a ready event recorded on the
// source's decode stream, which the consumer waits
// on with cudaStreamWaitEvent: an NVDEC frame as it comes, a cpu-decoded frame (fallback) after
// its upload into the source's device pool. On the CPU path frames are host memory, ready at once.
//
// Live sources (network URLs): a connection that fails, ends or stalls past `timeout` is made
// again with exponential backoff (reconnect_initial doubling up to reconnect_max, reconnect_attempts
// failures in a row at most; 0: forever), counted and logged. While it reconnects the source pushes
// nothing, so the live mux batches the others without it. Its frame index and timestamps go on
// from where they were and its pass count goes up by one, so the ops that keep state per source
// (the tracker) start again. A live stream whose clock jumps (pts backwards, or forwards by more
// than kMaxLiveClockJump) is re-anchored on the frame before and the jump counted: the output
// timeline only moves forwards. Sources can be added and removed while the others run (add,
// remove), each in a mux slot of its own.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/cuda_stream.h"
#include "core/frame.h"
#include "core/status.h"
#include "io/decoder.h"
#include "pipeline/config.h"
#include "pipeline/stream_mux.h"

namespace fovea::pipeline {

#if !defined(FOVEA_HAVE_CUDA)
using cudaEvent_t = struct CUevent_st*;
#endif

// What a source hands to the mux.
struct SourceFrame {
  Frame frame;                  // NV12 at the mux size; device memory on the GPU path
  cudaEvent_t ready = nullptr;  // GPU path: wait on it before reading `frame`; null on the CPU path
  // pts of `frame` in microseconds on the source's output timeline, which starts at `start`: a
  // frame's time in the file minus `start` (rounded to the time base), plus the length of the
  // passes before it when looping (last pts - first pts + one frame), so it keeps increasing.
  // frame.pts is the same time in time_base units, and frame.index the frame's position on it.
  std::int64_t pts_us = 0;
  Rational time_base;  // of frame.pts, the source stream's, for encoders that keep timestamps
  // 0 on the first pass over the stream, one more each time the source starts it again (a loop
  // or a reconnect): what shows a restart to the ops that keep state per source (the tracker),
  // which the index and pts, both still increasing, hide.
  int pass = 0;
  // Live sources: when the frame was captured, in microseconds since the Unix epoch: the sender's
  // clock from its RTCP sender reports when the stream has them, else when the frame arrived
  // (decoded). Files have no such clock: none.
  std::optional<std::int64_t> capture_time_us;
  // The source's name (outputs, metadata): slots are reused by sources added at run time.
  std::shared_ptr<const std::string> name;
};

enum class SourceState { kConnecting, kRunning, kReconnecting, kEnded, kFailed };
std::string_view source_state_name(SourceState state);

// What the run reports per source besides the mux's frame counts.
struct SourceReport {
  std::string name;
  std::string uri;
  SourceState state = SourceState::kConnecting;
  int reconnects = 0;   // losses of the connection (or refusals at the start), each counted once however many
                        // attempts it takes
  int clock_jumps = 0;  // live timestamps that jumped and were re-anchored
  std::string last_error;                                 // the last connection error; "" if none
  io::DecoderBackend backend = io::DecoderBackend::kCpu;  // the backend that actually decoded
  std::string decoder;          // when set, what the stats call the decoder instead ("nvjpeg 980, cpu 20")
  std::string fallback_reason;  // "" unless nvdec was asked and not used
  Rational frame_rate;          // of the source stream, for encoders
  int loops = 0;                // completed passes over the file
  std::int64_t expected_frames = 0;  // one pass's frames, when known and the source ends (not looping)
  std::int64_t frames_decoded = 0;
  std::int64_t frames_damaged = 0;
  // Image sources: the files that could not be read or decoded (skipped, the others go on), the
  // first kMaxListedFailures by name and reason, and how many in all.
  std::vector<SkippedItem> failed_items;
  std::int64_t items_failed = 0;
  // Image sources: where their decode threads spent their time (SourceStats::work), how many there
  // were and how long they ran.
  std::vector<SourceWork> work;
  int threads = 0;
  double threads_span_s = 0.0;
};

struct VideoSourceOptions {
  int width = 0;  // the mux size every frame is scaled to
  int height = 0;
  bool gpu = false;  // GPU path: device frames with ready events (needs CUDA and a GPU)
  int device = 0;
  // Device frames one source may hold at once (the decoder's output pool): the mux's per-source
  // queue plus the frames the batches in flight hold. The source blocks on the mux's queue, not on
  // its pool: a consumer that holds more fails the source (kResourceExhausted, naming this option).
  // The consumer releases a frame only after the GPU work reading it has completed (core/pool.h).
  int max_frames_in_flight = 16;
};

// Runs the sources of a pipeline. start() launches one thread per source; join() waits for them
// all. The mux must outlive the VideoSources, and the VideoSources every wait on a ready event
// (the events are its own). Destroying it while sources still run stops the mux first
// (request_stop), so that a source blocked on a full queue ends. The sources given to the
// constructor take the mux's first slots, in order; `names` are theirs (source_names()).
// What the flow runner drives, whatever the frames come from: video sources (below) or an image
// folder (image_source.h). Each pushes into the flow's mux and ends its mux sources by itself.
class FrameSources {
 public:
  virtual ~FrameSources() = default;
  virtual void start() = 0;
  // Every source stops now (Ctrl-C, a failed stage): blocking reads return at once.
  virtual void request_stop() = 0;
  virtual void join() = 0;
  // A snapshot, safe while the threads run; one entry per mux slot, nullopt for a slot never used.
  virtual std::vector<std::optional<SourceReport>> reports() const = 0;
  // Frames decoded by the sources whose slots were reused (StreamMux::retired_stats).
  virtual std::int64_t retired_decoded() const { return 0; }
  // A service's sources (fovea serve): added and removed while the flow runs. Sources that cannot
  // refuse with kUnsupported (add) and false (remove).
  virtual Result<std::size_t> add(SourceConfig source, std::string name);
  virtual bool remove(std::size_t slot);
};

class VideoSources final : public FrameSources {
 public:
  VideoSources(std::vector<SourceConfig> sources, std::vector<std::string> names, VideoSourceOptions options,
               StreamMux<SourceFrame>& mux);
  ~VideoSources() override;  // joins
  VideoSources(const VideoSources&) = delete;
  VideoSources& operator=(const VideoSources&) = delete;

  void start() override;
  // Thread-safe, after start(): a source in a free mux slot, started at once. kResourceExhausted
  // when every slot is taken (or the flow is stopping). Returns the slot.
  Result<std::size_t> add(SourceConfig source, std::string name) override;
  // Thread-safe: stops the source in `slot` (a blocking read returns at once); its frames already
  // queued are still batched, then its slot is free. False if no running source is in the slot.
  bool remove(std::size_t slot) override;
  void request_stop() override;
  void join() override;
  std::vector<std::optional<SourceReport>> reports() const override;
  std::int64_t retired_decoded() const override;

 private:
  struct Source;  // one source's thread and state (video_source.cpp)
  void launch(Source& source);
  StreamMux<SourceFrame>& mux_;
  VideoSourceOptions options_;
  mutable std::mutex mutex_;                      // guards sources_ (add and remove come from other threads)
  std::vector<std::unique_ptr<Source>> sources_;  // one per mux slot; null until used
  bool started_ = false;
  std::int64_t retired_decoded_ = 0;
};

}  // namespace fovea::pipeline
