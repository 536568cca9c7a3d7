// Class masks in plain loops, plus the mappings and checks both runs use.
#include <algorithm>
#include <cstdint>
#include <string>

#include "post/class_mask.h"

namespace fovea::post {

MaskMapping stretch_mask_mapping(int frame_width, int frame_height, int map_width, int map_height) {
  return MaskMapping{static_cast<float>(map_width) / static_cast<float>(frame_width),
                     static_cast<float>(map_height) / static_cast<float>(frame_height), 0.0f, 0.0f};
}

MaskMapping preprocess_mask_mapping(const image::Roi& roi, float resize_scale_x, float resize_scale_y,
                                    float pad_x, float pad_y, int input_width, int input_height,
                                    int map_width, int map_height) {
  // input = (frame - roi origin) * resize_scale + pad; map = input * map_size / input_size.
  const float to_map_x = static_cast<float>(map_width) / static_cast<float>(input_width);
  const float to_map_y = static_cast<float>(map_height) / static_cast<float>(input_height);
  return MaskMapping{resize_scale_x * to_map_x, resize_scale_y * to_map_y,
                     (pad_x - static_cast<float>(roi.x) * resize_scale_x) * to_map_x,
                     (pad_y - static_cast<float>(roi.y) * resize_scale_y) * to_map_y};
}

ClassSet make_class_set(const std::vector<int>& classes) {
  ClassSet set;
  for (int c : classes) set.bits[c >> 5] |= 1u << (c & 31);
  return set;
}

Status check_class_mask(const image::ImageBatch& class_maps, const ClassMaskParams& params,
                        const image::ImageBatch& masks) {
  FOVEA_TRY(image::check_batch(class_maps, {PixelFormat::kGRAY8}, "class maps"));
  FOVEA_TRY(image::check_batch(masks, {PixelFormat::kGRAY8}, "masks"));
  FOVEA_TRY(image::check_same_batch_size(class_maps, masks, "class maps", "masks"));
  if (!class_maps.rois.empty() || !masks.rois.empty()) {
    return make_error(StatusCode::kUnsupported,
                      "class mask: ROIs are not supported (mappings place the map)");
  }
  if (class_maps.images[0].memory != masks.images[0].memory) {
    return make_error(StatusCode::kInvalidArgument,
                      "class mask: class maps and masks are in different memory");
  }
  for (int c : params.classes) {
    if (c < 0 || c > 255) {
      return make_error(StatusCode::kInvalidArgument, "class mask: class ", std::to_string(c),
                        " is not 0..255");
    }
  }
  if (!params.mappings.empty() && params.mappings.size() != class_maps.images.size()) {
    return make_error(StatusCode::kInvalidArgument, "class mask: ", std::to_string(params.mappings.size()),
                      " mappings for ", std::to_string(class_maps.size()), " images");
  }
  for (const MaskMapping& m : params.mappings) {
    if (!std::isfinite(m.scale_x) || !std::isfinite(m.scale_y) || !std::isfinite(m.offset_x) ||
        !std::isfinite(m.offset_y)) {
      return make_error(StatusCode::kInvalidArgument, "class mask: a mapping is not finite");
    }
  }
  return Status::ok();
}

Status run_class_mask_cpu(const image::ImageBatch& class_maps, const ClassMaskParams& params,
                          const image::ImageBatch& masks) {
  FOVEA_TRY(check_class_mask(class_maps, params, masks));
  if (image::batch_on_device(masks)) {
    return make_error(StatusCode::kInvalidArgument, "class mask: the CPU run needs host images");
  }
  const ClassSet set = make_class_set(params.classes);
  for (int n = 0; n < masks.size(); ++n) {
    const ImageView& map_view = class_maps.images[static_cast<std::size_t>(n)];
    const ImageView& mask = masks.images[static_cast<std::size_t>(n)];
    const MapSource map{static_cast<const std::uint8_t*>(map_view.planes[0].data), map_view.planes[0].pitch,
                        map_view.width, map_view.height};
    const MaskMapping m = params.mappings.empty()
                              ? stretch_mask_mapping(mask.width, mask.height, map.width, map.height)
                              : params.mappings[static_cast<std::size_t>(n)];
    for (int y = 0; y < mask.height; ++y) {
      std::uint8_t* row = mask.row(0, y);
      for (int x = 0; x < mask.width; ++x) row[x] = mask_pixel(map, set, m, params.interpolation, x, y);
    }
  }
  return Status::ok();
}

namespace {

// The map index of each frame pixel along one axis, clamped into the map. Clamped as a float first:
// a coordinate far outside must not overflow the int conversion.
std::vector<int> nearest_along(int frame_size, int map_size, float scale, float offset) {
  std::vector<int> indices(static_cast<std::size_t>(frame_size));
  const auto limit = static_cast<float>(map_size);
  for (int i = 0; i < frame_size; ++i) {
    const float u = std::clamp(map_coordinate(i, scale, offset), 0.0f, limit);
    indices[static_cast<std::size_t>(i)] = clamp_index(static_cast<int>(std::floor(u)), map_size);
  }
  return indices;
}

}  // namespace

NearestIndices nearest_indices(const MaskMapping& mapping, int frame_width, int frame_height, int map_width,
                               int map_height) {
  return {nearest_along(frame_width, map_width, mapping.scale_x, mapping.offset_x),
          nearest_along(frame_height, map_height, mapping.scale_y, mapping.offset_y)};
}

Status run_label_image_cpu(const ImageView& class_map, const MaskMapping& mapping, const ImageView& labels) {
  if (class_map.format != PixelFormat::kGRAY8 || labels.format != PixelFormat::kGRAY8 ||
      class_map.memory == MemoryKind::kDevice || labels.memory == MemoryKind::kDevice) {
    return make_error(StatusCode::kInvalidArgument, "label image: class map and labels must be host GRAY8");
  }
  const NearestIndices at =
      nearest_indices(mapping, labels.width, labels.height, class_map.width, class_map.height);
  for (int y = 0; y < labels.height; ++y) {
    const std::uint8_t* source = class_map.row(0, at.rows[static_cast<std::size_t>(y)]);
    std::uint8_t* row = labels.row(0, y);
    for (int x = 0; x < labels.width; ++x) row[x] = source[at.columns[static_cast<std::size_t>(x)]];
  }
  return Status::ok();
}

double label_fraction(const ImageView& class_map, const MaskMapping& mapping, int frame_width,
                      int frame_height, const std::vector<int>& classes) {
  if (frame_width <= 0 || frame_height <= 0) return 0.0;
  const NearestIndices at =
      nearest_indices(mapping, frame_width, frame_height, class_map.width, class_map.height);
  // How many frame columns (rows) each map column (row) gives its class to.
  std::vector<std::uint64_t> column_count(static_cast<std::size_t>(class_map.width), 0);
  std::vector<std::uint64_t> row_count(static_cast<std::size_t>(class_map.height), 0);
  for (const int c : at.columns) ++column_count[static_cast<std::size_t>(c)];
  for (const int r : at.rows) ++row_count[static_cast<std::size_t>(r)];
  const ClassSet set = make_class_set(classes);
  const MapSource map{static_cast<const std::uint8_t*>(class_map.planes[0].data), class_map.planes[0].pitch,
                      class_map.width, class_map.height};
  std::uint64_t selected = 0;
  for (int v = 0; v < map.height; ++v) {
    if (row_count[static_cast<std::size_t>(v)] == 0) continue;
    std::uint64_t columns = 0;
    for (int u = 0; u < map.width; ++u) {
      if (in_set(map, set, u, v) != 0.0f) columns += column_count[static_cast<std::size_t>(u)];
    }
    selected += columns * row_count[static_cast<std::size_t>(v)];
  }
  return static_cast<double>(selected) / (static_cast<double>(frame_width) * frame_height);
}

}  // namespace fovea::post
