// Segmentation masks: a class map (class_map.h) and a set of classes to a binary mask (255 where
// the pixel's class is in the set, 0 elsewhere) at the frame's size.
//
// | input                       | output                              |
// |-----------------------------|-------------------------------------|
// | N kGRAY8 class maps (W x H) | N kGRAY8 masks, any size (frames)   |
//
// A mask pixel (x, y) looks at the class-map point u = (x + 0.5) * scale_x + offset_x,
// v = (y + 0.5) * scale_y + offset_y (map pixel i covers [i, i + 1)), the MaskMapping of its image:
//   - points outside [0, W) x [0, H) are 0 (frame parts the network did not see: outside a crop ROI);
//   - kNearest: 255 when the class of map pixel (floor(u), floor(v)) is in the set;
//   - kBilinear: the set's 0/1 indicator interpolated between the four map pixel centers around
//     (u - 0.5, v - 0.5) (edges replicated); 255 when the result is >= 0.5.
// The float operations are rounded one by one (post_math.h), so CPU and CUDA agree exactly.
// ROIs are not supported (the mappings place the map); the CPU run takes host images, the CUDA run
// device images.
//
// Label images (the VOC / Cityscapes convention: one class index per pixel) are the class map itself
// at the frame's size, nearest: pixel (x, y) takes the class of map pixel (floor(u), floor(v)),
// clamped into the map, so every pixel has a class (the map covers the whole network input, and a
// stretched or letterboxed frame lies inside it). Nearest sampling is separable (u depends on x
// alone, v on y alone), so the map column of each frame column and the map row of each frame row
// are computed once, and the share of target-class pixels is counted from them without making the
// image. Host only: a label image has each frame's own size, so it is made where the frame goes to
// a file (pipeline/image_sink.h), from the map the GPU path copies back.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "core/status.h"
#include "image/batch.h"
#include "post/post_math.h"

namespace fovea::post {

enum class MaskInterpolation { kNearest, kBilinear };

// Frame pixel coordinates to class-map coordinates (both continuous, pixel i covering [i, i + 1)).
struct MaskMapping {
  float scale_x = 1.0f;
  float scale_y = 1.0f;
  float offset_x = 0.0f;
  float offset_y = 0.0f;
};

// The class map stretched over the whole frame.
MaskMapping stretch_mask_mapping(int frame_width, int frame_height, int map_width, int map_height);
// Undoes a preprocess that took the frame region `roi`, resized it by (resize_scale_x, resize_scale_y)
// and placed it at (pad_x, pad_y) in an input_width x input_height network input (letterbox and
// keep-aspect are the cases with equal scales and padding), for a class map covering that input at
// map_width x map_height.
MaskMapping preprocess_mask_mapping(const image::Roi& roi, float resize_scale_x, float resize_scale_y,
                                    float pad_x, float pad_y, int input_width, int input_height,
                                    int map_width, int map_height);

struct ClassMaskParams {
  std::vector<int> classes;  // the set, each 0..255
  MaskInterpolation interpolation = MaskInterpolation::kNearest;
  std::vector<MaskMapping> mappings;  // one per image, or empty: stretch each map over its mask
};

Status check_class_mask(const image::ImageBatch& class_maps, const ClassMaskParams& params,
                        const image::ImageBatch& masks);
Status run_class_mask_cpu(const image::ImageBatch& class_maps, const ClassMaskParams& params,
                          const image::ImageBatch& masks);
Status run_class_mask_cuda(cudaStream_t stream, const image::ImageBatch& class_maps,
                           const ClassMaskParams& params, const image::ImageBatch& masks);

// Label images (host only, see above): the map column of each frame column and the map row of each
// frame row under `mapping`, clamped into the map.
struct NearestIndices {
  std::vector<int> columns;
  std::vector<int> rows;
};
NearestIndices nearest_indices(const MaskMapping& mapping, int frame_width, int frame_height, int map_width,
                               int map_height);
// `class_map` and `labels`: host kGRAY8 images; `labels` has the frame's size.
Status run_label_image_cpu(const ImageView& class_map, const MaskMapping& mapping, const ImageView& labels);
// The fraction of a frame_width x frame_height label image's pixels whose class is in `classes`.
double label_fraction(const ImageView& class_map, const MaskMapping& mapping, int frame_width,
                      int frame_height, const std::vector<int>& classes);

// What both runs share.
struct ClassSet {
  std::uint32_t bits[8] = {};  // bit c: class c is in the set
};
ClassSet make_class_set(const std::vector<int>& classes);

struct MapSource {
  const std::uint8_t* data = nullptr;
  std::size_t pitch = 0;
  int width = 0;
  int height = 0;
};

FOVEA_HD float in_set(const MapSource& map, const ClassSet& set, int x, int y) {
  const std::uint8_t c = map.data[static_cast<std::size_t>(y) * map.pitch + x];
  return ((set.bits[c >> 5] >> (c & 31)) & 1u) != 0 ? 1.0f : 0.0f;
}

FOVEA_HD int clamp_index(int i, int size) {
  return i < 0 ? 0 : (i >= size ? size - 1 : i);
}

// The map coordinate of frame pixel i's center along one axis.
FOVEA_HD float map_coordinate(int i, float scale, float offset) {
  return add_rn(mul_rn(add_rn(static_cast<float>(i), 0.5f), scale), offset);
}

FOVEA_HD std::uint8_t mask_pixel(const MapSource& map, const ClassSet& set, const MaskMapping& m,
                                 MaskInterpolation interpolation, int x, int y) {
  const float u = map_coordinate(x, m.scale_x, m.offset_x);
  const float v = map_coordinate(y, m.scale_y, m.offset_y);
  if (!(u >= 0.0f && u < static_cast<float>(map.width) && v >= 0.0f && v < static_cast<float>(map.height))) {
    return 0;
  }
  if (interpolation == MaskInterpolation::kNearest) {
    return in_set(map, set, static_cast<int>(u), static_cast<int>(v)) != 0.0f ? 255 : 0;
  }
  const float su = sub_rn(u, 0.5f), sv = sub_rn(v, 0.5f);
  const float fu = floorf(su), fv = floorf(sv);
  const float wx = sub_rn(su, fu), wy = sub_rn(sv, fv);
  const int x0 = clamp_index(static_cast<int>(fu), map.width),
            x1 = clamp_index(static_cast<int>(fu) + 1, map.width);
  const int y0 = clamp_index(static_cast<int>(fv), map.height);
  const int y1 = clamp_index(static_cast<int>(fv) + 1, map.height);
  const float a00 = in_set(map, set, x0, y0), a01 = in_set(map, set, x1, y0);
  const float a10 = in_set(map, set, x0, y1), a11 = in_set(map, set, x1, y1);
  const float top = add_rn(a00, mul_rn(wx, sub_rn(a01, a00)));
  const float bottom = add_rn(a10, mul_rn(wx, sub_rn(a11, a10)));
  return add_rn(top, mul_rn(wy, sub_rn(bottom, top))) >= 0.5f ? 255 : 0;
}

}  // namespace fovea::post
