#include "trace/analysis.h"

#include <gtest/gtest.h>

#include <cmath>

#include "trace/synthetic.h"

namespace fovea::trace::testing {
namespace {

// The name is a plain pointer: a temporary std::string argument would make GCC 13 warn that the
// returned reference may dangle.
const GpuProjRow& proj_row(const Tables& t, const char* name) {
  for (const GpuProjRow& row : t.gpu_proj) {
    if (row.range == name) return row;
  }
  ADD_FAILURE() << "no nvtx_gpu_proj_sum row for " << name;
  static const GpuProjRow kNone;
  return kNone;
}

TEST(TraceAnalysis, ProjectionRunsFromFirstOpStartToLastOpEnd) {
  TraceData d;
  d.ranges = {range("inference", 100, 1000)};
  d.ops = {kernel("a", 200, 300, 400), kernel("b", 500, 600, 1500),
           kernel("late", 1100, 1200, 1300),     // launched after the range
           kernel("other", 300, 310, 2000, 2)};  // launched on another thread
  const auto p = project_ranges(d);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].gpu_ops, 2);
  EXPECT_EQ(p[0].proj_start_ns, 300);
  EXPECT_EQ(p[0].proj_end_ns, 1500);  // the GPU may finish long after the range ends on the CPU
}

TEST(TraceAnalysis, CallThatOutlivesTheRangeIsNotInIt) {
  TraceData d;
  d.ranges = {range("r", 0, 205)};
  d.ops = {kernel("k", 200, 300, 400)};  // the call ends at 210
  EXPECT_EQ(project_ranges(d)[0].gpu_ops, 0);
  d.ranges[0].end_ns = 210;  // both ends inclusive
  EXPECT_EQ(project_ranges(d)[0].gpu_ops, 1);
}

TEST(TraceAnalysis, RangeWithoutOpsHasNoProjectionAndNoProjRow) {
  TraceData d;
  d.ranges = {range("cpu_only", 0, 100), range("gpu", 200, 300)};
  d.ops = {kernel("k", 250, 260, 270)};
  const auto p = project_ranges(d);
  EXPECT_FALSE(p[0].proj_start_ns.has_value());
  const Tables t = analyze(d);
  ASSERT_EQ(t.gpu_proj.size(), 1u);
  EXPECT_EQ(t.gpu_proj[0].range, "gpu");
  EXPECT_EQ(t.nvtx.size(), 2u);  // nvtx_sum lists every range
}

// pipeline [0, 10000] L0
//   inference [100, 2000] L1: kernels k1 (launch 150: 200-900), k2 (launch 160: 900-1700)
//   post [3000, 5000] L1: kernel k3 (launch 3050: 3100-3600)
//     draw [3100, 3200] L2: kernel k4 (launch 3150: 3600-3700)
TraceData nested() {
  TraceData d;
  d.ranges = {range("pipeline", 0, 10000, 0), range("inference", 100, 2000, 1), range("post", 3000, 5000, 1),
              range("draw", 3100, 3200, 2)};
  d.ops = {kernel("k1", 150, 200, 900), kernel("k2", 160, 900, 1700), kernel("k3", 3050, 3100, 3600),
           kernel("k4", 3150, 3600, 3700)};
  return d;
}

TEST(TraceAnalysis, ParentsCountChildOpsWithoutSubtractingThem) {
  const TraceData d = nested();
  const auto p = project_ranges(d);
  EXPECT_EQ(p[0].gpu_ops, 4);
  EXPECT_EQ(p[0].proj_start_ns, 200);
  EXPECT_EQ(p[0].proj_end_ns, 3700);
  EXPECT_EQ(p[2].gpu_ops, 2);  // post holds draw's kernel too
  EXPECT_EQ(p[2].proj_end_ns, 3700);
  EXPECT_EQ(p[3].gpu_ops, 1);
}

TEST(TraceAnalysis, DirectChildrenOnly) {
  const auto p = project_ranges(nested());
  EXPECT_EQ(p[0].children, 2);  // inference, post; not draw
  EXPECT_EQ(p[1].children, 0);
  EXPECT_EQ(p[2].children, 1);
  EXPECT_EQ(p[3].children, 0);
}

