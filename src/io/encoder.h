// Video encoder and muxer on libavcodec/libavformat.
//
//   codec h264: h264_nvenc from device frames when the GPU has NVENC, otherwise libx264 (logged
//               with the reason; the H200 has no NVENC).
//   codec hevc: hevc_nvenc when present, otherwise libx265 when FFmpeg has it.
//
// Container from the file extension (.mp4, .mov, .mkv, .ts). Timestamps are taken from the frames
// (pts in the given time base) and rescaled for the muxer, so a transcode keeps them. finish()
// flushes the encoder and writes the trailer; the destructor does the same if finish() was not
// called, so the file is a valid container after errors and after Ctrl-C. The file is written
// under a temporary name beside the path (core/output_file.h) and takes its name only once
// finalized: a previous file of that name stays until then, and a file that could not be
// finalized (no trailer: disk full, a killed process) never appears under the name.
//
// Live targets (EncoderOptions::target) are written as they come, since players read them while
// they grow: HLS (a playlist and its segments, each written under a temporary name and renamed
// whole, the oldest deleted; finish() writes #EXT-X-ENDLIST) and RTSP push (ANNOUNCE/RECORD to a
// server; finish() sends TEARDOWN). A write to a server that went away fails; the caller opens a
// new encoder to reconnect.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/cuda_stream.h"
#include "core/frame.h"
#include "core/status.h"
#include "io/demuxer.h"

namespace fovea::io {

enum class EncoderCodec { kH264, kHevc };
enum class EncoderBackend { kAuto, kCpu, kNvenc };
bool parse_encoder_codec(std::string_view text, EncoderCodec* codec);
// ok when a file output's name says its container (.mp4, .mov, .mkv, .ts, ...), else
// kInvalidArgument naming the choices: checked before anything is decoded.
Status check_file_container(const std::string& path);

// kFile: `path` is the file (container from its extension); kHls: `path` is the playlist
// (<folder>/index.m3u8) and the segments go beside it; kRtsp: `path` is the rtsp:// URL pushed to.
enum class EncoderTarget { kFile, kHls, kRtsp };

struct EncoderOptions {
  EncoderCodec codec = EncoderCodec::kH264;
  EncoderBackend backend = EncoderBackend::kAuto;
  int width = 0;
  int height = 0;
  // 8, or 10 for 10-bit 4:2:0 (libx264 High 10, libx265 Main 10) from kP016 frames, which keeps a
  // 10-bit source's depth; NVENC is used for 8 bits only here, so 10 always encodes in software.
  int bit_depth = 8;
  // The pictures' samples span 0..255 (full, JPEG range): the stream is tagged so; else the
  // encoder's default (limited, 16..235).
  bool full_range = false;
  Rational time_base{1, 30};      // of the frames' pts
  Rational frame_rate{30, 1};     // nominal, written to the container
  std::string preset = "medium";  // libx264/libx265 preset; mapped to p1..p7 for NVENC
  int crf = 23;                   // quality (x264/x265 crf, NVENC cq); ignored when qp >= 0
  int qp = -1;                    // constant QP when >= 0; 0 with x264 is lossless
  std::int64_t bit_rate = 0;      // target bits/s when > 0 (overrides crf)
  int gop = 0;                    // keyframe interval; 0 = encoder default
  int max_b_frames = -1;          // -1 = encoder default
  int threads = 0;                // 0 = encoder default (one per core)
  int device = 0;                 // NVENC device
  cudaStream_t stream = nullptr;  // device frames are read on this stream
  EncoderTarget target = EncoderTarget::kFile;
  // kHls: segment length (set gop to the frames in it, so that each segment starts with a
  // keyframe) and segments the playlist keeps; older segment files are deleted.
  int hls_segment_seconds = 2;
  int hls_playlist_size = 6;
  RtspTransport rtsp_transport = RtspTransport::kTcp;  // kRtsp
  int network_timeout_ms = 5000;                       // kRtsp: connecting and each write
};

struct EncoderStats {
  std::int64_t frames_in = 0;
  std::int64_t packets_out = 0;
  std::int64_t bytes_out = 0;
};

class Encoder {
 public:
  static Result<std::unique_ptr<Encoder>> open(const std::string& path, const EncoderOptions& options);
  virtual ~Encoder() = default;
  // Frames: kYUV420P or kNV12 in host memory, kNV12 in device memory (downloaded for x264); with
  // bit_depth 10, kP016 in host or device memory (the top 10 bits of each sample are encoded).
  virtual Status encode(const Frame& frame) = 0;
  virtual Status finish() = 0;
  virtual std::string encoder_name() const = 0;            // "libx264", "h264_nvenc", ...
  virtual const std::string& fallback_reason() const = 0;  // "" when the asked-for backend is used
  virtual EncoderStats stats() const = 0;
};

}  // namespace fovea::io
