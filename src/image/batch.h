// Batches of images for the image ops: each image has its own size, pitch and region of interest,
// all in the same kind of memory. Ops take an ImageBatch in and write an ImageBatch out, on an
// explicit stream when the memory is on the device.
//
// Op shape (every op in src/image and src/post follows it):
//   - `<op>.h`: the contract (a table of formats/dtypes), a Params struct, a `plan_<op>` that
//     validates the batch and params and returns output sizes and workspace bytes, and
//     `run_<op>_cpu(...)` / `run_<op>_cuda(cudaStream_t stream, ...)`. run never allocates.
//   - `<op>_cpu.cpp`: the CPU reference in plain loops (defines what is correct, runs in CI).
//   - `<op>.cu`: the CUDA implementation, compiled only with FOVEA_HAVE_CUDA.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/image.h"
#include "core/status.h"

namespace fovea::image {

// A rectangle in pixels; width or height 0 means "the whole image" when used as a default.
struct Roi {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;

  bool operator==(const Roi&) const = default;
};

struct ImageBatch {
  std::vector<ImageView> images;
  // Empty, or one per image. A default Roi{} selects the whole image.
  std::vector<Roi> rois;

  int size() const { return static_cast<int>(images.size()); }
  // The ROI of image i, with the default expanded to the whole image.
  Roi roi(int i) const;
};

// Checks that the batch is non-empty, that every image is `format` in `memory`-compatible memory,
// has positive size (even sizes for 4:2:0 formats, whose chroma is subsampled), and that each
// ROI is non-empty and inside its image. `what` names the argument in errors ("input", "mask").
Status check_batch(const ImageBatch& batch, std::initializer_list<PixelFormat> formats, const char* what);
// Checks that two batches have the same number of images.
Status check_same_batch_size(const ImageBatch& a, const ImageBatch& b, const char* what_a,
                             const char* what_b);
// The view of `roi` inside `view`: plane pointers moved to the ROI's origin (4:2:0 chroma at half
// the offset, which needs an even origin; callers check), same pitches.
ImageView roi_subview(const ImageView& view, const Roi& roi);

// Whether the batch's memory is reachable from the device (device or pinned): chooses CUDA runs.
bool batch_on_device(const ImageBatch& batch);

}  // namespace fovea::image
