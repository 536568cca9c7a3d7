#include "io/synthetic_clip.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <optional>

#include "core/check.h"
#include "core/hash.h"
#include "io/demuxer.h"
#include "io/encoder.h"

namespace fovea::io {

namespace {

constexpr double kTwoPi = 6.283185307179586;

enum class ShapeKind { kCircle, kRectangle };

// A shape's center follows a Lissajous path around the frame center: x = W (0.5 + ax sin(2 pi f /
// px + phase_x)), likewise y; amplitudes keep every shape inside the frame. Sizes are fractions of
// the height.
struct ShapeSpec {
  ShapeKind kind;
  std::array<int, 3> rgb;  // max - min of 184..192 levels: colorfulness 0.72..0.75
  double half_width;       // the radius for circles
  double half_height;
  double amplitude_x, period_x, phase_x;
  double amplitude_y, period_y, phase_y;
};

// In class order (kSyntheticRedClass, then green, then blue): ground_truth_boxes numbers them so.
constexpr std::array<ShapeSpec, 3> kShapes{{
    {ShapeKind::kCircle, {224, 40, 36}, 0.14, 0.14, 0.36, 150, 0.0, 0.25, 110, 0.5},
    {ShapeKind::kRectangle, {44, 212, 28}, 0.12, 0.09, 0.38, 180, 3.1, 0.30, 130, 1.0},
    {ShapeKind::kCircle, {36, 72, 228}, 0.10, 0.10, 0.33, 120, 2.0, 0.28, 170, 4.0},
}};

// Levels of luma-only grain on subjects (added to R, G and B alike, so colorfulness is unchanged)
// and of the background's tint and chroma grain (at most 3 + 3 + 3 + 3 = 12 levels apart across
// channels, c <= 12/255 = 0.047, under kSyntheticBackgroundMaxColorfulness).
constexpr int kSubjectGrain = 8;
constexpr int kBackgroundTint = 3;
constexpr int kChromaGrain = 3;

struct PlacedShape {
  ShapeKind kind;
  double cx, cy, half_width, half_height;
};

struct Scene {
  std::array<PlacedShape, kShapes.size()> shapes;
};

Scene scene_at(int frame_index, int width, int height) {
  Scene scene{};
  const double f = frame_index;
  for (std::size_t i = 0; i < kShapes.size(); ++i) {
    const ShapeSpec& s = kShapes[i];
    scene.shapes[i] =
        PlacedShape{s.kind, width * (0.5 + s.amplitude_x * std::sin(kTwoPi * f / s.period_x + s.phase_x)),
                    height * (0.5 + s.amplitude_y * std::sin(kTwoPi * f / s.period_y + s.phase_y)),
                    s.half_width * height, s.half_height * height};
  }
  return scene;
}

bool covers(const PlacedShape& shape, double px, double py) {
  const double dx = px - shape.cx;
  const double dy = py - shape.cy;
  if (shape.kind == ShapeKind::kCircle) return dx * dx + dy * dy <= shape.half_width * shape.half_width;
  return std::abs(dx) <= shape.half_width && std::abs(dy) <= shape.half_height;
}

// The topmost shape over pixel (x, y) (later shapes are drawn over earlier ones), or none.
const ShapeSpec* subject_at(const Scene& scene, int x, int y) {
  for (std::size_t i = scene.shapes.size(); i-- > 0;) {
    if (covers(scene.shapes[i], x + 0.5, y + 0.5)) return &kShapes[i];
  }
  return nullptr;
}

// The finalizer of MurmurHash3 over three words, for reproducible texture.
std::uint32_t hash3(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  return murmur_finalize(a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u ^ (c + 0x165667B1u) * 0xC2B2AE3Du);
}

double unit_hash(std::uint32_t seed, std::uint32_t x, std::uint32_t y) {
  return (hash3(seed, x, y) & 0xFFFFu) / 65535.0;
}

// Smooth value noise in 0..1: random values on a lattice of `cell` pixels, interpolated with a
// smoothstep so that cell borders do not show.
double value_noise(std::uint32_t seed, int x, int y, int cell) {
  const int ix = x / cell;
  const int iy = y / cell;
  const double fx = static_cast<double>(x % cell) / cell;
  const double fy = static_cast<double>(y % cell) / cell;
  const double sx = fx * fx * (3 - 2 * fx);
  const double sy = fy * fy * (3 - 2 * fy);
  const auto ux = static_cast<std::uint32_t>(ix);
  const auto uy = static_cast<std::uint32_t>(iy);
  const double top = unit_hash(seed, ux, uy) * (1 - sx) + unit_hash(seed, ux + 1, uy) * sx;
  const double bottom = unit_hash(seed, ux, uy + 1) * (1 - sx) + unit_hash(seed, ux + 1, uy + 1) * sx;
  return top * (1 - sy) + bottom * sy;
}

struct Texture {
  int noise_cell;     // value-noise lattice: 16 cells over the height
  int stripe_period;  // diagonal stripes: 18 over the height, sliding one pixel per frame
};

Texture texture_for(int height) {
  return Texture{std::max(4, height / 16), std::max(6, height / 18)};
}

// Gray level 48..203: noise (0..100), stripes (0 or 40) and grain (0..15); away from 0 and 255 so
// that the tint never clips.
int background_gray(const Texture& texture, std::uint32_t seed, int frame_index, int x, int y) {
  const int noise = static_cast<int>(100 * value_noise(seed, x, y, texture.noise_cell));
  const int stripe = (x + y + frame_index) % texture.stripe_period < texture.stripe_period / 2 ? 40 : 0;
  const int grain = static_cast<int>(hash3(seed ^ 0xA5A5A5A5u, static_cast<std::uint32_t>(x),
                                           static_cast<std::uint32_t>(y + 4096 * frame_index)) &
                                     15u);
  return 48 + noise + stripe + grain;
}

// Grain in -amount..amount from the hash bits at `shift`.
int signed_grain(std::uint32_t hash, int shift, int amount) {
  return static_cast<int>((hash >> shift) % static_cast<std::uint32_t>(2 * amount + 1)) - amount;
}

std::array<int, 3> pixel_rgb(const Scene& scene, const Texture& texture, std::uint32_t seed, int frame_index,
                             int x, int y) {
  const std::uint32_t h = hash3(seed + static_cast<std::uint32_t>(frame_index), static_cast<std::uint32_t>(x),
                                static_cast<std::uint32_t>(y));
  if (const ShapeSpec* shape = subject_at(scene, x, y)) {
    const int grain = signed_grain(h, 0, kSubjectGrain);
    return {shape->rgb[0] + grain, shape->rgb[1] + grain, shape->rgb[2] + grain};
  }
  const int gray = background_gray(texture, seed, frame_index, x, y);
  return {gray + kBackgroundTint + signed_grain(h, 8, kChromaGrain), gray,
          gray - kBackgroundTint + signed_grain(h, 16, kChromaGrain)};
}

Frame owned_frame(PixelFormat format, int width, int height, int frame_index) {
  Result<ImageAllocation> allocation = plan_image_allocation(format, width, height, 3, 64);
  FOVEA_CHECK(allocation.is_ok());
  auto storage = std::make_shared<std::vector<std::uint8_t>>(allocation->total_bytes);
  Frame frame;
  frame.image = image_view_in(storage->data(), *allocation, format, width, height, MemoryKind::kHost);
  frame.owner = storage;
  frame.pts = frame_index;
  frame.has_pts = true;
  frame.index = frame_index;
  frame.keyframe = frame_index == 0;
  return frame;
}

std::uint8_t clamp_u8(double value) {
  return static_cast<std::uint8_t>(std::clamp(std::lround(value), 0L, 255L));
}

// BT.601 limited range (ITU-R BT.601 coefficients scaled to 16..235 / 16..240).
std::uint8_t luma_601(const std::uint8_t* rgb) {
  return clamp_u8(16.0 + (65.481 * rgb[0] + 128.553 * rgb[1] + 24.966 * rgb[2]) / 255.0);
}

void fill_chroma_601(const ImageView& rgb, const ImageView& yuv) {
  const int chroma_w = (yuv.width + 1) / 2;
  const int chroma_h = (yuv.height + 1) / 2;
  for (int cy = 0; cy < chroma_h; ++cy) {
    std::uint8_t* u = yuv.row(1, cy);
    std::uint8_t* v = yuv.row(2, cy);
    for (int cx = 0; cx < chroma_w; ++cx) {
      std::array<double, 3> sum{};
      int count = 0;
      for (int y = 2 * cy; y < std::min(2 * cy + 2, rgb.height); ++y) {
        for (int x = 2 * cx; x < std::min(2 * cx + 2, rgb.width); ++x) {
          const std::uint8_t* p = rgb.row(0, y) + 3 * x;
          for (int c = 0; c < 3; ++c) sum[c] += p[c];
          ++count;
        }
      }
      const double r = sum[0] / count, g = sum[1] / count, b = sum[2] / count;
      u[cx] = clamp_u8(128.0 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255.0);
      v[cx] = clamp_u8(128.0 + (112.0 * r - 93.786 * g - 18.214 * b) / 255.0);
    }
  }
}

}  // namespace

Status check_synthetic_clip_options(const SyntheticClipOptions& options) {
  for (const auto& [name, side] : {std::pair{"width", options.width}, std::pair{"height", options.height}}) {
    if (side < kSyntheticMinSide || side > kMaxVideoSide || side % 2 != 0) {
      return make_error(StatusCode::kInvalidArgument, "synthetic clip: ", name, " ", std::to_string(side),
                        " is not an even size in ", std::to_string(kSyntheticMinSide), "..",
                        std::to_string(kMaxVideoSide));
    }
  }
  if (options.frames < 1) {
    return make_error(StatusCode::kInvalidArgument, "synthetic clip: frames ", std::to_string(options.frames),
                      " is not positive");
  }
  if (options.frame_rate.num <= 0 || options.frame_rate.den <= 0) {
    return make_error(StatusCode::kInvalidArgument, "synthetic clip: frame rate ",
                      std::to_string(options.frame_rate.num), "/", std::to_string(options.frame_rate.den),
                      " is not positive");
  }
  return Status::ok();
}

Frame render_synthetic_rgb(int frame_index, int width, int height, std::uint32_t seed) {
  FOVEA_CHECK(width > 0 && height > 0);
  Frame frame = owned_frame(PixelFormat::kRGB8, width, height, frame_index);
  const Scene scene = scene_at(frame_index, width, height);
  const Texture texture = texture_for(height);
  for (int y = 0; y < height; ++y) {
    std::uint8_t* row = frame.image.row(0, y);
    for (int x = 0; x < width; ++x) {
      const std::array<int, 3> rgb = pixel_rgb(scene, texture, seed, frame_index, x, y);
      for (int c = 0; c < 3; ++c) row[3 * x + c] = static_cast<std::uint8_t>(rgb[c]);
    }
  }
  return frame;
}

Frame render_synthetic_yuv420p(int frame_index, int width, int height, std::uint32_t seed) {
  const Frame rgb = render_synthetic_rgb(frame_index, width, height, seed);
  Frame yuv = owned_frame(PixelFormat::kYUV420P, width, height, frame_index);
  for (int y = 0; y < height; ++y) {
    const std::uint8_t* in = rgb.image.row(0, y);
    std::uint8_t* out = yuv.image.row(0, y);
    for (int x = 0; x < width; ++x) out[x] = luma_601(in + 3 * x);
  }
  fill_chroma_601(rgb.image, yuv.image);
  return yuv;
}

std::vector<std::uint8_t> ground_truth_mask(int frame_index, int width, int height) {
  FOVEA_CHECK(width > 0 && height > 0);
  const Scene scene = scene_at(frame_index, width, height);
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(width) * static_cast<std::size_t>(height));
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      mask[static_cast<std::size_t>(y) * width + x] = subject_at(scene, x, y) != nullptr ? 1 : 0;
    }
  }
  return mask;
}

