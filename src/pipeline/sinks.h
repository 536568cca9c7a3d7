// The flows' sinks, fed by the sink stage with batches whose GPU work is done and whose results are
// resolved (FrameBatch::resolve):
//
//   VideoSink     one video file per output stream: per source (<output_dir>/<source name>.mp4) or
//                 one mosaic of every source (<output_dir>/mosaic.mp4). What it encodes is the
//                 flow's choice (a PicturePicker: the composited frames, the frames with their OSD,
//                 the mosaic). Each stream has its own encoder thread behind a bounded queue, so the
//                 CPU encoders (libx264 on a GPU without NVENC) run in parallel while the pipeline
//                 goes on; a full queue blocks the sink stage (back-pressure up to the sources). A
//                 stream whose encoder fails is reported and skipped; the others carry on. finish()
//                 drains and finalizes every file, also after an error or Ctrl-C.
//   StreamSink    the same pictures as live video (sinks.stream): HLS segments in a folder and/or
//                 pushed to an RTSP server, per source or as the mosaic. It never holds the flow back:
//                 a full queue drops the picture (counted); an RTSP server that goes away is logged
//                 with the stream's name, its pictures are dropped (counted) and the push connects
//                 again with backoff, while the other outputs carry on. finish() ends the playlists
//                 (#EXT-X-ENDLIST) and the RTSP sessions (TEARDOWN).
//   MetadataSink  one JSON object per frame (JSON Lines, docs/metadata.md, frame_record.h).
//   MqttSink      the same line per frame as one message to an MQTT broker, on a topic per source
//                 (io/mqtt_publisher.h). It never holds the flow back: while the broker is away the
//                 records wait in a bounded buffer (the oldest dropped and counted); the run's end
//                 waits a bounded time for them (docs/metadata.md, "MQTT").
// The file sinks write under temporary names and rename each file into place once finalized
// (core/output_file.h); the live ones write in place, players reading as they go. The null sink, for
// benchmarks, is the absence of all of them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/frame.h"
#include "core/output_file.h"
#include "core/status.h"
#include "io/encoder.h"
#include "pipeline/backoff.h"
#include "pipeline/config.h"
#include "pipeline/frame_batch.h"
#include "pipeline/stats.h"

namespace fovea::pipeline {

// Where the video sink writes a stream's file: <output_dir>/<name>.mp4.
std::filesystem::path video_output_path(const VideoSinkConfig& config, const std::string& stream_name);
// The stream name of the mosaic output.
inline constexpr const char* kMosaicStreamName = "mosaic";
// Where the stream sink writes a stream's HLS playlist: <hls>/<name>/index.m3u8, its segments
// beside it.
std::filesystem::path hls_playlist_path(const std::string& hls_folder, const std::string& stream_name);
// Where the stream sink pushes a stream: <rtsp>/<name> per source, <rtsp> itself for the mosaic.
std::string rtsp_push_url(const std::string& rtsp, const std::string& stream_name, bool mosaic);
// The stream sink's HLS folder may not be an input nor hold one (a segment or playlist could
// replace it): kInvalidArgument naming sinks.stream.hls and the input.
Status check_hls_folder(const std::string& hls_folder, const std::vector<std::string>& inputs);

struct SinkReport {
  std::string source;  // the stream: a source's name, or "mosaic"
  std::string path;    // the file (or playlist, or RTSP URL) written; "" when it received no frame
  std::string encoder;
  std::int64_t frames = 0;
  std::string error;  // why this output failed, when it did
  // Live outputs: pictures dropped (a full queue, a server away) and connections made again after
  // a failed or lost one (RTSP).
  std::int64_t dropped = 0;
  std::int64_t reconnects = 0;
};

class Sink {
 public:
  virtual ~Sink() = default;
  // Creates the output (folder, file under a temporary name); an error names it. The sources are
  // open by then: their nominal frame rates, in source order (0/0 where unknown).
  virtual Status start(std::span<const Rational> source_frame_rates) = 0;
  // Called from the sink stage, batch after batch.
  virtual Status write(const std::shared_ptr<const FrameBatch>& batch) = 0;
  // Drains and finalizes; idempotent.
  virtual Status finish() = 0;
  // Per output file, for the summary (video sinks).
  virtual std::vector<SinkReport> reports() const { return {}; }
  // Its broker connection's counters (broker sinks); called from any thread, also while it runs.
  virtual std::optional<BrokerStats> broker_stats() const { return std::nullopt; }
  // Its live outputs' counters (sinks.stream); called from any thread, also while it runs.
  virtual std::vector<LiveOutputStats> live_outputs() const { return {}; }
};

// One picture to encode: on output stream `stream`, with the timing of the batch's frame `frame`
// (or, with no frame, the stream's own count at its frame rate). A mosaic picture (`since_start`)
// shows several sources: it is timed by `frame`'s time since its source's first frame, kept
// increasing, so that the mosaic lasts as long as its sources whatever their clocks' origins. The
// image is host or device memory the batch keeps alive (kYUV420P or kNV12).
struct Picture {
  std::size_t stream = 0;
  std::optional<std::size_t> frame;
  ImageView image;
  bool since_start = false;
};
using PicturePicker = std::function<void(const FrameBatch& batch, std::vector<Picture>& pictures)>;

// What the video and stream sinks share: pictures picked from each batch, queued on their
// stream's outputs, each an encoder on its own thread.
class EncodingSink : public Sink {
 public:
  // Per source, one stream each (stream s is source s); or one mosaic stream at the first source's
  // rate. The rate is the nominal one written to the container.
  enum class Streams { kPerSource, kMosaic };
  ~EncodingSink() override;  // finish()
  EncodingSink(const EncodingSink&) = delete;
  EncodingSink& operator=(const EncodingSink&) = delete;

