// The demo's detection model (`fovea demo detect`): a small ONNX network that fovea writes itself,
// with hand-set weights that box each saturated shape of the synthetic clip (io/synthetic_clip.h)
// by its color. It is the detection counterpart of the demo segmenter (demo_model.h) and, like
// it, one half of a contract whose other half is the clip; the two must keep agreeing.
//
// Input "input": float32 [N, 3, H, W] (N, H, W symbolic), RGB in [0, 1]: the pipeline applies
// scale 1/255, mean 0 and std 1 to every channel (kDemoDetectorMean, kDemoDetectorStd), no BGR
// swap. H and W are at most kDemoDetectorMaxInputSide (the coordinate encoding below).
// Outputs, in the layout of fovea's `boxes` parser (post/detect_post.h, kBoxes), with
// G = ceil(H / s) * ceil(W / s) cells of s x s pixels (s = cell_stride) and A = 3 G rows:
//   "boxes"  float32 [N, A, 4]: corners x1, y1, x2, y2 in network-input pixels (pixel edges: a
//            box holding pixels 10..19 has x1 10, x2 20);
//   "scores" float32 [N, A, 4]: classes 0 background, 1 red, 2 green, 3 blue.
// Row (k - 1) * G + cell is class k's proposal at that cell (cells row-major): its score sits in
// column k and every other column is 0, the background column included, so the parser's default
// background_class of -1 (default_detect_params(kBoxes)) and a background_class of 0 report the
// same detections.
//
// The contract (hue margin of class k at a pixel: its own channel minus the larger of the other
// two, on the 0..1 scale; the clip states and tests the same numbers):
//   - each shape is one object of its class, red 1, green 2, blue 3, with a margin of at least
//     kDemoDetectorMinHueMargin for its class and below 0 for the other two;
//   - on the background every class's margin is at most kDemoDetectorBackgroundMaxHueMargin
//     (the clip's colorfulness bound: a margin never exceeds max - min);
//   - objects of one class lie farther apart than the pooling window (one per class in the clip).
// A detection's box is the exact extent of the pixels of its class's color around its cell (up to
// the rounding of extreme single-pixel rows and columns by the smoothing, see below); its score is
// the share of its cell's pixels showing that color: 1 inside an object, lower on its border, so
// NMS keeps a cell from the object's inside and every cell proposes the same box anyway.
//
// The network (for class k with own channel c and the others o1, o2; every weight has a meaning):
//   chroma        Conv 1x1, 3 -> 6, no bias: R-G, G-R, G-B, B-G, B-R, R-B (as the segmenter)
//   chroma_positive  Relu: their positive parts P(.)
//   hue_margin    Conv 1x1, 6 -> 3: margin_k = min(c - o1, c - o2) = (c - o1) - P(o2 - o1),
//                 with c - o1 = P(c - o1) - P(o1 - c): red = P(R-G) - P(G-R) - P(B-G), green =
//                 P(G-R) - P(R-G) - P(B-R), blue = P(B-R) - P(R-B) - P(G-R)
//   hue           Relu: a pixel of another class or of the gray background scores 0 or nearly
//   smoothed_hue  Conv k x k per class (group 3), weights 1 / k^2, zero padding, k = 3: a box
//                 filter that averages out chroma noise, so that one noisy pixel cannot stretch a
//                 box (min/max pooling below is not robust to outliers). A Conv rather than an
//                 AveragePool: the CPU executor runs it about five times faster; its zero padding
//                 reads the frame border as background
//   class_mask    Greater than hue_threshold, Cast to float: 1 where the pixel shows class k
//   cell_share    AveragePool s x s, stride s, padding at the end not counted: per cell, the share
//                 of its in-frame pixels in the mask; this is the score
//   coordinates   folded at plan time from Shape(input) and Range: per pixel, kFar - x, x + 1,
//                 kFar - y, y + 1 (kFar = kDemoDetectorMaxInputSide, so every value is >= 1)
//   masked_coordinates  Unsqueeze the mask to [N, 3, 1, H, W], Mul by the coordinates
//                 [1, 1, 4, H, W], Reshape to [N, 12, H, W]: channel 4 (k - 1) + j holds
//                 coordinate j where the pixel shows class k and 0 elsewhere
//   cell_max      MaxPool s x s, stride s (the cells of cell_share): per cell and channel the
//                 largest masked coordinate
//   window_x      MaxPool 1 x (2r + 1) cells, then window_y (2r + 1) x 1 (the separable form
//                 of a (2r + 1)^2 window, so the cost is 2 (2r + 1) per cell, not its square):
//                 a = kFar - min x, b = max x + 1, c = kFar - min y, d = max y + 1 over the
//                 window's pixels of class k, all 0 when it has none
//   extent        Conv 1x1 12 -> 12 with bias, then Relu: a + b - kFar (the width, > 0 when the
//                 window has a pixel, Relu(-kFar) = 0 when not), b, c + d - kFar, d
//   corners       Conv 1x1 12 -> 12: x1 = b - width, y1 = d - height, x2 = b, y2 = d, so an
//                 empty window gives the empty box 0, 0, 0, 0 rather than an inverted one
//   score_columns Conv 1x1 3 -> 12 over cell_share: class k's share in column k of its four
//   boxes, scores Reshape corners / score_columns [N, 12, Gh, Gw] to [N, 3, 4, G], Transpose to
//                 [N, 3, G, 4], Reshape to [N, 3 G, 4]
// The window radius r = ceil((max_object_side - 1) / s) cells: a cell with any pixel of an object
// lies within max_object_side - 1 pixels of all of its pixels, so its window holds all of them.
//
// Why the numbers are what they are: with the 3x3 window the mean just outside a straight edge is
// at most 3/9 * 0.80 + 6/9 * 0.06 = 0.307 (0.80: a margin never exceeds the clip's colorfulness)
// and just inside at least 6/9 * 0.61 = 0.407 (also on the frame border, where the padding takes
// 3/9); the threshold 0.35 lies between, so straight edges land on the exact pixel. A rectangle's
// corner pixel drops out (4/9 of its window) but the rest of its edge rows keep the box exact; a
// circle's extreme row or column drops out when it is shorter than three pixels, which moves that
// side of its box by one pixel. The shapes are 0.18 to 0.28 of the height across, so
// max_object_side 112 covers inputs up to 396 pixels high (0.28 H + 1 <= 112); cells of 16
// pixels (r = 7) keep A at 1530 rows at 480x272 while the smallest shape still covers whole cells
// (score 1).
//
// Network input and cost: the demo runs the flow at 480x272 (both sides multiples of 16, the
// clip's 16:9 within 0.5%, 130 560 pixels): the smallest shape is still 54 pixels across, so one
// pixel of error on one side costs it 2% of IoU, and the CPU executor takes 25-40 ms per frame on
// a shared 2-core machine (DemoDetector.TimesAFrameOnTheCpu; 640x360: 40-85 ms, 1.77 times the
// pixels for boxes the demo cannot show better).
#pragma once

