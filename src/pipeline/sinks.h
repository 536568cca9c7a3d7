// The segmentation flow's sinks, fed by the pipeline's last stage with batches whose outputs are
// ready in host memory (SegmentationOps::wait_for_outputs):
//
//   VideoSink     one video file per source (<output_dir>/<source name>.mp4). Each source has its
//                 own encoder thread behind a bounded queue, so the CPU encoders (libx264 on a GPU
//                 without NVENC) run in parallel across sources while the pipeline goes on; a full
//                 queue blocks the sink stage (back-pressure up to the sources). A source whose
//                 encoder fails is reported and skipped; the other files carry on. finish() drains
//                 and finalizes every file, also after an error or Ctrl-C.
//   MetadataSink  one JSON object per frame (JSON Lines): source, frame index, pts, batch and the
//                 fraction of the frame's class map in the target classes.
// Both write under temporary names and rename each file into place once finalized
// (core/output_file.h).
// (The null sink, for benchmarks, is the absence of both.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/frame.h"
#include "core/output_file.h"
#include "core/status.h"
#include "pipeline/config.h"
#include "pipeline/segmentation_ops.h"

namespace fovea::pipeline {

// Where the video sink writes a source's file: <output_dir>/<source name>.mp4.
std::filesystem::path video_output_path(const VideoSinkConfig& config, const std::string& source_name);

struct SinkReport {
  std::string source;
  std::string path;  // the file written for this source; "" when it received no frame
  std::string encoder;
  std::int64_t frames = 0;
  std::string error;  // why this source's output failed, when it did
};

class VideoSink {
 public:
  // `frame_rate(source)` gives the nominal rate written to the container. `encoder_threads` is
  // each encoder's thread count (0: the encoder's default).
  VideoSink(VideoSinkConfig config, std::vector<std::string> source_names, int frame_width, int frame_height,
            int encoder_threads, std::function<Rational(std::size_t)> frame_rate);
  ~VideoSink();  // finish()
  VideoSink(const VideoSink&) = delete;
  VideoSink& operator=(const VideoSink&) = delete;

  // Creates the output folder; an error names it.
  Status start();
  // Queues every frame of `batch` on its source's encoder; blocks while that encoder's queue is full.
  void write(const std::shared_ptr<const SegmentBatch>& batch);
  // Drains, flushes and closes every file. Idempotent.
  void finish();
  std::vector<SinkReport> reports() const;

 private:
  struct Output;  // one source's encoder thread and state
  VideoSinkConfig config_;
  std::vector<std::unique_ptr<Output>> outputs_;
};

class MetadataSink {
 public:
  MetadataSink(MetadataSinkConfig config, std::vector<std::string> source_names, std::vector<int> classes);
  Status start();  // opens the file (under a temporary name); an error names it
  Status write(const SegmentBatch& batch);
  Status finish();  // flushes, closes and moves the file into place; an error names the file

 private:
  MetadataSinkConfig config_;
  std::vector<std::string> source_names_;
  std::vector<bool> in_set_;  // per class value 0..255
  std::optional<PendingFile> pending_;
  std::ofstream file_;
};

}  // namespace fovea::pipeline
