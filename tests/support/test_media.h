// Test media, generated on the fly by encoding synthetic frames with libavcodec (through
// io::Encoder). Nothing is stored in the repository.
#pragma once

#include <string>
#include <string_view>

#include "core/frame.h"
#include "core/status.h"
#include "io/encoder.h"

namespace fovea::testing {

struct ClipSpec {
  int width = 320;
  int height = 240;
  int frames = 30;
  Rational frame_rate{30, 1};
  io::EncoderCodec codec = io::EncoderCodec::kH264;
  int qp = -1;            // 0 with h264 = lossless (x264 qp 0)
  int gop = 0;            // keyframe interval; 0 = encoder default
  int max_b_frames = -1;  // -1 = encoder default
  std::string preset = "veryfast";
  int bit_depth = 8;        // 10: synthetic_frame_p016 frames, H.264 High 10 / HEVC Main 10
  int first_index = 0;      // of the first frame (its pts): a later segment of a longer clip
  bool full_range = false;  // tagged full (JPEG) range
};

// A deterministic YUV420P host frame for `index`: moving gradients plus hashed texture, so that
// motion compensation has work to do and consecutive frames differ. pts = index.
Frame synthetic_frame(int width, int height, int index);
// The same picture as P016 with 10 significant bits: sample v becomes 4v plus two low bits that
// vary with the position ((x + y) % 4), so a path that drops them changes the samples.
Frame synthetic_frame_p016(int width, int height, int index);

// Encodes `spec` into `path` (container from the extension). Returns the path.
Result<std::string> write_clip(const std::string& path, const ClipSpec& spec);

// A fresh directory under the system temp dir, unique to the running test; removed by nobody
// (the OS cleans /tmp), so a failing test leaves its media for inspection.
std::string test_temp_dir();

// True when this FFmpeg build has an encoder of that name (e.g. "libx265").
bool has_ffmpeg_encoder(std::string_view name);

// An MPEG-TS whose resolution changes mid-stream, as cameras and re-streamers produce: `first`,
// then `second` with its frames' indices and pts continuing the first's, written as two TS files
// beside it (path + ".first.ts" and ".second.ts", which stay) and concatenated. Returns the path.
Result<std::string> write_resolution_change_ts(const std::string& path, const ClipSpec& first,
                                               ClipSpec second);

// Whole-file helpers for bad-input tests.
Status copy_truncated(const std::string& from, const std::string& to, double keep_fraction);
// Remuxes the mp4 `from` into `to` with its index (moov) ahead of the media data, as "faststart"
// files for the web are: a truncated copy still opens, and reading fails where the data ends.
Status copy_faststart(const std::string& from, const std::string& to);
// Flips `count` bits at deterministic pseudo-random positions past the first `skip_bytes`.
Status copy_bit_flipped(const std::string& from, const std::string& to, int count, std::size_t skip_bytes,
                        unsigned seed);

}  // namespace fovea::testing
