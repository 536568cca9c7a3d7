// The engine's parts together, as the pipeline will wire them: source threads feed the mux, a
// SourceStage takes batches from it, a transform and a sink follow.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "pipeline/stage.h"
#include "pipeline/stream_mux.h"

namespace fovea::pipeline {
namespace {

using IntBatch = Batch<int>;

struct Engine {
  explicit Engine(std::size_t sources)
      : mux({.batch_size = 4, .source_queue_capacity = 2}, make_names(sources)) {}

  static std::vector<std::string> make_names(std::size_t count) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < count; ++i) names.push_back("cam" + std::to_string(i));
    return names;
  }

  // Frames per source as the sink saw them; the sink asks for a stop after `stop_after` batches.
  void run(std::optional<std::size_t> stop_after) {
    SourceStage<IntBatch> mux_stage(
        "mux", batches, [this]() -> Result<std::optional<IntBatch>> { return mux.next_batch(); },
        [this] { mux.request_stop(); });
    TransformStage<IntBatch, IntBatch> identity(
        "infer", batches, inferred, [](IntBatch&& batch) -> Result<IntBatch> { return std::move(batch); });
    SinkStage<IntBatch> sink("sink", inferred, [&](IntBatch&& batch) {
      for (const MuxFrame<int>& frame : batch.frames) ++frames_seen[frame.source];
      if (stop_after && ++batches_seen == *stop_after) mux.request_stop();
      return Status::ok();
    });
    sink.start();
    identity.start();
    mux_stage.start();
    mux_stage.join();
    identity.join();
    sink.join();
    EXPECT_TRUE(mux_stage.status().is_ok());
    EXPECT_TRUE(identity.status().is_ok());
    EXPECT_TRUE(sink.status().is_ok());
  }

  StreamMux<int> mux;
  BoundedQueue<IntBatch> batches{2};
  BoundedQueue<IntBatch> inferred{2};
  std::map<std::size_t, int> frames_seen;
  std::size_t batches_seen = 0;
};

// Source 1 fails after 3 frames; the others deliver all of theirs and the run completes.
TEST(Engine, AFailingSourceAmongGoodOnes) {
  Engine engine(3);
  std::vector<std::thread> sources;
  for (std::size_t s = 0; s < 3; ++s) {
    sources.emplace_back([&engine, s] {
      for (int i = 0; i < (s == 1 ? 3 : 25); ++i) {
        if (!engine.mux.push(s, i, std::nullopt)) return;
      }
      if (s == 1) {
        engine.mux.fail(s, make_error(StatusCode::kCorruptData, "cam1.mp4: invalid data at byte 4096"));
      } else {
        engine.mux.end(s);
      }
    });
  }
  engine.run(std::nullopt);
  for (std::thread& source : sources) source.join();

  EXPECT_EQ(engine.frames_seen, (std::map<std::size_t, int>{{0, 25}, {1, 3}, {2, 25}}));
  const std::vector<SourceStats> stats = engine.mux.source_stats();
  EXPECT_FALSE(stats[0].failed);
  EXPECT_TRUE(stats[1].failed);
  EXPECT_EQ(stats[1].error, "cam1.mp4: invalid data at byte 4096");
  EXPECT_EQ(PipelineStats{.sources = stats}.failed_sources(), 1u);
}

// Ctrl-C with endless sources: every source is told to stop, what the mux holds is delivered and
// every thread ends. Triggered by a count, not a time.
TEST(Engine, StopDrainsAndEndsEveryThread) {
  Engine engine(2);
  std::atomic<int> pushed{0};
  std::vector<std::thread> sources;
  for (std::size_t s = 0; s < 2; ++s) {
    sources.emplace_back([&engine, &pushed, s] {
      for (int i = 0; engine.mux.push(s, i, std::nullopt); ++i) pushed.fetch_add(1);
    });
  }
  engine.run(/*stop_after=*/5);
  for (std::thread& source : sources) source.join();

  int seen = 0;
  for (const auto& [source, frames] : engine.frames_seen) seen += frames;
  // Everything pushed reached the sink: the stop drained the mux and the queues.
  EXPECT_EQ(seen, pushed.load());
  EXPECT_GE(engine.batches_seen, 5u);
}

}  // namespace
}  // namespace fovea::pipeline
