#include "pipeline/stream_mux.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace fovea::pipeline {
namespace {

// Sources are named "A", "B", ...; a frame prints as its source's name and index ("B1").
std::vector<std::string> names(std::size_t count) {
  std::vector<std::string> result;
  for (std::size_t i = 0; i < count; ++i) result.emplace_back(1, static_cast<char>('A' + i));
  return result;
}

std::string describe(const Batch<int>& batch) {
  std::string text;
  for (const MuxFrame<int>& frame : batch.frames) {
    text +=
        fmt::format("{}{}{}", text.empty() ? "" : " ", static_cast<char>('A' + frame.source), frame.index);
  }
  return text;
}

std::vector<std::string> drain(StreamMux<int>& mux) {
  std::vector<std::string> batches;
  const std::uint64_t first_number = mux.batches();
  while (std::optional<Batch<int>> batch = mux.next_batch()) {
    EXPECT_EQ(batch->number, first_number + batches.size());
    batches.push_back(describe(*batch));
  }
  return batches;
}

// Pushes `count` frames (payload 100 * source + index, pts 40 ms apart) and, when `end`, the end.
void feed(StreamMux<int>& mux, std::size_t source, int count, bool end = true) {
  for (int i = 0; i < count; ++i) {
    ASSERT_TRUE(mux.push(source, static_cast<int>(100 * source) + i, std::int64_t{40'000} * i));
  }
  if (end) mux.end(source);
}

MuxOptions options(std::size_t batch_size) {
  return {.batch_size = batch_size, .source_queue_capacity = 16};
}

TEST(StreamMux, RoundRobinOverSourcesOfDifferentLengths) {
  StreamMux<int> mux(options(4), names(3));
  feed(mux, 0, 5);
  feed(mux, 1, 2);
  feed(mux, 2, 3);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 B0 C0 A1", "B1 C1 A2 C2", "A3 A4"}));
  const std::vector<SourceStats> stats = mux.source_stats();
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(stats[0].name, "A");
  EXPECT_EQ(stats[0].frames, 5u);
  EXPECT_EQ(stats[1].frames, 2u);
  EXPECT_EQ(stats[2].frames, 3u);
  EXPECT_TRUE(stats[1].ended);
  EXPECT_FALSE(stats[1].failed);
  EXPECT_EQ(mux.batches(), 3u);
}

// File mode waits for each source in turn, so the composition does not depend on thread timing.
TEST(StreamMux, FileModeCompositionIsIndependentOfTiming) {
  StreamMux<int> mux({.batch_size = 4, .source_queue_capacity = 1}, names(3));
  std::vector<std::thread> sources;
  for (std::size_t s = 0; s < 3; ++s) {
    sources.emplace_back([&mux, s] { feed(mux, s, s == 0 ? 5 : static_cast<int>(s) + 1); });
  }
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 B0 C0 A1", "B1 C1 A2 C2", "A3 A4"}));
  for (std::thread& source : sources) source.join();
}

TEST(StreamMux, FramesCarrySourceIndexPtsAndPayload) {
  StreamMux<int> mux(options(2), names(2));
  feed(mux, 0, 1);
  ASSERT_TRUE(mux.push(1, 7, std::nullopt));
  mux.end(1);
  const std::optional<Batch<int>> batch = mux.next_batch();
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->frames.size(), 2u);
  EXPECT_EQ(batch->frames[0].payload, 0);
  EXPECT_EQ(batch->frames[0].pts_us, 0);
  EXPECT_EQ(batch->frames[1].source, 1u);
  EXPECT_EQ(batch->frames[1].index, 0);
  EXPECT_EQ(batch->frames[1].payload, 7);
  EXPECT_EQ(batch->frames[1].pts_us, std::nullopt);
  EXPECT_FALSE(mux.next_batch().has_value());
}

TEST(StreamMux, PerSourceCapLimitsEachSourcesShare) {
  MuxOptions capped = options(4);
  capped.max_frames_per_source_per_batch = 1;
  StreamMux<int> mux(capped, names(3));
  feed(mux, 0, 5);
  feed(mux, 1, 2);
  feed(mux, 2, 3);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 B0 C0", "A1 B1 C1", "A2 C2", "A3", "A4"}));
}

TEST(StreamMux, CapOfTwoWithOneSource) {
  MuxOptions capped = options(4);
  capped.max_frames_per_source_per_batch = 2;
  StreamMux<int> mux(capped, names(1));
  feed(mux, 0, 5);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 A1", "A2 A3", "A4"}));
}

// B never delivers: with a push timeout the batch goes out partial instead of waiting for it.
TEST(StreamMux, PushTimeoutFlushesAPartialBatch) {
  MuxOptions timed = options(4);
  timed.push_timeout_us = 2'000;
  StreamMux<int> mux(timed, names(2));
  feed(mux, 0, 3, /*end=*/false);
  const std::optional<Batch<int>> first = mux.next_batch();
  ASSERT_TRUE(first.has_value());
  // File mode waits for B after A0 and B is silent: the timeout flushes A0 alone.
  EXPECT_EQ(describe(*first), "A0");
  mux.end(1);
  mux.end(0);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A1 A2"}));
}

// A starved source (its next frame waits for the frames already pushed to be released) cuts the
// batch being built instead of being waited for; an empty batch still waits for it, and once it is
// fed again batches are full.
TEST(StreamMux, AStarvedSourceCutsTheBatchBegun) {
  StreamMux<int> mux(options(4), names(1));
  feed(mux, 0, 2, /*end=*/false);
  std::thread starve([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    mux.set_starved(0, true);
  });
  const std::optional<Batch<int>> first = mux.next_batch();
  starve.join();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(describe(*first), "A0 A1");
  mux.set_starved(0, false);
  feed(mux, 0, 5);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A2 A3 A4 A5", "A6"}));
}

// Live mode does not wait for a silent source while another has frames.
TEST(StreamMux, LiveModeTakesWhatIsThere) {
  MuxOptions live = options(4);
  live.push_timeout_us = 2'000;
  live.live = true;
  StreamMux<int> mux(live, names(3));
  feed(mux, 0, 3, /*end=*/false);
  feed(mux, 2, 1, /*end=*/false);
  const std::optional<Batch<int>> first = mux.next_batch();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(describe(*first), "A0 C0 A1 A2");
  mux.end(0);
  mux.end(1);
  mux.end(2);
  EXPECT_FALSE(mux.next_batch().has_value());
}

TEST(StreamMux, LiveSourceDropsItsOldestFrameWhenFull) {
  StreamMux<int> mux({.batch_size = 8, .live = true, .source_queue_capacity = 2}, names(1));
  feed(mux, 0, 5);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A3 A4"}));
  EXPECT_EQ(mux.source_stats()[0].dropped, 3u);
  EXPECT_EQ(mux.source_stats()[0].frames, 2u);
}

// A file source's push blocks while its queue is full (back-pressure), it does not drop.
TEST(StreamMux, FileSourceBlocksWhenFull) {
  StreamMux<int> mux({.batch_size = 1, .source_queue_capacity = 2}, names(1));
  std::thread source([&mux] { feed(mux, 0, 20); });
  std::vector<std::string> batches = drain(mux);
  source.join();
  EXPECT_EQ(batches.size(), 20u);
  EXPECT_EQ(batches.back(), "A19");
  EXPECT_EQ(mux.source_stats()[0].dropped, 0u);
}

TEST(StreamMux, AFailingSourceIsRemovedWhileTheOthersComplete) {
  StreamMux<int> mux(options(3), names(3));
  feed(mux, 0, 4);
  feed(mux, 1, 1, /*end=*/false);
  mux.fail(1, make_error(StatusCode::kCorruptData, "b.mp4: invalid NAL unit"));
  feed(mux, 2, 3);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 B0 C0", "A1 C1 A2", "C2 A3"}));
  const std::vector<SourceStats> stats = mux.source_stats();
  EXPECT_TRUE(stats[1].failed);
  EXPECT_EQ(stats[1].error, "b.mp4: invalid NAL unit");
  EXPECT_EQ(stats[1].frames, 1u);
  EXPECT_FALSE(stats[0].failed);
  EXPECT_EQ(stats[0].frames, 4u);
  EXPECT_EQ(stats[2].frames, 3u);
}

// A source failing while the mux waits for it (file mode) does not hold up the others.
TEST(StreamMux, ASourceFailingWhileWaitedForIsSkipped) {
  StreamMux<int> mux(options(2), names(2));
  feed(mux, 0, 2);
  std::thread failing(
      [&mux] { mux.fail(1, make_error(StatusCode::kTimeout, "rtsp://cam1: no data for 5 s")); });
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 A1"}));
  failing.join();
  EXPECT_TRUE(mux.source_stats()[1].failed);
}

TEST(StreamMux, EndsAtOnceWhenEverySourceEndsEmpty) {
  StreamMux<int> mux(options(2), names(2));
  mux.end(0);
  mux.end(1);
  EXPECT_FALSE(mux.next_batch().has_value());
  EXPECT_EQ(mux.batches(), 0u);
}

TEST(StreamMux, RequestStopDrainsAndRefusesNewFrames) {
  StreamMux<int> mux(options(4), names(2));
  feed(mux, 0, 3, /*end=*/false);
  mux.request_stop();
  EXPECT_FALSE(mux.push(1, 0, std::nullopt));
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0 A1 A2"}));
}

// A source blocked on its full queue is released by the stop (or, if it gets there after the
// stop, refused at once: the result is the same either way).
TEST(StreamMux, RequestStopReleasesABlockedSource) {
  StreamMux<int> mux({.batch_size = 1, .source_queue_capacity = 1}, names(1));
  ASSERT_TRUE(mux.push(0, 0, std::nullopt));
  bool second_push = true;
  std::thread source([&] { second_push = mux.push(0, 1, std::nullopt); });
  mux.request_stop();
  source.join();
  EXPECT_FALSE(second_push);
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A0"}));
}

// Slots (a service): a source opened at run time takes a free slot; a slot is free again once its
// source ended and its frames were batched, and its next source counts from 0 under its own name.
TEST(StreamMux, OpenSourceReusesADrainedSlotAndRefusesWhenFull) {
  StreamMux<int> mux(
      {.batch_size = 2, .push_timeout_us = 1'000, .live = true, .source_queue_capacity = 16, .slots = 2},
      names(1));
  EXPECT_EQ(mux.open_source("B"), std::optional<std::size_t>(1));
  EXPECT_EQ(mux.open_source("C"), std::nullopt) << "both slots are taken";
  feed(mux, 0, 1);
  ASSERT_TRUE(mux.push(1, 100, std::nullopt));
  EXPECT_EQ(mux.open_source("C"), std::nullopt) << "A ended, but its frame is not batched yet";
  EXPECT_EQ(describe(*mux.next_batch()), "A0 B0");
  EXPECT_EQ(mux.retired_stats(), std::nullopt) << "no slot reused yet";
  EXPECT_EQ(mux.open_source("C"), std::optional<std::size_t>(0));
  const std::optional<SourceStats> retired = mux.retired_stats();
  ASSERT_TRUE(retired.has_value()) << "A's figures stay in the run's totals";
  EXPECT_EQ(retired->name, "1 removed");
  EXPECT_EQ(retired->frames, 1u);
  EXPECT_EQ(mux.source_stats()[0].name, "C");
  EXPECT_EQ(mux.source_stats()[0].frames, 0u);
  EXPECT_FALSE(mux.source_stats()[0].ended);
  ASSERT_TRUE(mux.push(0, 7, std::nullopt));
  const std::optional<Batch<int>> batch = mux.next_batch();
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->frames.size(), 1u);
  EXPECT_EQ(batch->frames[0].source, 0u);
  EXPECT_EQ(batch->frames[0].index, 0) << "the slot's new source counts from 0";
  EXPECT_EQ(batch->frames[0].payload, 7);
  EXPECT_EQ(mux.open_source("D"), std::nullopt);
  mux.request_stop();
  mux.end(0);
  EXPECT_EQ(mux.open_source("D"), std::nullopt) << "a stopping mux takes no source";
}

// next_batch() on a thread, for at most `seconds`: a mux that should have answered by then and
// has not is stopped (so that the test ends) and reported as the wait it was.
std::optional<Batch<int>> next_batch_within(StreamMux<int>& mux, double seconds, bool& answered) {
  std::future<std::optional<Batch<int>>> batch =
      std::async(std::launch::async, [&mux] { return mux.next_batch(); });
  answered = batch.wait_for(std::chrono::duration<double>(seconds)) == std::future_status::ready;
  if (!answered) mux.request_stop();
  return batch.get();
}

// keep_open (a service): with no source open the mux waits for one, rather than end the run; only
// the stop ends it.
TEST(StreamMux, KeepOpenWaitsWithoutSourcesAndEndsOnlyAtTheStop) {
  StreamMux<int> mux({.batch_size = 2,
                      .push_timeout_us = 1'000,
                      .live = true,
                      .source_queue_capacity = 16,
                      .keep_open = true},
                     names(1));
  feed(mux, 0, 1);
  bool answered = false;
  std::optional<Batch<int>> batch = next_batch_within(mux, 5.0, answered);
  ASSERT_TRUE(answered && batch.has_value());
  EXPECT_EQ(describe(*batch), "A0");

  std::future<std::optional<Batch<int>>> waiting =
      std::async(std::launch::async, [&mux] { return mux.next_batch(); });
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "the mux ended with no source open";
  ASSERT_EQ(mux.open_source("B"), std::optional<std::size_t>(0));
  feed(mux, 0, 1);
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  batch = waiting.get();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->frames.size(), 1u);

  waiting = std::async(std::launch::async, [&mux] { return mux.next_batch(); });
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  mux.request_stop();
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(5)), std::future_status::ready)
      << "the stop did not end it";
  EXPECT_FALSE(waiting.get().has_value());
}

