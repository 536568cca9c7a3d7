// Morphological dilate and erode of masks with a rectangular structuring element.
//
// | input  | output | structuring element                                  |
// |--------|--------|------------------------------------------------------|
// | kGRAY8 | kGRAY8 | width x height rectangle, anchor at (width/2, height/2) |
//
// Dilate takes the maximum over the element, erode the minimum; pixels beyond the ROI's edges are
// left out (OpenCV's default border for morphology). `iterations` applies the op repeatedly. A
// rectangle is separable, so each iteration is a row pass into the workspace and a column pass
// into the output; the output may alias the input. The output ROI must have the input ROI's size.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "image/batch.h"

namespace fovea::image {

enum class MorphologyOp { kDilate, kErode };

struct MorphologyParams {
  MorphologyOp op = MorphologyOp::kDilate;
  int element_width = 3;   // >= 1
  int element_height = 3;  // >= 1
  int iterations = 1;      // >= 1
};

struct MorphologyPlan {
  std::vector<std::array<int, 2>> output_sizes;  // {width, height} of each output ROI
  std::size_t workspace_bytes = 0;               // device memory for the row pass of the CUDA run
};

Result<MorphologyPlan> plan_morphology(const ImageBatch& input, const MorphologyParams& params);
Status run_morphology_cpu(const ImageBatch& input, const ImageBatch& output, const MorphologyParams& params);
// `d_workspace` holds at least plan.workspace_bytes.
Status run_morphology_cuda(cudaStream_t stream, const ImageBatch& input, const ImageBatch& output,
                           const MorphologyParams& params, void* d_workspace, std::size_t workspace_bytes);

namespace detail {

// One image's ROI: source, destination and the workspace plane for the row pass.
struct MorphologyJob {
  const std::uint8_t* src = nullptr;
  std::size_t src_pitch = 0;
  std::uint8_t* dst = nullptr;
  std::size_t dst_pitch = 0;
  std::uint8_t* work = nullptr;  // width x height, pitch = width
  int width = 0;
  int height = 0;
};

Status check_morphology(const ImageBatch& input, const ImageBatch* output, const MorphologyParams& params);
// Bytes of image i's workspace plane, rounded up so every plane starts 256-byte aligned.
std::size_t morphology_work_bytes(const ImageBatch& input, int image);
MorphologyJob morphology_job(const ImageBatch& input, const ImageBatch& output, int image,
                             std::uint8_t* work);

// The max (dilate) or min (erode) of the `size` samples at `step` bytes apart around `center`,
// the window [center - size/2, center + size - 1 - size/2] clipped to [0, length).
FOVEA_HD std::uint8_t morph_window(const std::uint8_t* line, std::size_t step, int center, int length,
                                   int size, bool dilate) {
  const int first = center - size / 2 < 0 ? 0 : center - size / 2;
  const int last = center + size - 1 - size / 2 >= length ? length - 1 : center + size - 1 - size / 2;
  int value = dilate ? 0 : 255;
  for (int i = first; i <= last; ++i) {
    const int v = line[i * step];
    value = dilate ? (v > value ? v : value) : (v < value ? v : value);
  }
  return static_cast<std::uint8_t>(value);
}

}  // namespace detail

}  // namespace fovea::image
