#include "trace/tracer.h"

#include <gtest/gtest.h>

#include <thread>

#include "trace/clock.h"
#include "trace/report_io.h"
#include "trace/session.h"
#include "trace/temp_dir.h"

namespace fovea::trace::testing {
namespace {

Session start_cpu_session(std::filesystem::path dir = {}) {
  auto session =
      Session::start({.dir = std::move(dir), .label = "test", .capture = CaptureRequest::kCpuOnly});
  EXPECT_TRUE(session.is_ok()) << session.status().to_string();
  return std::move(session).value();
}

const RangeRecord* find(const TraceData& d, const std::string& name) {
  for (const RangeRecord& r : d.ranges) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(Tracer, OffUnlessASessionRecords) {
  EXPECT_FALSE(enabled());
  { FOVEA_TRACE_RANGE("before"); }
  Session session = start_cpu_session();
  EXPECT_TRUE(enabled());
  auto report = session.stop();
  ASSERT_TRUE(report.is_ok());
  EXPECT_FALSE(enabled());
  EXPECT_TRUE(report->data.ranges.empty());
  EXPECT_EQ(report->data.mode, CaptureMode::kCpuOnly);
}

TEST(Tracer, NestedRangesRecordLevelsBatchesAndThread) {
  Session session = start_cpu_session();
  {
    FOVEA_TRACE_RANGE("pipeline");
    for (int batch = 0; batch < 2; ++batch) {
      FOVEA_TRACE_RANGE("inference", batch);
      FOVEA_TRACE_RANGE("conv");
    }
  }
  auto report = session.stop();
  ASSERT_TRUE(report.is_ok());
  const TraceData& d = report->data;
  ASSERT_EQ(d.ranges.size(), 5u);
  const RangeRecord* pipeline = find(d, "pipeline");
  ASSERT_NE(pipeline, nullptr);
  EXPECT_EQ(pipeline->level, 0);
  EXPECT_EQ(pipeline->domain, "fovea");
  EXPECT_EQ(pipeline->thread, current_thread_id());
  EXPECT_FALSE(pipeline->batch.has_value());
  for (const RangeRecord& r : d.ranges) {
    EXPECT_GE(r.start_ns, 0);
    EXPECT_LE(r.start_ns, r.end_ns);
    EXPECT_LE(r.end_ns, d.duration_ns);
    if (r.name == "inference") {
      EXPECT_EQ(r.level, 1);
    }
    if (r.name == "conv") {
      EXPECT_EQ(r.level, 2);
    }
    if (r.name != "pipeline") {
      EXPECT_GE(r.start_ns, pipeline->start_ns);
      EXPECT_LE(r.end_ns, pipeline->end_ns);
    }
  }
  EXPECT_EQ(d.ranges[0].name, "conv");  // recorded as they end
  EXPECT_EQ(d.ranges[1].batch, 0);
  EXPECT_EQ(d.ranges[3].batch, 1);
  for (const NvtxRow& row : report->tables.nvtx)
    EXPECT_EQ(row.time.instances, row.range == "pipeline" ? 1 : 2);
}

TEST(Tracer, ThreadsGetTheirOwnIdsAndLevels) {
  Session session = start_cpu_session();
  std::uint64_t worker_id = 0;
  {
    FOVEA_TRACE_RANGE("main");
    std::thread worker([&] {
      worker_id = current_thread_id();
      FOVEA_TRACE_RANGE("decode");
    });
    worker.join();
  }
  auto report = session.stop();
  ASSERT_TRUE(report.is_ok());
  const RangeRecord* decode = find(report->data, "decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_EQ(decode->thread, worker_id);
  EXPECT_NE(decode->thread, current_thread_id());
  EXPECT_EQ(decode->level, 0);
}

TEST(Tracer, StartEndRangeMayEndOnAnotherThread) {
  Session session = start_cpu_session();
  StartEndRange batch("batch", 7);
  std::thread consumer([r = std::move(batch)]() mutable { r.end(); });
  consumer.join();
  auto report = session.stop();
  ASSERT_TRUE(report.is_ok());
  ASSERT_EQ(report->data.ranges.size(), 1u);
  const RangeRecord& r = report->data.ranges[0];
  EXPECT_EQ(r.style, RangeStyle::kStartEnd);
  EXPECT_EQ(r.thread, current_thread_id());  // the thread that started it
  EXPECT_EQ(r.batch, 7);
}

TEST(Tracer, RangesOpenAtStopAreLeftOut) {
  Session session = start_cpu_session();
  std::optional<Result<Report>> report;
  {
    FOVEA_TRACE_RANGE("open");
    { FOVEA_TRACE_RANGE("closed"); }
    report.emplace(session.stop());
  }
  ASSERT_TRUE(report->is_ok());
  ASSERT_EQ((*report)->data.ranges.size(), 1u);
  EXPECT_EQ((*report)->data.ranges[0].name, "closed");
}

TEST(Tracer, OneSessionAtATime) {
  Session session = start_cpu_session();
  auto other = Session::start({});
  ASSERT_FALSE(other.is_ok());
  EXPECT_NE(other.status().message().find("already recording"), std::string::npos);
  EXPECT_TRUE(session.stop().is_ok());
  EXPECT_FALSE(session.stop().is_ok());
}

TEST(Tracer, SessionWritesItsFilesWhenItEnds) {
  TempDir dir;
  {
    auto session =
        start_session_if_requested({.dir = dir.path() / "run", .capture = CaptureRequest::kCpuOnly});
    ASSERT_TRUE(session.is_ok());
    ASSERT_TRUE(session->has_value());
    FOVEA_TRACE_RANGE("pipeline");
  }
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "run" / kTraceFile));
  auto report = read_report(dir.path() / "run");
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  EXPECT_EQ(report->data.mode, CaptureMode::kCpuOnly);
  EXPECT_EQ(report->data.ranges.size(), 1u);
  auto none = start_session_if_requested({});
  ASSERT_TRUE(none.is_ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_FALSE(enabled());
}

TEST(Tracer, UnwritableDirectoryFailsAtStart) {
  auto session = Session::start({.dir = "/proc/fovea-cannot-write-here"});
  ASSERT_FALSE(session.is_ok());
  EXPECT_NE(session.status().message().find("/proc/fovea-cannot-write-here"), std::string::npos);
  EXPECT_FALSE(enabled());
}

}  // namespace
}  // namespace fovea::trace::testing
