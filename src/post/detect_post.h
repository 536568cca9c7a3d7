// Detection postprocess: a detector's raw output tensors for a batch to, per frame, at most top_k
// detections {box in frame pixels, class id, score}, on the GPU with no host round trip (the CUDA
// run only enqueues; the caller copies the few KB of results, e.g. with copy_detections_to_host).
//
// Parsers (what the model's outputs are; the layout within a parser is told by the shapes):
//
// | parser    | layout            | outputs (any order; N batch, A anchors/rows, C classes)          |
// |-----------|-------------------|-------------------------------------------------------------------|
// | ssd       | kSsd              | loc [N, A, 4] (box-coder deltas), logits [N, A, C] (softmax here, |
// |           |                   | background column 0 included), priors [A, 4] or [1, A, 4] float32 |
// |           |                   | as a third output or given to the run (torchvision: ssd_priors.h) |
// | yolo      | kYoloAnchorFree   | [N, 4 + C, A]: cx, cy, w, h, class scores (YOLOv8/11 export)      |
// |           | kYoloAnchorBased  | [N, A, 5 + C]: cx, cy, w, h, objectness, class scores (YOLOv5/7)   |
// | detectnet | kDetectNet        | coverage [N, C, H, W], bbox [N, 4C, H, W] (DetectNet_v2: PeopleNet,|
// |           |                   | TrafficCamNet)                                                    |
// | boxes     | kBoxes            | boxes [N, A, 4] corners x1, y1, x2, y2; scores [N, A, C] or [N, A] |
// |           | kNmsOutputs       | the graph ends in NMS, TensorRT EfficientNMS / BatchedNMS layout: |
// |           |                   | num_detections [N] or [N, 1], boxes [N, K, 4] corners, scores     |
// |           |                   | [N, K], classes [N, K] (int32, int64 or float)                    |
//
// Float outputs are float32 or float16 (one dtype for all of a model's float outputs), dense, in
// host memory for the CPU run and device memory for the CUDA run. Where two outputs could take each
// other's place (equal shapes) their names decide: "prior"/"anchor", "cls"/"logit"/"conf"/"score",
// "class"/"label", "num"/"count"; otherwise the shapes do. YOLO: [N, d1, d2] is anchor-free when
// d1 < d2 (YoloFormat overrides; a known class count must fit). DetectNet: the output with four
// times the other's channels is bbox.
//
// The result, per frame n (the definition the CPU reference implements in plain loops):
//   1. Each candidate (anchor, row, grid cell; DetectNet: (class, cell)) is decoded to a box in
//      network-input pixels:
//        ssd: ssd_decode_box (box_decode.h; torchvision_ssd_decode_params() for torchvision's
//             BoxCoder), scores softmax(logits) (detail::softmax_sum fixes the order of the sum);
//        yolo: yolo_decode_box / yolo_score (box_decode.h): score = objectness * class score;
//        detectnet: DeepStream's DetectNet_v2 parser (nvdsinfer_custombboxparser.cpp,
//             NvDsInferParseCustomResnet), for grid cell (gx, gy) and class c, with o* the bbox
//             channels 4c..4c+3 at the cell:
//               cx = float(gx * stride_x + offset_x) / norm_x, cy likewise
//               x1 = (o1 - cx) * -norm_x    y1 = (o2 - cy) * -norm_y
//               x2 = (o3 + cx) * norm_x     y2 = (o4 + cy) * norm_y
//             with stride = ceil(input / grid) (DeepStream's DIVIDE_AND_ROUND_UP), norm 35 and
//             offset 0.5 (PeopleNet's); score = coverage (through a sigmoid when asked);
//        boxes: the corners as given (times the input size when normalized).
//      Every operation is rounded on its own (mul_rn, add_rn; exp_rn), so CPU and CUDA agree bit
//      for bit.
//   2. A box with a NaN or infinite coordinate is dropped. The box is mapped to the frame
//      (FrameMapping: x' = (x - pad_x) * scale_x + origin_x), its corners ordered (x1 <= x2), and
//      clipped to [0, frame_width] x [0, frame_height]. It is dropped when it is empty after
//      clipping (wholly outside the frame) or narrower than min_width / lower than min_height.
//   3. Its class scores: a score counts only when score > threshold[c] (the class's override, else
//      score_threshold; +inf for the background class and for classes outside `classes` when that
//      list is given), so NaN never counts and +inf always does. With best_class_only, only the
//      box's highest-scoring class (NaN lowest, ties to the lower class; background excluded) may
//      count (YOLO's multi_label=False). kNmsOutputs: row k counts only for k < num_detections,
//      with its class id (an integer in [0, classes), else dropped).
//   4. post::nms (nms.h) on the counting (box, class, score)s: class-aware, iou_threshold,
//      max_candidates_per_class, top_k per frame, ordered by score (ties: lower candidate index,
//      then lower class). kNmsOutputs runs no second suppression (the model did it): ranking and
//      top-k only.
// Detections come out as post::Detection: image n, class_id, box_index (the candidate: anchor, row,
// or c * H * W + gy * W + gx for DetectNet), score (softmaxed / sigmoided as above), box in frame
// pixels.
//
// Differences from the reference implementations, all deliberate: DeepStream keeps coverage >=
// threshold and clips to [0, input - 1] with +1-pixel sizes; fovea keeps score > threshold (as
// torchvision) and clips to the frame in continuous coordinates. torchvision clips to the network
// input before NMS and maps to the frame after; fovea maps, then clips to the frame, before NMS
// (IoU is invariant under the mapping's scale and shift, so NMS decides the same up to rounding),
// and drops boxes wholly outside the frame, which torchvision reports as zero-area boxes.
//
// detect_post_math.h holds the per-candidate arithmetic both runs share.
//
// Limits: batch <= kMaxDetectBatch and classes <= kMaxDetectClasses (the CUDA run passes the frame
// mappings and the per-class threshold table as kernel parameters: no upload, no allocation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "core/image.h"
#include "core/status.h"
#include "image/batch.h"
#include "image/resize_math.h"
#include "post/box_decode.h"
#include "post/nms.h"

