#include "track/synthetic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <random>

#include <fmt/format.h>

namespace fovea::track {
namespace {

// Random numbers from mt19937's bits with fovea's own transforms: the standard library's
// distributions differ between implementations, and the scene must be the same everywhere.
class Random {
 public:
  explicit Random(std::uint32_t seed) : engine_(seed) {}
  double uniform() { return static_cast<double>(engine_() >> 8) * (1.0 / 16777216.0); }  // [0, 1), 24 bits
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal() {  // Box-Muller
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  int poisson(double mean) {  // Knuth's product of uniforms; means here are a few units
    const double limit = std::exp(-mean);
    int count = 0;
    for (double product = uniform(); product > limit; product *= uniform()) ++count;
    return count;
  }
  bool chance(double p) { return uniform() < p; }

 private:
  std::mt19937 engine_;
};

struct Point {
  double x = 0.0, y = 0.0;
};

constexpr int kPerson = 0;
constexpr int kCar = 1;

struct Actor {
  std::int64_t id = 0;
  int class_id = kPerson;
  double w = 0.0, h = 0.0;
  std::array<Point, 3> path;  // entry, waypoint, exit (box centers)
  double speed = 0.0;         // px per frame
  double travelled = 0.0;

  double segment(int i) const { return std::hypot(path[i + 1].x - path[i].x, path[i + 1].y - path[i].y); }
  bool done() const { return travelled >= segment(0) + segment(1); }
  Box box() const {
    const double first = segment(0);
    const int i = travelled < first ? 0 : 1;
    const double along = i == 0 ? travelled : travelled - first;
    const double t = segment(i) > 0 ? std::min(1.0, along / segment(i)) : 1.0;
    const double cx = path[i].x + t * (path[i + 1].x - path[i].x);
    const double cy = path[i].y + t * (path[i + 1].y - path[i].y);
    const auto f = [](double v) { return static_cast<float>(v); };
    return Box{f(cx - w / 2), f(cy - h / 2), f(cx + w / 2), f(cy + h / 2)};
  }
};

// A box center just outside a random edge, so the box enters (or leaves) across it.
Point outside_point(Random& rng, const SceneParams& p, double w, double h) {
  const int edge = static_cast<int>(rng.uniform() * 4);
  const double x = rng.uniform(0, p.width), y = rng.uniform(0, p.height);
  switch (edge) {
    case 0: return {-w / 2, y};
    case 1: return {p.width + w / 2, y};
    case 2: return {x, -h / 2};
    default: return {x, p.height + h / 2};
  }
}

// Waypoints keep 15% away from the borders so that turns happen in view.
Point inside_point(Random& rng, const SceneParams& p) {
  return {rng.uniform(0.15 * p.width, 0.85 * p.width), rng.uniform(0.15 * p.height, 0.85 * p.height)};
}

Actor make_actor(Random& rng, const SceneParams& p, std::int64_t id, bool start_inside) {
  Actor a;
  a.id = id;
  // Roughly a street scene: 60% people, 40% cars; sizes and speeds as synthetic.h states.
  a.class_id = rng.chance(0.6) ? kPerson : kCar;
  if (a.class_id == kPerson) {
    a.h = rng.uniform(100, 160);
    a.w = 0.4 * a.h;
    a.speed = rng.chance(0.7) ? rng.uniform(0.5, 1.5) : rng.uniform(2, 5);
  } else {
    a.w = rng.uniform(160, 240);
    a.h = 0.55 * a.w;
    a.speed = rng.chance(0.3) ? rng.uniform(2, 5) : rng.uniform(6, 12);
  }
  a.path[0] = start_inside ? inside_point(rng, p) : outside_point(rng, p, a.w, a.h);
  a.path[1] = inside_point(rng, p);
  a.path[2] = outside_point(rng, p, a.w, a.h);
  return a;
}

Box clip(Box b, const SceneParams& p) {
  const auto w = static_cast<float>(p.width), h = static_cast<float>(p.height);
  return Box{std::clamp(b.x1, 0.0f, w), std::clamp(b.y1, 0.0f, h), std::clamp(b.x2, 0.0f, w),
             std::clamp(b.y2, 0.0f, h)};
}

bool inside(Box b, double x, double y) {
  return x >= b.x1 && x < b.x2 && y >= b.y1 && y < b.y2;
}

// The visible fraction of boxes[i], sampled on a 10x10 grid (1% steps, finer than the noise of
// any detector): points inside the frame and not inside a nearer box (larger bottom edge).
float visibility(std::span<const Box> boxes, std::size_t i, const SceneParams& p) {
  constexpr int kGrid = 10;
  const Box b = boxes[i];
  std::vector<std::size_t> nearer;
  for (std::size_t j = 0; j < boxes.size(); ++j) {
    if (j != i && (boxes[j].y2 > b.y2 || (boxes[j].y2 == b.y2 && j > i)) && box_iou(boxes[j], b) > 0) {
      nearer.push_back(j);
    }
  }
  int seen = 0;
  for (int gy = 0; gy < kGrid; ++gy) {
    for (int gx = 0; gx < kGrid; ++gx) {
      const double x = b.x1 + (gx + 0.5) * (b.x2 - b.x1) / kGrid,
                   y = b.y1 + (gy + 0.5) * (b.y2 - b.y1) / kGrid;
      if (x < 0 || y < 0 || x >= p.width || y >= p.height) continue;
      if (std::none_of(nearer.begin(), nearer.end(), [&](std::size_t j) { return inside(boxes[j], x, y); }))
        ++seen;
    }
  }
  return static_cast<float>(seen) / (kGrid * kGrid);
}

Status check_range(int value, int lo, int hi, std::string_view name) {
  if (value >= lo && value <= hi) return Status::ok();
  return make_error(StatusCode::kInvalidArgument, "synthetic scene ", name, ": ",
                    fmt::format("{} is not in [{}, {}]", value, lo, hi));
}

Status check_noise(float value, float hi, std::string_view name) {
  if (std::isfinite(value) && value >= 0.0f && value <= hi) return Status::ok();
  return make_error(StatusCode::kInvalidArgument, "detection noise ", name, ": ",
                    fmt::format("{} is not in [0, {}]", value, hi));
}

}  // namespace

Result<SyntheticScene> generate_scene(const SceneParams& p) {
  // Limits: a day of 30 fps video, 8K frames, a crowd of 1000; beyond them memory, not the
  // generator, is the problem.
  FOVEA_TRY(check_range(p.frames, 1, 30 * 3600 * 24, "frames"));
  FOVEA_TRY(check_range(p.width, 16, 7680, "width"));
  FOVEA_TRY(check_range(p.height, 16, 4320, "height"));
  FOVEA_TRY(check_range(p.objects, 1, 1000, "objects"));
  if (!(p.min_visibility > 0.0f && p.min_visibility <= 1.0f)) {
    return make_error(StatusCode::kInvalidArgument, "synthetic scene min_visibility: ",
                      fmt::format("{} is not in (0, 1]", p.min_visibility));
  }
  Random rng(p.seed);
  SyntheticScene scene{p, {}};
  std::vector<Actor> actors;
  std::int64_t next_id = 1;
  for (int i = 0; i < p.objects; ++i) actors.push_back(make_actor(rng, p, next_id++, true));
  std::vector<Box> boxes;
  for (int f = 0; f < p.frames; ++f) {
    std::erase_if(actors, [](const Actor& a) { return a.done(); });
    // One newcomer per frame at most while the scene is below its size: arrivals spread out.
    if (static_cast<int>(actors.size()) < p.objects) actors.push_back(make_actor(rng, p, next_id++, false));
    boxes.clear();
    for (const Actor& a : actors) boxes.push_back(a.box());
    std::vector<TruthObject>& frame = scene.frames.emplace_back();
    for (std::size_t i = 0; i < actors.size(); ++i) {
      const float v = visibility(boxes, i, p);
      if (v >= p.min_visibility) frame.push_back({actors[i].id, actors[i].class_id, clip(boxes[i], p), v});
    }
    for (Actor& a : actors) a.travelled += a.speed;
  }
  return scene;
}

MotSequence truth_sequence(const SyntheticScene& scene) {
  MotSequence s;
  for (const std::vector<TruthObject>& frame : scene.frames) {
    std::vector<MotObject>& out = s.frames.emplace_back();
    for (const TruthObject& o : frame) out.push_back({o.id, o.box, 1.0f});
  }
  return s;
}

std::vector<std::vector<Detection>> truth_detections(const SyntheticScene& scene) {
  std::vector<std::vector<Detection>> detections;
  for (const std::vector<TruthObject>& frame : scene.frames) {
    std::vector<Detection>& out = detections.emplace_back();
    for (const TruthObject& o : frame) out.push_back({o.box, o.class_id, 1.0f});
  }
  return detections;
}

Result<std::vector<std::vector<Detection>>> noisy_detections(const SyntheticScene& scene,
                                                             const DetectionNoise& noise) {
  FOVEA_TRY(check_noise(noise.jitter, 1.0f, "jitter"));
  FOVEA_TRY(check_noise(noise.miss_rate, 1.0f, "miss_rate"));
  FOVEA_TRY(check_noise(noise.occluded_miss, 1.0f, "occluded_miss"));
  FOVEA_TRY(check_noise(noise.score_noise, 1.0f, "score_noise"));
  FOVEA_TRY(check_noise(noise.false_positives, 1000.0f, "false_positives"));
  Random rng(noise.seed);
  const SceneParams& p = scene.params;
  const auto f = [](double v) { return static_cast<float>(v); };
  std::vector<std::vector<Detection>> detections;
  for (const std::vector<TruthObject>& frame : scene.frames) {
    std::vector<Detection>& out = detections.emplace_back();
    for (const TruthObject& o : frame) {
      if (rng.chance(noise.miss_rate + noise.occluded_miss * (1.0 - o.visibility))) continue;
      const double w = o.box.x2 - o.box.x1, h = o.box.y2 - o.box.y1, j = noise.jitter;
      const Box b{f(o.box.x1 + j * w * rng.normal()), f(o.box.y1 + j * h * rng.normal()),
                  f(o.box.x2 + j * w * rng.normal()), f(o.box.y2 + j * h * rng.normal())};
      const double score = 0.2 + 0.75 * std::pow(o.visibility, 1.5) + noise.score_noise * rng.normal();
      out.push_back({clip(normalized_box(b), p), o.class_id, f(std::clamp(score, 0.05, 1.0))});
    }
    for (int n = rng.poisson(noise.false_positives); n > 0; --n) {
      const bool person = rng.chance(0.5);
      const double h = person ? rng.uniform(100, 160) : rng.uniform(88, 132);
      const double w = person ? 0.4 * h : h / 0.55;
      const double x = rng.uniform(0, p.width - w), y = rng.uniform(0, p.height - h);
      const double u = rng.uniform();
      out.push_back({Box{f(x), f(y), f(x + w), f(y + h)}, person ? kPerson : kCar, f(0.1 + 0.5 * u * u)});
    }
  }
  return detections;
}

}  // namespace fovea::track
