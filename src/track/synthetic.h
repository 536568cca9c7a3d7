// Synthetic scenes with known trajectories, for measuring trackers: per-frame ground-truth boxes
// with identities, and detections made from them (exact, or with a detector's noise). Everything
// is deterministic from the seeds. The output is boxes, so the same scene can later be rendered
// into a clip.
//
// The scene (defaults: 1920x1080, 30 fps, 30 s, about 20 objects at a time):
//   - people (class 0, 100-160 px tall, 0.4 wide per unit of height) and cars (class 1, 160-240 px
//     wide, 0.55 high per unit of width);
//   - three speeds: slow (0.5-1.5 px/frame, people), medium (2-5) and fast (6-12, cars), i.e.
//     from a stroll to about 30 km/h across a 20 m wide view;
//   - each object enters across a frame edge (or is already inside at frame 0), walks to a
//     waypoint inside the frame, turns there toward an exit point and leaves across an edge;
//   - paths cross at random; the object lower in the frame (larger bottom y) is nearer the camera
//     and hides what is behind it. With these sizes and speeds a person passing behind a car is
//     hidden for up to about a second (130 px of car width at a relative speed of 4 px/frame), and
//     rarely longer (a slow person behind a slow car: 67 frames at most in a minute of scenes);
//   - an object is in the ground truth of a frame while at least min_visibility of its box is
//     visible (inside the frame and not hidden), with its full box clipped to the frame.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "track/mot.h"
#include "track/tracker.h"

namespace fovea::track {

struct SceneParams {
  std::uint32_t seed = 1;
  int frames = 900;
  int width = 1920;
  int height = 1080;
  int objects = 20;  // objects in view at a time, kept by entering new ones as others leave
  // A quarter visible: below that a detector rarely finds an object and a person would not
  // label it either.
  float min_visibility = 0.25f;
};

struct TruthObject {
  std::int64_t id = 0;  // from 1
  int class_id = 0;
  Box box;
  float visibility = 1.0f;  // the visible fraction of the box, in [min_visibility, 1]
};

struct SyntheticScene {
  SceneParams params;
  std::vector<std::vector<TruthObject>> frames;
};

// kInvalidArgument naming the parameter: frames, width, height or objects below 1 (or absurdly
// large), min_visibility outside (0, 1].
Result<SyntheticScene> generate_scene(const SceneParams& params);

// The ground truth as a MOTChallenge sequence (confidence 1).
MotSequence truth_sequence(const SyntheticScene& scene);

// A perfect detector: every ground-truth box with score 1.
std::vector<std::vector<Detection>> truth_detections(const SyntheticScene& scene);

// A detector's errors, with defaults in the range of a good pedestrian/vehicle detector on easy
// footage (MOT17's public detections miss more; the synthetic set is meant to be easier):
struct DetectionNoise {
  std::uint32_t seed = 1;
  // Each box edge moves by N(0, jitter x the box's width or height).
  float jitter = 0.03f;
  // Probability of missing a fully visible object; it grows by occluded_miss x the hidden fraction.
  float miss_rate = 0.05f;
  float occluded_miss = 0.4f;
  // A true detection scores 0.2 + 0.75 x visibility^1.5 + N(0, score_noise), clamped to [0.05, 1]:
  // fully visible objects near 0.95, half-hidden ones near 0.45 (ByteTrack's low-score range).
  float score_noise = 0.08f;
  // False positives per frame (Poisson), anywhere, with the size of a random class and a score of
  // 0.1 + 0.5 u^2 for uniform u (one in ten above 0.5).
  float false_positives = 1.0f;
};

// kInvalidArgument naming the field for a negative or non-finite value, or a probability above 1.
Result<std::vector<std::vector<Detection>>> noisy_detections(const SyntheticScene& scene,
                                                             const DetectionNoise& noise);

}  // namespace fovea::track