std::vector<SyntheticObject> ground_truth_boxes(int frame_index, int width, int height) {
  FOVEA_CHECK(width > 0 && height > 0);
  const Scene scene = scene_at(frame_index, width, height);
  // Per shape, the extent of the pixels it shows; x1 > x2 marks a shape not seen yet.
  std::array<Box, kShapes.size()> extents;
  extents.fill(Box{static_cast<float>(width), static_cast<float>(height), 0.0f, 0.0f});
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const ShapeSpec* shape = subject_at(scene, x, y);
      if (shape == nullptr) continue;
      Box& box = extents[static_cast<std::size_t>(shape - kShapes.data())];
      box = Box{std::min(box.x1, static_cast<float>(x)), std::min(box.y1, static_cast<float>(y)),
                std::max(box.x2, static_cast<float>(x + 1)), std::max(box.y2, static_cast<float>(y + 1))};
    }
  }
  std::vector<SyntheticObject> objects;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    // The shapes are listed in class order: red, green, blue.
    if (extents[i].x1 < extents[i].x2)
      objects.push_back({static_cast<int>(i) + kSyntheticRedClass, extents[i]});
  }
  return objects;
}

Status write_synthetic_clip(const std::string& path, const SyntheticClipOptions& options) {
  FOVEA_TRY(check_synthetic_clip_options(options));
  EncoderOptions encoder_options;
  encoder_options.backend = EncoderBackend::kCpu;
  encoder_options.width = options.width;
  encoder_options.height = options.height;
  encoder_options.frame_rate = options.frame_rate;
  encoder_options.time_base = Rational{options.frame_rate.den, options.frame_rate.num};
  encoder_options.preset = options.preset;
  encoder_options.crf = options.crf;
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<Encoder> encoder, Encoder::open(path, encoder_options));
  for (int i = 0; i < options.frames; ++i) {
    Frame frame = render_synthetic_yuv420p(i, options.width, options.height, options.seed);
    frame.time_base = encoder_options.time_base;
    FOVEA_TRY(encoder->encode(frame));
  }
  return encoder->finish();
}