TEST(TraceAnalysis, ChildrenAreCountedPerThread) {
  TraceData d;
  d.ranges = {range("outer", 0, 100, 0, 1), range("elsewhere", 10, 20, 1, 2), range("inner", 30, 40, 1, 1)};
  const auto p = project_ranges(d);
  EXPECT_EQ(p[0].children, 1);
}

TEST(TraceAnalysis, GpuProjRowsFollowNsightDefinitions) {
  const Tables t = analyze(nested());
  ASSERT_EQ(t.gpu_proj.size(), 4u);
  EXPECT_EQ(t.gpu_proj[0].range, "pipeline");  // largest Total Proj Time first
  const GpuProjRow& pipeline = proj_row(t, "pipeline");
  EXPECT_EQ(pipeline.proj.total, 3500);
  EXPECT_EQ(pipeline.total_range_ns, 10000);
  EXPECT_EQ(pipeline.total_gpu_ops, 4);
  EXPECT_DOUBLE_EQ(pipeline.avg_num_child, 2.0);
  EXPECT_DOUBLE_EQ(pipeline.avg_range_level, 0.0);
  const GpuProjRow& inference = proj_row(t, "inference");
  EXPECT_EQ(inference.proj.total, 1500);
  EXPECT_EQ(inference.proj.instances, 1);
  EXPECT_DOUBLE_EQ(inference.avg_range_level, 1.0);
  EXPECT_DOUBLE_EQ(inference.avg_gpu_ops, 2.0);
  const GpuProjRow& draw = proj_row(t, "draw");
  EXPECT_EQ(draw.proj.total, 100);
  EXPECT_DOUBLE_EQ(draw.avg_range_level, 2.0);
}

TEST(TraceAnalysis, StatisticsOverInstances) {
  // Four instances of "stage" with projections 100, 200, 300, 400 ns and 1, 1, 1, 2 GPU ops.
  TraceData d;
  for (int i = 0; i < 4; ++i) {
    const std::int64_t base = 10000 * i;
    d.ranges.push_back(range("stage", base, base + 1000, 0, 1, i));
    d.ops.push_back(kernel("k", base + 10, base + 100, base + 100 + 100 * (i + 1)));
  }
  d.ops.push_back(kernel("k", 30000 + 20, 30000 + 150, 30000 + 160));  // inside the last projection
  const Tables t = analyze(d);
  const GpuProjRow& row = t.gpu_proj.at(0);
  EXPECT_EQ(row.proj.instances, 4);
  EXPECT_EQ(row.proj.total, 1000);
  EXPECT_DOUBLE_EQ(row.proj.avg, 250.0);
  EXPECT_DOUBLE_EQ(row.proj.med, 250.0);  // even count: mean of the middle two
  EXPECT_EQ(row.proj.min, 100);
  EXPECT_EQ(row.proj.max, 400);
  EXPECT_NEAR(row.proj.stddev, std::sqrt(50000.0 / 3.0), 1e-9);  // sample standard deviation
  EXPECT_EQ(row.total_gpu_ops, 5);
  EXPECT_DOUBLE_EQ(row.avg_gpu_ops, 1.25);
  EXPECT_EQ(row.total_range_ns, 4000);
}

TEST(TraceAnalysis, StatsOfOneAndOfOddCounts) {
  const Stats one = compute_stats({42});
  EXPECT_DOUBLE_EQ(one.stddev, 0.0);
  EXPECT_DOUBLE_EQ(one.med, 42.0);
  const Stats odd = compute_stats({5, 1, 3});
  EXPECT_DOUBLE_EQ(odd.med, 3.0);
  EXPECT_DOUBLE_EQ(odd.stddev, 2.0);
  EXPECT_EQ(compute_stats({}).instances, 0);
}

TEST(TraceAnalysis, NvtxSumTimePercentAndStyles) {
  TraceData d;
  d.ranges = {range("a", 0, 300), range("a", 400, 500), range("b", 600, 700)};
  RangeRecord batch = range("a", 0, 1000);
  batch.style = RangeStyle::kStartEnd;
  d.ranges.push_back(batch);
  const Tables t = analyze(d);
  ASSERT_EQ(t.nvtx.size(), 3u);
  EXPECT_EQ(t.nvtx[0].range, "a");
  EXPECT_EQ(t.nvtx[0].style, RangeStyle::kStartEnd);
  EXPECT_EQ(t.nvtx[1].time.total, 400);
  EXPECT_EQ(t.nvtx[1].time.instances, 2);
  EXPECT_NEAR(t.nvtx[0].time_percent + t.nvtx[1].time_percent + t.nvtx[2].time_percent, 100.0, 1e-9);
  EXPECT_DOUBLE_EQ(t.nvtx[2].time_percent, 100.0 * 100 / 1500);
}

