// The demo's segmentation model (`fovea demo`): a small ONNX network that fovea writes itself, with
// hand-set weights that separate saturated colored subjects from a textured, low-chroma background.
// It is the model half of a contract whose other half is the synthetic clip
// (io/synthetic_clip.h); the two must keep agreeing.
//
// Input "input": float32 [N, 3, H, W] (N, H, W symbolic), RGB in [0, 1]: the pipeline applies
// scale 1/255, mean 0 and std 1 to every channel (kDemoModelMean, kDemoModelStd), no BGR swap.
// Output "out": float32 [N, 2, H, W], logits of class 0 (background) and class 1 (subject); the
// segmentation target class is kDemoSubjectClass.
//
// The network (28 parameters, each with a meaning; 0.5-0.9 s per 1080p frame on the CpuExecutor of
// a shared 2-core machine):
//   chroma        Conv 1x1, 3 -> 6, no bias: R-G, G-R, G-B, B-G, B-R, R-B
//   chroma_relu   Relu: the positive parts, whose sum is |R-G| + |G-B| + |B-R| = 2 (max - min)
//   colorfulness  Conv 1x1, 6 -> 1, weights 1/2: max(R,G,B) - min(R,G,B), 0 for any gray
//   smooth        AveragePool k x k (stride 1, same size, padding not counted): averages out the
//                 chroma noise of texture, compression and 4:2:0 chroma subsampling
//   out           Conv 1x1, 1 -> 2 (the logits): subject = s * (c - t), background = -s * (c - t)
//
// The contract (colorfulness c = max - min of a pixel, on the 0..1 scale):
//   - subjects have c in [kDemoSubjectMinColorfulness, kDemoSubjectMaxColorfulness];
//   - the background has c <= kDemoBackgroundMaxColorfulness, however textured its luma is.
// With the default 5x5 window the mean just outside a straight edge is at most 2/5 * 0.80 + 3/5 *
// 0.06 = 0.356 and just inside at least 3/5 * 0.70 = 0.42; the threshold 0.39 lies between, so
// straight edges land on the exact pixel and only corners round off.
#pragma once

#include <array>
#include <filesystem>
#include <string>

#include "core/status.h"

namespace fovea::runtime {

inline constexpr std::array<float, 3> kDemoModelMean{0.0f, 0.0f, 0.0f};
inline constexpr std::array<float, 3> kDemoModelStd{1.0f, 1.0f, 1.0f};
inline constexpr int kDemoSubjectClass = 1;
inline constexpr float kDemoSubjectMinColorfulness = 0.70f;
inline constexpr float kDemoSubjectMaxColorfulness = 0.80f;
inline constexpr float kDemoBackgroundMaxColorfulness = 0.06f;

struct DemoModelOptions {
  // Side of the smoothing window, odd, 1..31; 5 removes compression noise while keeping edges exact
  // (see the contract above).
  int smoothing_kernel = 5;
  // Colorfulness at which a pixel turns subject; the header's arithmetic says why 0.39.
  float colorfulness_threshold = 0.39f;
  // Logit per unit of colorfulness away from the threshold: with 10, a pixel 0.1 past it has a
  // subject probability of 0.88 (softmax of +1 and -1), so soft masks are soft only near edges.
  float logit_scale = 10.0f;
};

// The serialized ONNX model (opset 17), loadable by load_onnx/parse_onnx. Invalid options are an
// error naming the option.
Result<std::string> demo_segmentation_model(const DemoModelOptions& options = {});

// Writes demo_segmentation_model(options) to `path`; errors name the path.
Status write_demo_segmentation_model(const std::filesystem::path& path, const DemoModelOptions& options = {});

}  // namespace fovea::runtime