namespace fovea::post {

inline constexpr int kMaxDetectBatch = 256;
inline constexpr int kMaxDetectClasses = 2048;

enum class DetectParser { kSsd, kYolo, kDetectNet, kBoxes };

// "ssd", "yolo", "detectnet", "boxes".
std::string_view detect_parser_name(DetectParser parser);
// An unknown name is refused listing the known ones.
Result<DetectParser> parse_parser_name(std::string_view name);

enum class DetectLayoutKind { kSsd, kYoloAnchorFree, kYoloAnchorBased, kDetectNet, kBoxes, kNmsOutputs };
std::string_view detect_layout_name(DetectLayoutKind kind);

enum class YoloFormat { kAuto, kAnchorFree, kAnchorBased };

// A model output as the inference session reports it.
struct OutputInfo {
  std::string name;
  std::vector<std::int64_t> shape;
  DataType dtype = DataType::kFloat32;
};

struct DetectParserOptions {
  int input_width = 0;  // the network input, pixels (required)
  int input_height = 0;
  int classes = 0;  // the class count the labels say; 0: the model's. kNmsOutputs: ids must be below it
  // ssd
  SsdDecodeParams ssd = torchvision_ssd_decode_params();
  bool ssd_softmax = true;  // false: the class output holds probabilities already
  // yolo
  YoloFormat yolo_format = YoloFormat::kAuto;
  bool yolo_sigmoid = false;  // true when the scores are logits (ultralytics exports probabilities)
  // yolo and boxes: coordinates in [0, 1] of the input rather than pixels
  bool normalized_boxes = false;
  // detectnet (DeepStream's / PeopleNet's values)
  int detectnet_stride_x = 0;  // 0: ceil(input_width / grid width)
  int detectnet_stride_y = 0;
  float detectnet_norm_x = 35.0f;
  float detectnet_norm_y = 35.0f;
  float detectnet_offset_x = 0.5f;
  float detectnet_offset_y = 0.5f;
  bool detectnet_sigmoid = false;  // PeopleNet's coverage has its sigmoid in the graph
};

// Which model output plays which role (indices into the outputs; -1 when absent), and the sizes.
struct DetectLayout {
  DetectLayoutKind kind = DetectLayoutKind::kSsd;
  DataType dtype = DataType::kFloat32;  // of the float outputs
  int batch = 0;
  int rows = 0;        // A: anchors, rows, grid cells (H * W), or K
  int classes = 0;     // C
  int candidates = 0;  // boxes going into NMS per frame: rows, or C * H * W for DetectNet
  int grid_width = 0, grid_height = 0;
  int loc = -1, logits = -1, priors = -1, predictions = -1, coverage = -1, bbox = -1, boxes = -1, scores = -1,
      count = -1, class_ids = -1;
};

// Matches the outputs to the parser; a mismatch is refused naming the output, its shape and what
// the parser expected.
Result<DetectLayout> resolve_outputs(DetectParser parser, std::span<const OutputInfo> outputs,
                                     const DetectParserOptions& options);
Status check_outputs(DetectParser parser, std::span<const OutputInfo> outputs,
                     const DetectParserOptions& options);

// Network-input pixels to frame pixels: x' = (x - pad_x) * scale_x + origin_x, then clipped to
// [0, frame_width] (y likewise).
struct FrameMapping {
  float pad_x = 0.0f, pad_y = 0.0f;
  float scale_x = 1.0f, scale_y = 1.0f;  // frame pixels per input pixel
  float origin_x = 0.0f, origin_y = 0.0f;
  float frame_width = 0.0f, frame_height = 0.0f;
};
// The frame stretched over the input (x and y scaled separately).
FrameMapping stretch_mapping(int input_width, int input_height, int frame_width, int frame_height);
// Letterbox: one scale, centered, padded (image::fit_placement's kLetterbox).
FrameMapping letterbox_mapping(int input_width, int input_height, int frame_width, int frame_height);
// Undoes a preprocess that put frame region `roi` at `placement` (image::PreprocessPlan::placements).
FrameMapping placement_mapping(const image::ResizePlacement& placement, const image::Roi& roi,
                               int frame_width, int frame_height);

struct DetectPostParams {
  float score_threshold = 0.25f;
  std::vector<std::pair<int, float>> class_thresholds;  // (class, threshold) overrides
  std::vector<int> classes;                             // report only these; empty: all
  int background_class = -1;                            // never reported (torchvision SSD: 0)
  bool best_class_only = false;
  float iou_threshold = 0.5f;
  int top_k = 100;  // detections per frame
  int max_candidates_per_class = 1024;
  float min_width = 0.0f;  // frame pixels, after clipping
  float min_height = 0.0f;
};

// Each parser's customary settings: ssd as torchvision's SSD postprocess (score 0.01, IoU 0.45,
// 400 candidates per class, 200 detections, background 0); yolo as ultralytics (0.25, IoU 0.7,
// best class only, 300); detectnet as DeepStream's PeopleNet config (0.4, IoU 0.5, 100); boxes
// (0.25, IoU 0.5, 100).
DetectPostParams default_detect_params(DetectParser parser);

struct DetectPostConfig {
  DetectParser parser = DetectParser::kSsd;
  DetectParserOptions options;
  DetectPostParams params;
};

enum class DetectDevice { kCpu, kCuda };

struct DetectPostPlan {
  DetectPostConfig config;
  std::vector<OutputInfo> outputs;  // as resolved; the run's tensors must match them
  DetectLayout layout;
  NmsShape nms_shape;               // {N, candidates, classes (1 for kNmsOutputs)}
  NmsParams nms_params;             // what the run passes to post::nms
  std::vector<float> thresholds;    // per class: the score must be above it (+inf: never)
  std::size_t workspace_bytes = 0;  // CUDA run: device memory, 256-byte aligned
  int detections_per_image = 0;     // top_k: the stride of DetectionList::detections
};

// Resolves the outputs (refusing a mismatch), validates the params and sizes the workspace. For
// kCuda this asks CUB for its sort's temporary storage, which needs a device.
Result<DetectPostPlan> plan_detect_post(const DetectPostConfig& config, std::span<const OutputInfo> outputs,
                                        DetectDevice device);

struct DetectInputs {
  std::span<const TensorView> outputs;     // the model's outputs, in the order given to the plan
  TensorView priors;                       // SSD priors when no output holds them: [A, 4] float32
  std::span<const FrameMapping> mappings;  // one per frame
};

// The reference: host memory; `output` holds N * top_k detections and N counts (host).
Status run_detect_post_cpu(const DetectPostPlan& plan, const DetectInputs& inputs,
                           const DetectionList& output);
// Device memory; `workspace` holds plan.workspace_bytes. Enqueues everything on `stream`.
Status run_detect_post_cuda(cudaStream_t stream, const DetectPostPlan& plan, const DetectInputs& inputs,
                            void* d_workspace, std::size_t workspace_bytes, const DetectionList& output);

}  // namespace fovea::post