SyntheticMatch& SyntheticMatch::operator+=(const SyntheticMatch& other) {
  objects += other.objects;
  matched += other.matched;
  false_positives += other.false_positives;
  worst_corner_error = std::max(worst_corner_error, other.worst_corner_error);
  return *this;
}

SyntheticMatch match_ground_truth(int frame_index, int width, int height,
                                  std::span<const SyntheticObject> detections, double tolerance) {
  const auto corner_error = [](const Box& a, const Box& b) {
    return std::max({std::abs(static_cast<double>(a.x1) - b.x1), std::abs(static_cast<double>(a.y1) - b.y1),
                     std::abs(static_cast<double>(a.x2) - b.x2), std::abs(static_cast<double>(a.y2) - b.y2)});
  };
  const std::vector<SyntheticObject> truth = ground_truth_boxes(frame_index, width, height);
  std::vector<bool> used(detections.size(), false);
  SyntheticMatch match{.objects = static_cast<std::int64_t>(truth.size())};
  for (const SyntheticObject& object : truth) {
    std::optional<std::size_t> best;
    double best_error = tolerance;
    for (std::size_t d = 0; d < detections.size(); ++d) {
      if (used[d] || detections[d].class_id != object.class_id) continue;
      const double error = corner_error(detections[d].box, object.box);
      if (error <= best_error) {
        best = d;
        best_error = error;
      }
    }
    if (!best) continue;
    used[*best] = true;
    ++match.matched;
    match.worst_corner_error = std::max(match.worst_corner_error, best_error);
  }
  match.false_positives = static_cast<std::int64_t>(std::count(used.begin(), used.end(), false));
  return match;
}

}  // namespace fovea::io
