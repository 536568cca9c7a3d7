// The tracer on a GPU: spin kernels of known duration inside known nested ranges. Skipped, by
// name, without a GPU.
#include <gtest/gtest.h>

#include "core/cuda_raii.h"
#include "trace/clock.h"
#include "trace/session.h"
#include "trace/spin_kernel.h"
#include "trace/tracer.h"

namespace fovea::trace::testing {
namespace {

#define FOVEA_REQUIRE_GPU()                                         \
  do {                                                              \
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

#define ASSERT_OK(expr)                        \
  do {                                         \
    const ::fovea::Status s_ = (expr);         \
    ASSERT_TRUE(s_.is_ok()) << s_.to_string(); \
  } while (0)

constexpr std::int64_t kUs = 1000;
// The bar: the projection agrees with CUDA-event timing of the same work within 5%.
constexpr double kAgreement = 0.05;
// A launch queued behind a running kernel starts within a few microseconds of its predecessor's
// end; a spin kernel may overshoot its time by one timer tick (1 us on Hopper's globaltimer).
constexpr std::int64_t kBackToBackSlackNs = 20 * kUs;

// The name is a plain pointer: a temporary std::string argument would make GCC 13 warn that the
// returned reference may dangle.
const GpuProjRow& proj_row(const Report& r, const char* name) {
  for (const GpuProjRow& row : r.tables.gpu_proj) {
    if (row.range == name) return row;
  }
  ADD_FAILURE() << "no nvtx_gpu_proj_sum row for " << name;
  static const GpuProjRow kNone;
  return kNone;
}

class TraceGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    FOVEA_REQUIRE_GPU();
    auto s = CudaStream::create();
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    stream_ = std::move(s).value();
    // Module load and first-launch costs stay out of the measured runs.
    ASSERT_OK(launch_spin(stream_.get(), kUs));
    ASSERT_OK(stream_.synchronize());
  }

  Session start(CaptureRequest capture) {
    auto session = Session::start({.capture = capture});
    EXPECT_TRUE(session.is_ok()) << session.status().to_string();
    return std::move(session).value();
  }

  // pipeline { inference { 3 x 300 us } , postprocess { 200 us } } on one stream.
  void nested_workload(bool name_stream) {
    const Stream s = name_stream ? stream_.get() : nullptr;
    FOVEA_TRACE_RANGE("pipeline", std::nullopt, s);
    {
      FOVEA_TRACE_RANGE("inference", 0, s);
      for (int i = 0; i < 3; ++i) ASSERT_OK(launch_spin(stream_.get(), 300 * kUs));
    }
    {
      FOVEA_TRACE_RANGE("postprocess", 0, s);
      ASSERT_OK(launch_spin(stream_.get(), 200 * kUs));
    }
    ASSERT_OK(stream_.synchronize());
  }