  // Queues the batch's pictures on their streams' outputs: a file output blocks while its queue is
  // full, a live one drops the picture.
  Status write(const std::shared_ptr<const FrameBatch>& batch) override;
  Status finish() override;
  std::vector<SinkReport> reports() const override;

 protected:
  // One output of a stream: where it goes, how it is encoded, and how it behaves when it fails.
  struct Target {
    std::size_t stream = 0;
    std::string stream_name;
    std::string location;  // a file, a playlist, an RTSP URL
    io::EncoderOptions options;
    bool live = false;                 // never blocks the flow
    std::optional<Backoff> reconnect;  // a failure waits and opens again instead of ending it
  };
  EncodingSink(Streams streams, std::size_t stream_count, PicturePicker pick);
  void add_output(Target target);
  // Sets each output's frame rate from its source's and starts its thread.
  void start_outputs(std::span<const Rational> source_frame_rates);
  // Every output's counters, readable while they run.
  std::vector<LiveOutputStats> output_stats() const;

 private:
  struct Output;  // one output's encoder thread and state
  Streams streams_;
  PicturePicker pick_;
  std::vector<Picture> pictures_;  // reused batch after batch
  std::vector<std::unique_ptr<Output>> outputs_;
  std::vector<std::vector<Output*>> by_stream_;
};

class VideoSink final : public EncodingSink {
 public:
  // `encoder_threads` is each encoder's thread count (0: the encoder's default).
  VideoSink(VideoSinkConfig config, std::vector<std::string> stream_names, Streams streams, int width,
            int height, int encoder_threads, PicturePicker pick);
  Status start(std::span<const Rational> source_frame_rates) override;

 private:
  VideoSinkConfig config_;
};

class StreamSink final : public EncodingSink {
 public:
  // As VideoSink's; each stream goes to HLS, RTSP or both (two encoders, so that one target's
  // failure and reconnects never touch the other's).
  StreamSink(StreamSinkConfig config, std::vector<std::string> stream_names, Streams streams, int width,
             int height, int encoder_threads, PicturePicker pick);
  // Creates the HLS folders; a server that is not there yet is retried, not an error.
  Status start(std::span<const Rational> source_frame_rates) override;
  std::vector<LiveOutputStats> live_outputs() const override { return output_stats(); }

 private:
  StreamSinkConfig config_;
  std::vector<std::string> stream_names_;
};

class MetadataSink final : public Sink {
 public:
  // `labels`: the primary model's class names (empty: numbers only).
  MetadataSink(MetadataSinkConfig config, std::vector<std::string> source_names,
               std::vector<std::string> labels);
  Status start(std::span<const Rational> source_frame_rates) override;
  // A failed write (a full disk) ends this output, not the flow: the partial file is removed and the
  // failure is in reports() (its only row), as a video output's is; the other outputs carry on.
  Status write(const std::shared_ptr<const FrameBatch>& batch) override;
  Status finish() override;
  std::vector<SinkReport> reports() const override;

 private:
  void fail(std::string reason);

  MetadataSinkConfig config_;
  std::vector<std::string> source_names_;
  std::vector<std::string> labels_;
  std::optional<PendingFile> pending_;
  std::ofstream file_;
  std::int64_t frames_ = 0;
  std::string error_;
};

// How long the run's end waits for the records the broker has not acknowledged; the rest are
// lost (logged and counted), not an error of the run.
inline constexpr std::chrono::milliseconds kMqttSinkFinishTimeout{5000};

class MqttSink final : public Sink {
 public:
  // `labels` as MetadataSink's.
  MqttSink(MqttSinkConfig config, std::vector<std::string> source_names, std::vector<std::string> labels);
  // Connects in the background: a broker that is down is retried, not an error. Bad options
  // (kInvalidArgument) and a host that does not resolve (kNotFound) are, naming sinks.mqtt.<key>.
  Status start(std::span<const Rational> source_frame_rates) override;
  // Queues each frame's record on its source's topic; never waits for the broker.
  Status write(const std::shared_ptr<const FrameBatch>& batch) override;
  // Waits up to kMqttSinkFinishTimeout for the queued records, then logs what was lost.
  Status finish() override;
  std::optional<BrokerStats> broker_stats() const override;

 private:
  MqttSinkConfig config_;
  std::vector<std::string> source_names_;
  std::vector<std::string> labels_;
  // Set by start(), before the flow's threads read it, and kept until the sink goes (its
  // destructor disconnects), so that broker_stats() reads it without a lock.
  std::unique_ptr<io::MqttPublisher> publisher_;
  bool finished_ = false;
};

}  // namespace fovea::pipeline