#include <array>
#include <filesystem>
#include <string>

#include "core/status.h"

namespace fovea::runtime {

inline constexpr std::array<float, 3> kDemoDetectorMean{0.0f, 0.0f, 0.0f};
inline constexpr std::array<float, 3> kDemoDetectorStd{1.0f, 1.0f, 1.0f};
inline constexpr int kDemoDetectorClasses = 4;  // background, red, green, blue
inline constexpr int kDemoDetectorRedClass = 1;
inline constexpr int kDemoDetectorGreenClass = 2;
inline constexpr int kDemoDetectorBlueClass = 3;
inline constexpr float kDemoDetectorMinHueMargin = 0.61f;
inline constexpr float kDemoDetectorBackgroundMaxHueMargin = 0.06f;
// kFar of the coordinate encoding: integers up to 2048 are exact in float16 too.
inline constexpr int kDemoDetectorMaxInputSide = 2048;
// The network input the demo runs the detector at (see above).
inline constexpr int kDemoDetectorInputWidth = 480;
inline constexpr int kDemoDetectorInputHeight = 272;

struct DemoDetectorOptions {
  // Side of the smoothing window, odd, 1..31; 3 keeps straight edges exact (see above).
  int smoothing_kernel = 3;
  // Smoothed hue margin at which a pixel counts as its class's; the arithmetic above says why 0.35.
  float hue_threshold = 0.35f;
  // Side of a cell in input pixels, 1..64: one proposal per class per cell; 16 keeps A and the
  // window's cost small (see above).
  int cell_stride = 16;
  // The largest object extent, input pixels, 1..kDemoDetectorMaxInputSide: sizes the window.
  int max_object_side = 112;
};

// The serialized ONNX model (opset 17), loadable by load_onnx/parse_onnx. Invalid options are an
// error naming the option.
Result<std::string> demo_detection_model(const DemoDetectorOptions& options = {});

// Writes demo_detection_model(options) to `path` (atomically: core/output_file.h); errors name the
// path.
Status write_demo_detection_model(const std::filesystem::path& path, const DemoDetectorOptions& options = {});

}  // namespace fovea::runtime
