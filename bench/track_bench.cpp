// Tracker cost per object per frame at 100 objects per frame (issue 20's target: <= 2 us on the
// GPU machine's CPU), for each tracker, with the detector on every frame (interval 0) and on
// every third (interval 2: one update and two predictions per three frames).
//
//   track_bench [google benchmark flags]   # e.g. --benchmark_repetitions=5
//   track_bench --metrics                  # the quality table of tests/track/quality_test.cpp
//
// Input: 100 objects (half people, half cars, random sizes) moving at 0.5-12 px/frame in a
// 1920x1080 frame, bouncing off its borders, detected with 3% jitter, 600 frames precomputed; the
// tracker is reset when the frames wrap around.
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "track/quality.h"
#include "track/tracker.h"

namespace {

using namespace fovea;
using namespace fovea::track;

constexpr int kObjects = 100;
constexpr int kFrames = 600;

std::vector<std::vector<Detection>> make_frames() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  struct Mover {
    float x, y, w, h, vx, vy;
    int class_id;
  };
  std::vector<Mover> movers;
  for (int i = 0; i < kObjects; ++i) {
    const int class_id = i % 2;
    const float h = class_id == 0 ? 100 + 60 * unit(rng) : 90 + 40 * unit(rng);
    const float w = class_id == 0 ? 0.4f * h : h / 0.55f;
    const float speed = 0.5f + 11.5f * unit(rng), angle = 6.2831853f * unit(rng);
    movers.push_back({unit(rng) * (1920 - w), unit(rng) * (1080 - h), w, h, speed * std::cos(angle),
                      speed * std::sin(angle), class_id});
  }
  std::vector<std::vector<Detection>> frames(kFrames);
  for (std::vector<Detection>& frame : frames) {
    for (Mover& m : movers) {
      const float j = 0.03f;
      frame.push_back({Box{m.x + j * m.w * noise(rng), m.y + j * m.h * noise(rng),
                           m.x + m.w + j * m.w * noise(rng), m.y + m.h + j * m.h * noise(rng)},
                       m.class_id, 0.6f + 0.4f * unit(rng)});
      m.x += m.vx;
      m.y += m.vy;
      if (m.x < 0 || m.x + m.w > 1920) m.vx = -m.vx;
      if (m.y < 0 || m.y + m.h > 1080) m.vy = -m.vy;
    }
  }
  return frames;
}

void BM_Track(benchmark::State& state, TrackerKind kind) {
  static const std::vector<std::vector<Detection>> frames = make_frames();
  const int interval = static_cast<int>(state.range(0));
  Result<std::unique_ptr<Tracker>> tracker = Tracker::create(default_tracker_params(kind));
  if (!tracker.is_ok()) {
    state.SkipWithError(tracker.status().to_string().c_str());
    return;
  }
  std::vector<TrackedObject> out;
  std::size_t frame = 0;
  for (auto _ : state) {
    if (frame == frames.size()) {
      frame = 0;
      (*tracker)->reset(0);
    }
    if (frame % static_cast<std::size_t>(interval + 1) == 0) {
      (*tracker)->update(0, frames[frame], out);
    } else {
      (*tracker)->predict(0, out);
    }
    benchmark::DoNotOptimize(out.data());
    ++frame;
  }
  // Seconds per object per frame (shown in us by --benchmark_counters_tabular or in the JSON).
  state.counters["per_object"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kObjects,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

int print_metrics() {
  // The quality test's scenes (tests/track/quality_test.cpp): four 15-second scenes.
  SceneParams scene;
  scene.frames = 450;
  constexpr std::array<int, 4> kIntervals = {0, 1, 2, 4};
  Result<std::vector<QualityRow>> rows = quality_report(scene, DetectionNoise{}, kIntervals, 4);
  if (!rows.is_ok()) {
    std::fprintf(stderr, "track_bench: %s\n", rows.status().to_string().c_str());
    return 1;
  }
  std::printf("%s", format_quality_table(*rows).c_str());
  return 0;
}

}  // namespace

BENCHMARK_CAPTURE(BM_Track, iou, TrackerKind::kIou)->Arg(0)->Arg(2);
BENCHMARK_CAPTURE(BM_Track, sort, TrackerKind::kSort)->Arg(0)->Arg(2);
BENCHMARK_CAPTURE(BM_Track, bytetrack, TrackerKind::kByteTrack)->Arg(0)->Arg(2);

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--metrics") == 0) return print_metrics();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