  CudaStream stream_;
};

TEST_F(TraceGpu, CuptiProjectsNestedSpinKernels) {
  Session session = start(CaptureRequest::kAuto);
  nested_workload(false);
  auto report = session.stop();
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  if (report->data.mode != CaptureMode::kCupti)
    GTEST_SKIP() << "CUPTI unavailable on this machine (see the log)";

  const GpuProjRow& inference = proj_row(*report, "inference");
  EXPECT_EQ(inference.total_gpu_ops, 3);
  EXPECT_DOUBLE_EQ(inference.avg_range_level, 1.0);
  EXPECT_GE(inference.proj.total, 900 * kUs);
  EXPECT_LE(inference.proj.total, 900 * kUs + 3 * kBackToBackSlackNs);
  const GpuProjRow& post = proj_row(*report, "postprocess");
  EXPECT_EQ(post.total_gpu_ops, 1);
  EXPECT_GE(post.proj.total, 200 * kUs);
  EXPECT_LE(post.proj.total, 200 * kUs + kBackToBackSlackNs);
  const GpuProjRow& pipeline = proj_row(*report, "pipeline");
  EXPECT_EQ(pipeline.total_gpu_ops, 4);
  EXPECT_DOUBLE_EQ(pipeline.avg_num_child, 2.0);
  EXPECT_DOUBLE_EQ(pipeline.avg_range_level, 0.0);
  EXPECT_GE(pipeline.proj.total, inference.proj.total + post.proj.total);

  ASSERT_EQ(report->tables.kernels.size(), 1u);
  EXPECT_NE(report->tables.kernels[0].name.find("spin_kernel"), std::string::npos)
      << report->tables.kernels[0].name;
  EXPECT_EQ(report->tables.kernels[0].time.instances, 4);
}

// The synchronization that waited for the 1.1 ms of kernels launched no GPU work: it is a blocking
// call on this thread, summed in cuda_api_blocking_sum; the launches are not.
TEST_F(TraceGpu, CuptiRecordsTheSynchronizationThatBlockedTheThread) {
  Session session = start(CaptureRequest::kAuto);
  nested_workload(false);
  auto report = session.stop();
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  if (report->data.mode != CaptureMode::kCupti)
    GTEST_SKIP() << "CUPTI unavailable on this machine (see the log)";
  const BlockingCall* sync = nullptr;
  for (const BlockingCall& call : report->data.blocking_calls) {
    EXPECT_EQ(call.name.find("LaunchKernel"), std::string::npos) << call.name;
    EXPECT_GE(call.end_ns - call.start_ns, kBlockingCallNs) << call.name;
    if (call.name.find("StreamSynchronize") != std::string::npos && call.thread == current_thread_id())
      sync = &call;
  }
  ASSERT_NE(sync, nullptr) << report->data.blocking_calls.size() << " blocking calls, none a stream sync";
  EXPECT_GE(sync->end_ns - sync->start_ns, 800 * kUs);
  EXPECT_LE(sync->end_ns, report->data.duration_ns);
  ASSERT_FALSE(report->tables.blocking_calls.empty());
}

// CUPTI's times are on the tracer's clock: a kernel never starts before the call that launched it,
// and the call lies inside the range it was made in.
TEST_F(TraceGpu, CuptiTimesShareTheTracerClock) {
  Session session = start(CaptureRequest::kAuto);
  nested_workload(false);
  auto report = session.stop();
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  if (report->data.mode != CaptureMode::kCupti)
    GTEST_SKIP() << "CUPTI unavailable on this machine (see the log)";
  ASSERT_EQ(report->data.ops.size(), 4u);
  for (const GpuOpRecord& op : report->data.ops) {
    EXPECT_EQ(op.api_thread, current_thread_id()) << op.name;
    EXPECT_FALSE(op.api_name.empty());
    EXPECT_GE(op.start_ns, op.api_start_ns) << op.name << " launched by " << op.api_name;
    EXPECT_LE(op.end_ns, report->data.duration_ns);
  }
}

// The validation: the projected inference time and CUDA events around the same work.
TEST_F(TraceGpu, CuptiProjectionAgreesWithCudaEvents) {
  auto begin = CudaEvent::create(true);
  auto end = CudaEvent::create(true);
  ASSERT_TRUE(begin.is_ok() && end.is_ok());
  // The events must time the GPU work only, not the host's launches: the kernel is loaded before
  // the session (CUDA loads modules lazily, on the first launch), and a gate kernel keeps the
  // stream busy until every launch below is queued, so the begin event fires just before the work.
  ASSERT_OK(launch_spin(stream_.get(), 10 * kUs));
  ASSERT_OK(stream_.synchronize());
  Session session = start(CaptureRequest::kAuto);
  ASSERT_OK(launch_spin(stream_.get(), 5000 * kUs));
  {
    FOVEA_TRACE_RANGE("inference");
    ASSERT_OK(begin->record(stream_.get()));
    for (int i = 0; i < 5; ++i) ASSERT_OK(launch_spin(stream_.get(), 200 * kUs));
    ASSERT_OK(end->record(stream_.get()));
  }
  auto report = session.stop();
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  if (report->data.mode != CaptureMode::kCupti)
    GTEST_SKIP() << "CUPTI unavailable on this machine (see the log)";
  auto ms = end->elapsed_ms_since(*begin);
  ASSERT_TRUE(ms.is_ok());
  const double events_ns = static_cast<double>(*ms) * 1e6;
  const double projected_ns = static_cast<double>(proj_row(*report, "inference").proj.total);
  EXPECT_NEAR(projected_ns, events_ns, kAgreement * events_ns) << "projected " << projected_ns << " ns";
}

TEST_F(TraceGpu, CudaEventsFallbackProjectsRangesThatNameAStream) {
  Session session = start(CaptureRequest::kCudaEvents);
  nested_workload(true);
  {
    FOVEA_TRACE_RANGE("no_stream");  // no stream named: nothing to time in this mode
    ASSERT_OK(launch_spin(stream_.get(), 100 * kUs));
  }
  auto report = session.stop();
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  ASSERT_EQ(report->data.mode, CaptureMode::kCudaEvents);
  EXPECT_TRUE(report->tables.kernels.empty());
  ASSERT_EQ(report->data.ops.size(), 3u);  // one span per range that named the stream
  const GpuProjRow& inference = proj_row(*report, "inference");
  EXPECT_NEAR(static_cast<double>(inference.proj.total), 900.0 * kUs, kAgreement * 900 * kUs);
  const GpuProjRow& post = proj_row(*report, "postprocess");
  EXPECT_NEAR(static_cast<double>(post.proj.total), 200.0 * kUs, kAgreement * 200 * kUs);
  const GpuProjRow& pipeline = proj_row(*report, "pipeline");
  EXPECT_EQ(pipeline.total_gpu_ops, 3);
  EXPECT_DOUBLE_EQ(pipeline.avg_num_child, 2.0);
  for (const GpuProjRow& row : report->tables.gpu_proj) EXPECT_NE(row.range, "no_stream");
  // The anchor puts the spans on the tracer clock to within microseconds: the GPU work starts
  // after its range began on the CPU.
  for (const GpuOpRecord& op : report->data.ops)
    EXPECT_GE(op.start_ns + 50 * kUs, op.api_start_ns) << op.name;
}

TEST_F(TraceGpu, SpinKernelsLastWhatTheyAskFor) {
  Session session = start(CaptureRequest::kAuto);
  for (int i = 0; i < 4; ++i) ASSERT_OK(launch_spin(stream_.get(), 250 * kUs));
  auto report = session.stop();
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  if (report->data.mode != CaptureMode::kCupti)
    GTEST_SKIP() << "CUPTI unavailable on this machine (see the log)";
  ASSERT_EQ(report->tables.kernels.size(), 1u);
  const Stats& t = report->tables.kernels[0].time;
  EXPECT_EQ(t.instances, 4);
  EXPECT_GE(t.min, 250 * kUs);
  EXPECT_LE(t.max, 250 * kUs + kBackToBackSlackNs);
}

}  // namespace
}  // namespace fovea::trace::testing
