// The demo's synthetic clip (`fovea demo`): a textured, low-chroma background with saturated colored
// shapes moving across it, encoded to H.264 by fovea's own encoder, plus the exact subject mask of
// every frame so that tests can score a segmentation.
//
// It is the media half of a contract whose other half is the demo model (runtime/demo_model.h,
// which io may not include; the constants below repeat its numbers and a test checks they agree).
// With colorfulness c = max(R,G,B) - min(R,G,B) on the 0..1 scale:
//   - subject pixels have c in [kSyntheticSubjectMinColorfulness, kSyntheticSubjectMaxColorfulness]
//     (flat red, green and blue with luma-only grain, which leaves c unchanged);
//   - background pixels have c <= kSyntheticBackgroundMaxColorfulness: gray value noise, sliding
//     diagonal stripes and grain, with a faint warm tint and chroma grain of a few levels.
//
// The scene is a function of (frame index, width, height) and, for the background texture only, a
// seed: shape sizes scale with the height and paths with the frame size, so a 320x180 rendering is a
// small copy of the 1080p one. Shapes have hard edges (no antialiasing): a pixel is subject when its
// center lies inside a shape, so the mask is exact. Colors are converted to Y'CbCr by BT.601,
// limited range (what fovea's preprocess assumes by default), chroma averaged over 2x2 blocks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/box.h"
#include "core/frame.h"
#include "core/status.h"

namespace fovea::io {

inline constexpr float kSyntheticSubjectMinColorfulness = 0.70f;
inline constexpr float kSyntheticSubjectMaxColorfulness = 0.80f;
inline constexpr float kSyntheticBackgroundMaxColorfulness = 0.06f;
inline constexpr float kSyntheticSubjectMinHueMargin = 0.61f;
inline constexpr int kSyntheticRedClass = 1;
inline constexpr int kSyntheticGreenClass = 2;
inline constexpr int kSyntheticBlueClass = 3;
// Smallest frame: the shapes must stay several pixels wide and libx264 needs even sizes for 4:2:0.
inline constexpr int kSyntheticMinSide = 16;

struct SyntheticClipOptions {
  int width = 1920;
  int height = 1080;
  int frames = 90;  // 3 s at 30 fps: long enough to see the shapes move, quick to encode
  Rational frame_rate{30, 1};
  std::uint32_t seed = 1;  // background texture only; the shapes' paths do not depend on it
  // libx264 settings: veryfast keeps encoding a 1080p clip to seconds on a few cores; crf 18 is
  // visually lossless, so compression barely moves the colorfulness the model reads.
  std::string preset = "veryfast";
  int crf = 18;
};

// Checks sizes (even, kSyntheticMinSide..kMaxVideoSide), frame count and frame rate; the error
// names the option.
Status check_synthetic_clip_options(const SyntheticClipOptions& options);

// Frame `frame_index` as packed RGB (kRGB8, host memory, owned by the frame; pts = frame_index).
// width and height are positive (FOVEA_CHECK).
Frame render_synthetic_rgb(int frame_index, int width, int height, std::uint32_t seed);
// The same frame as kYUV420P (BT.601 limited range), what the encoder takes; sizes even.
Frame render_synthetic_yuv420p(int frame_index, int width, int height, std::uint32_t seed);

// The subject mask of frame `frame_index`: width*height bytes, row-major, 1 where a shape covers
// the pixel center and 0 on the background.
std::vector<std::uint8_t> ground_truth_mask(int frame_index, int width, int height);

// One shape of a frame as a detection target: its class (kSynthetic*Class) and the exact extent
// of its visible pixels, x1, y1 the smallest pixel and x2, y2 the largest plus one (pixel edges).
struct SyntheticObject {
  int class_id = 0;
  Box box;
};

// The shapes visible in frame `frame_index` (a later shape covers an earlier one, so a shape may be
// partly or wholly hidden; a wholly hidden one is absent), in class order; width and height are
// positive (FOVEA_CHECK).
std::vector<SyntheticObject> ground_truth_boxes(int frame_index, int width, int height);

// Detections of one frame scored against its ground truth: an object is matched by a detection
// of its class whose box corners all lie within `tolerance` pixels of its own (each detection
// matches one object at most); unmatched detections are false positives.
struct SyntheticMatch {
  std::int64_t objects = 0;
  std::int64_t matched = 0;
  std::int64_t false_positives = 0;
  double worst_corner_error = 0.0;  // over the matched objects, pixels
  SyntheticMatch& operator+=(const SyntheticMatch& other);
};
SyntheticMatch match_ground_truth(int frame_index, int width, int height,
                                  std::span<const SyntheticObject> detections, double tolerance = 8.0);

// Encodes the clip to `path` (H.264 through libx264; the container from the extension, .mp4 for
// the demo). Errors name the path or the option.
Status write_synthetic_clip(const std::string& path, const SyntheticClipOptions& options = {});

}  // namespace fovea::io
