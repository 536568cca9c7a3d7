// The file-mode mux's own cost with many sources: SOURCES source threads (each spinning a little,
// for a decoder's work per frame) push frames through StreamMux<int> into batches of 32 taken by one
// consumer. Frames per second of wall time, and the process's context switches per frame: every
// wake-up of a thread that only goes back to sleep is overhead taken from the sources' threads.
//
//   mux_bench [google benchmark flags]
#include <sys/resource.h>

#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "pipeline/stream_mux.h"

namespace {

using fovea::pipeline::StreamMux;

constexpr int kFramesPerSource = 2000;
constexpr int kBatch = 32;

long context_switches() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_nvcsw + usage.ru_nivcsw;
}

void decode_work() {
  volatile double sink = 0;
  for (int k = 0; k < 2000; ++k) sink = sink + k;
}

void BM_FileMux(benchmark::State& state) {
  const int sources = static_cast<int>(state.range(0));
  std::vector<std::string> names;
  for (int s = 0; s < sources; ++s) names.push_back("source-" + std::to_string(s));
  long switches = 0;
  std::int64_t frames = 0;
  for (auto _ : state) {
    StreamMux<int> mux({.batch_size = kBatch}, names);
    const long before = context_switches();
    std::vector<std::thread> threads;
    for (int s = 0; s < sources; ++s) {
      threads.emplace_back([&mux, s] {
        for (int f = 0; f < kFramesPerSource; ++f) {
          decode_work();
          if (!mux.push(static_cast<std::size_t>(s), f, std::nullopt)) return;
        }
        mux.end(static_cast<std::size_t>(s));
      });
    }
    while (auto batch = mux.next_batch()) frames += static_cast<std::int64_t>(batch->frames.size());
    for (std::thread& thread : threads) thread.join();
    switches += context_switches() - before;
  }
  state.SetItemsProcessed(frames);
  state.counters["switches_per_frame"] = static_cast<double>(switches) / static_cast<double>(frames);
}
BENCHMARK(BM_FileMux)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
