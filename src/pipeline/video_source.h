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
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
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
  // 0 on the first pass over the stream, one more each time the source starts it again (a loop):
  // what shows a restart to the ops that keep state per source (the tracker), which the index and
  // pts, both still increasing, hide.
  int pass = 0;
};

// What the run reports per source besides the mux's frame counts.
struct SourceReport {
  std::string uri;
  io::DecoderBackend backend = io::DecoderBackend::kCpu;  // the backend that actually decoded
  std::string fallback_reason;                            // "" unless nvdec was asked and not used
  Rational frame_rate;                                    // of the source stream, for encoders
  int loops = 0;                                          // completed passes over the file
  std::int64_t expected_frames = 0;  // one pass's frames, when known and the source ends (not looping)
  std::int64_t frames_decoded = 0;
  std::int64_t frames_damaged = 0;
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
  const std::atomic<bool>* cancel = nullptr;  // demuxer cancellation (Ctrl-C)
};

// Runs the sources of a pipeline. start() launches one thread per source; join() waits for them
// all. The mux must outlive the VideoSources, and the VideoSources every wait on a ready event
// (the events are its own). Destroying it while sources still run stops the mux first
// (request_stop), so that a source blocked on a full queue ends.
class VideoSources {
 public:
  VideoSources(std::vector<SourceConfig> sources, VideoSourceOptions options, StreamMux<SourceFrame>& mux);
  ~VideoSources();  // joins
  VideoSources(const VideoSources&) = delete;
  VideoSources& operator=(const VideoSources&) = delete;

  void start();
  void join();
  // A snapshot, safe while the threads run; one entry per source in configuration order.
  std::vector<SourceReport> reports() const;

 private:
  struct Source;  // one source's thread and state (video_source.cpp)
  std::vector<std::unique_ptr<Source>> sources_;
};

}  // namespace fovea::pipeline