// Auto push timeout (live): one frame period of the fastest open source, following the rates the
// sources report and the sources that close; a partial batch waits that long for the rest.
TEST(StreamMux, AutoPushTimeoutIsOneFramePeriodOfTheFastestOpenSource) {
  StreamMux<int> mux({.batch_size = 4, .live = true, .source_queue_capacity = 16, .auto_push_timeout = true},
                     names(2));
  EXPECT_EQ(mux.push_timeout_us(), 33'333) << "30 fps until a source says its rate";
  mux.set_frame_rate(0, 10.0);
  EXPECT_EQ(mux.push_timeout_us(), 100'000);
  mux.set_frame_rate(1, 25.0);
  EXPECT_EQ(mux.push_timeout_us(), 40'000);

  // How long a batch with one frame waits for the rest (the source stays silent).
  const auto partial_batch_wait_s = [&mux] {
    EXPECT_TRUE(mux.push(0, 0, std::nullopt));
    const auto start = std::chrono::steady_clock::now();
    const std::optional<Batch<int>> batch = mux.next_batch();
    EXPECT_TRUE(batch.has_value() && batch->frames.size() == 1u);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // Slack for a busy machine: a wait ends no sooner than its deadline, but may wake late.
  constexpr double kSlackS = 0.3;
  double waited = partial_batch_wait_s();
  EXPECT_GE(waited, 0.040);
  EXPECT_LT(waited, 0.040 + kSlackS);

  mux.end(1);  // the fast source leaves: the slow one's period rules
  EXPECT_EQ(mux.push_timeout_us(), 100'000);
  waited = partial_batch_wait_s();
  EXPECT_GE(waited, 0.100);
  EXPECT_LT(waited, 0.100 + kSlackS);
  mux.end(0);
  EXPECT_FALSE(mux.next_batch().has_value());
}

// Every open source at its per-batch cap ends the batch, also in a mux that keeps open: the batch
// goes out instead of waiting for a source that could add to it.
TEST(StreamMux, APerBatchCapWithKeepOpenStillPushesTheBatch) {
  StreamMux<int> mux({.batch_size = 4,
                      .max_frames_per_source_per_batch = 1,
                      .source_queue_capacity = 16,
                      .keep_open = true,
                      .slots = 2},
                     names(1));
  feed(mux, 0, 3, /*end=*/false);
  for (const char* expected : {"A0", "A1"}) {
    bool answered = false;
    const std::optional<Batch<int>> batch = next_batch_within(mux, 5.0, answered);
    EXPECT_TRUE(answered) << "the capped batch was held back";
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(describe(*batch), expected);
  }
  mux.request_stop();
  EXPECT_EQ(drain(mux), (std::vector<std::string>{"A2"}));
}

// keep_open without a push timeout: when the last open source ends mid-batch, the batch goes out
// with what it has rather than wait for a source that may never come.
TEST(StreamMux, KeepOpenPushesAPartialBatchWhenTheLastSourceEnds) {
  StreamMux<int> mux({.batch_size = 4, .source_queue_capacity = 16, .keep_open = true}, names(1));
  feed(mux, 0, 2);
  bool answered = false;
  const std::optional<Batch<int>> batch = next_batch_within(mux, 5.0, answered);
  EXPECT_TRUE(answered) << "the last frames waited for another source";
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(describe(*batch), "A0 A1");
}

TEST(StreamMux, ValidateNamesTheOption) {
  EXPECT_TRUE(validate(MuxOptions{}).is_ok());
  EXPECT_NE(validate({.batch_size = 0}).message().find("batch_size"), std::string::npos);
  EXPECT_NE(validate({.push_timeout_us = -2}).message().find("push_timeout_us"), std::string::npos);
  EXPECT_NE(
      validate({.max_frames_per_source_per_batch = 0}).message().find("max_frames_per_source_per_batch"),
      std::string::npos);
  EXPECT_NE(validate({.source_queue_capacity = 0}).message().find("source_queue_capacity"),
            std::string::npos);
}

}  // namespace
}  // namespace fovea::pipeline