TEST(TraceAnalysis, OtherDomainsAreNamedWithTheirDomain) {
  TraceData d;
  d.ranges = {range("x", 0, 1)};
  d.ranges[0].domain = "user";
  EXPECT_EQ(analyze(d).nvtx[0].range, "user:x");
}

TEST(TraceAnalysis, KernelSumCountsKernelsOnly) {
  TraceData d;
  d.ops = {kernel("spin", 0, 10, 110), kernel("spin", 0, 200, 500), kernel("blur", 0, 600, 700)};
  GpuOpRecord copy = kernel("[CUDA memcpy Host-to-Device]", 0, 800, 5000);
  copy.kind = GpuOpKind::kMemcpy;
  d.ops.push_back(copy);
  const Tables t = analyze(d);
  ASSERT_EQ(t.kernels.size(), 2u);
  EXPECT_EQ(t.kernels[0].name, "spin");
  EXPECT_EQ(t.kernels[0].time.total, 400);
  EXPECT_DOUBLE_EQ(t.kernels[0].time_percent, 80.0);
  EXPECT_DOUBLE_EQ(t.kernels[1].time_percent, 20.0);
}

TEST(TraceAnalysis, BlockingCallSumPerFunctionWithItsThreads) {
  TraceData d;
  d.blocking_calls = {{.name = "cudaStreamSynchronize", .thread = 7, .start_ns = 0, .end_ns = 3'000'000},
                      {.name = "cudaFree", .thread = 7, .start_ns = 4'000'000, .end_ns = 4'500'000},
                      {.name = "cudaStreamSynchronize", .thread = 9, .start_ns = 100, .end_ns = 1'000'100},
                      {.name = "cudaFree", .thread = 7, .start_ns = 5'000'000, .end_ns = 5'500'000}};
  const Tables t = analyze(d);
  ASSERT_EQ(t.blocking_calls.size(), 2u);
  EXPECT_EQ(t.blocking_calls[0].name, "cudaStreamSynchronize");
  EXPECT_EQ(t.blocking_calls[0].time.total, 4'000'000);
  EXPECT_EQ(t.blocking_calls[0].time.instances, 2);
  EXPECT_EQ(t.blocking_calls[0].threads, 2);
  EXPECT_DOUBLE_EQ(t.blocking_calls[0].time_percent, 80.0);
  EXPECT_EQ(t.blocking_calls[1].name, "cudaFree");
  EXPECT_EQ(t.blocking_calls[1].threads, 1);
  EXPECT_EQ(t.blocking_calls[1].time.max, 500'000);
  // GPU ops' launching calls are not blocking calls: a trace without any has an empty table.
  EXPECT_TRUE(analyze(TraceData{}).blocking_calls.empty());
}

// Thread 1: image read [0, 10000] L0, and inside it jpeg decode [2000, 8000] L1. Thread 2: a range
// of its own name at the same times, which holds none of thread 1's calls.
TEST(TraceAnalysis, ApiRangeSumPutsEachCallInItsThreadsInnermostRange) {
  TraceData d;
  d.ranges = {range("image read", 0, 10'000), range("jpeg decode", 2'000, 8'000, 1),
              range("inference", 0, 10'000, 0, 2)};
  GpuOpRecord upload = kernel("[CUDA memcpy Host-to-Device]", 3'000, 3'500, 3'600);
  upload.kind = GpuOpKind::kMemcpy;
  upload.api_name = "cudaMemcpyAsync";
  upload.api_end_ns = 3'200;
  GpuOpRecord graph_a = kernel("a", 5'000, 5'100, 5'200);
  graph_a.api_name = "cudaGraphLaunch";
  GpuOpRecord graph_b = graph_a;  // the same launch: one call
  graph_b.name = "b";
  d.ops = {upload, graph_a, graph_b, kernel("k", 4'000, 4'100, 4'200, 2)};
  d.blocking_calls = {
      {.name = "cuMemFree", .thread = 1, .start_ns = 6'000, .end_ns = 7'000},
      {.name = "cudaEventSynchronize", .thread = 1, .start_ns = 9'000, .end_ns = 9'500},
      {.name = "cudaStreamSynchronize", .thread = 1, .start_ns = 11'000, .end_ns = 11'300},
      {.name = "cuMemFree", .thread = 1, .start_ns = 7'500, .end_ns = 8'500}};  // outlives jpeg decode
  const Tables t = analyze(d);
  const auto row = [&](std::string_view range, std::string_view name) -> const ApiRangeRow* {
    for (const ApiRangeRow& r : t.api_by_range) {
      if (r.range == range && r.name == name) return &r;
    }
    ADD_FAILURE() << "no cuda_api_range_sum row for " << range << " / " << name;
    return nullptr;
  };
  ASSERT_EQ(t.api_by_range.size(), 7u);
  const ApiRangeRow* free_in_decode = row("jpeg decode", "cuMemFree");
  ASSERT_NE(free_in_decode, nullptr);
  EXPECT_EQ(free_in_decode->time.total, 1'000);
  EXPECT_DOUBLE_EQ(free_in_decode->range_percent, 100.0 * 1'000 / 6'000);
  EXPECT_EQ(t.api_by_range[0].name, "cuMemFree");  // the largest total first
  ASSERT_NE(row("image read", "cuMemFree"), nullptr);
  EXPECT_EQ(row("image read", "cuMemFree")->time.total, 1'000);
  ASSERT_NE(row("jpeg decode", "cudaMemcpyAsync"), nullptr);
  EXPECT_EQ(row("jpeg decode", "cudaMemcpyAsync")->time.total, 200);
  ASSERT_NE(row("jpeg decode", "cudaGraphLaunch"), nullptr);
  EXPECT_EQ(row("jpeg decode", "cudaGraphLaunch")->time.instances, 1);  // two kernels, one call
  ASSERT_NE(row("image read", "cudaEventSynchronize"), nullptr);
  ASSERT_NE(row("inference", "cudaLaunchKernel"), nullptr);
  const ApiRangeRow* outside = row(kNoRange, "cudaStreamSynchronize");
  ASSERT_NE(outside, nullptr);
  EXPECT_EQ(outside->range_percent, 0.0);
}

TEST(TraceAnalysis, GapsWhereNoStreamOfTheDeviceIsBusy) {
  TraceData d;
  d.ops = {kernel("a", 0, 0, 1'000'000, 1, 1),          //
           kernel("b", 0, 500'000, 2'000'000, 1, 2),    // overlaps a on another stream: no gap
           kernel("c", 0, 2'400'000, 2'500'000, 1, 1),  // 400 us after: under the threshold
           kernel("d", 0, 3'100'000, 3'200'000, 1, 2),  // 600 us after: a gap
           kernel("e", 0, 0, 100, 1, 1, 1),             // device 1
           kernel("f", 0, 2'000'100, 2'000'200, 1, 1, 1)};
  const Tables t = analyze(d);
  ASSERT_EQ(t.gaps.size(), 2u);
  EXPECT_EQ(t.gaps[0].row, 1);
  EXPECT_EQ(t.gaps[0].device, 1);
  EXPECT_EQ(t.gaps[0].duration_ns, 2'000'000);
  EXPECT_EQ(t.gaps[1].row, 2);
  EXPECT_EQ(t.gaps[1].device, 0);
  EXPECT_EQ(t.gaps[1].start_ns, 2'500'000);
  EXPECT_EQ(t.gaps[1].end_ns, 3'100'000);
  EXPECT_EQ(analyze(d, 300'000).gaps.size(), 3u);
}

TEST(TraceAnalysis, StartEndRangesProjectFromTheirStartingThread) {
  TraceData d;
  RangeRecord batch = range("batch", 0, 1000, 0, 3);
  batch.style = RangeStyle::kStartEnd;
  d.ranges = {batch};
  d.ops = {kernel("k", 100, 200, 300, 3), kernel("k", 100, 400, 500, 4)};
  const Tables t = analyze(d);
  ASSERT_EQ(t.gpu_proj.size(), 1u);
  EXPECT_EQ(t.gpu_proj[0].style, RangeStyle::kStartEnd);
  EXPECT_EQ(t.gpu_proj[0].total_gpu_ops, 1);
}

}  // namespace
}  // namespace fovea::trace::testing
