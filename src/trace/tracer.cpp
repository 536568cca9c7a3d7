#include "trace/tracer.h"

#include <mutex>
#include <string>
#include <utility>

#include "trace/clock.h"
#include "trace/recorder.h"

#if defined(FOVEA_HAVE_CUDA)
#include <nvtx3/nvToolsExt.h>
#endif

namespace fovea::trace {
namespace {

constexpr const char* kDomain = "fovea";

struct State {
  std::mutex mutex;
  std::uint64_t last_session = 0;
  detail::Collected collected;
};

State& state() {
  static State s;
  return s;
}

// The recording session's id, 0 when none; read at every range begin without the lock.
std::atomic<std::uint64_t> g_session{0};

// Push/pop depth among the ranges this thread records.
thread_local int t_depth = 0;

void add_range(std::uint64_t session, RangeRecord record, std::optional<std::uint64_t> gpu_token,
               Stream stream) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (g_session.load(std::memory_order_relaxed) != session) return;  // a later session's or none
  if (gpu_token && s.collected.capture) s.collected.capture->end_stream_range(*gpu_token, stream, record);
  s.collected.ranges.push_back(std::move(record));
}

#if defined(FOVEA_HAVE_CUDA)
nvtxDomainHandle_t domain() {
  static nvtxDomainHandle_t handle = nvtxDomainCreateA(kDomain);
  return handle;
}

nvtxEventAttributes_t attributes(const char* name, std::optional<std::int64_t> batch) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  if (batch) {
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = *batch;
  }
  return a;
}
#endif

}  // namespace

namespace detail {

#if defined(FOVEA_HAVE_CUDA)
void nvtx_push(const char* name, std::optional<std::int64_t> batch) {
  const nvtxEventAttributes_t a = attributes(name, batch);
  nvtxDomainRangePushEx(domain(), &a);
}
void nvtx_pop() {
  nvtxDomainRangePop(domain());
}
std::uint64_t nvtx_start(const char* name, std::optional<std::int64_t> batch) {
  const nvtxEventAttributes_t a = attributes(name, batch);
  return nvtxDomainRangeStartEx(domain(), &a);
}
void nvtx_end(std::uint64_t id) {
  nvtxDomainRangeEnd(domain(), id);
}
#else
void nvtx_push(const char*, std::optional<std::int64_t>) {}
void nvtx_pop() {}
std::uint64_t nvtx_start(const char*, std::optional<std::int64_t>) {
  return 0;
}
void nvtx_end(std::uint64_t) {}
#endif

Status begin_session(std::unique_ptr<GpuCapture> capture) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (g_session.load(std::memory_order_relaxed) != 0) {
    return make_error(StatusCode::kInvalidArgument, "a trace session is already recording");
  }
  s.collected = Collected{};
  s.collected.capture = std::move(capture);
  s.collected.origin_ns = now_ns();
  g_session.store(++s.last_session, std::memory_order_relaxed);
  g_enabled.store(true, std::memory_order_relaxed);
  return Status::ok();
}

Collected end_session() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  g_enabled.store(false, std::memory_order_relaxed);
  g_session.store(0, std::memory_order_relaxed);
  s.collected.end_ns = now_ns();
  return std::exchange(s.collected, Collected{});
}

}  // namespace detail

void ScopedRange::begin_recording() {
  session_ = g_session.load(std::memory_order_relaxed);
  if (session_ == 0) return;
  level_ = t_depth++;
  if (stream_ != nullptr) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.collected.capture) gpu_token_ = s.collected.capture->begin_stream_range(stream_);
  }
  // Taken last so that the range's own bookkeeping stays outside it.
  start_ns_ = now_ns();
}

void ScopedRange::end_recording() {
  const std::int64_t end = now_ns();
  --t_depth;
  add_range(session_,
            RangeRecord{.domain = kDomain,
                        .name = name_,
                        .style = RangeStyle::kPushPop,
                        .thread = current_thread_id(),
                        .start_ns = start_ns_,
                        .end_ns = end,
                        .level = level_,
                        .batch = batch_},
            gpu_token_, stream_);
}

StartEndRange::StartEndRange(const char* name, std::optional<std::int64_t> batch)
    : name_(name), batch_(batch), nvtx_id_(detail::nvtx_start(name, batch)) {
  if (!enabled()) return;
  session_ = g_session.load(std::memory_order_relaxed);
  thread_ = current_thread_id();
  start_ns_ = now_ns();
}

StartEndRange::StartEndRange(StartEndRange&& other) noexcept
    : name_(other.name_),
      batch_(other.batch_),
      nvtx_id_(std::exchange(other.nvtx_id_, std::nullopt)),
      session_(std::exchange(other.session_, 0)),
      thread_(other.thread_),
      start_ns_(other.start_ns_) {}

StartEndRange& StartEndRange::operator=(StartEndRange&& other) noexcept {
  if (this != &other) {
    end();
    name_ = other.name_;
    batch_ = other.batch_;
    nvtx_id_ = std::exchange(other.nvtx_id_, std::nullopt);
    session_ = std::exchange(other.session_, 0);
    thread_ = other.thread_;
    start_ns_ = other.start_ns_;
  }
  return *this;
}

void StartEndRange::end() {
  if (!nvtx_id_) return;
  const std::int64_t end = now_ns();
  detail::nvtx_end(*std::exchange(nvtx_id_, std::nullopt));
  if (session_ == 0) return;
  add_range(std::exchange(session_, 0),
            RangeRecord{.domain = kDomain,
                        .name = name_,
                        .style = RangeStyle::kStartEnd,
                        .thread = thread_,
                        .start_ns = start_ns_,
                        .end_ns = end,
                        .level = 0,
                        .batch = batch_},
            std::nullopt, nullptr);
}

}  // namespace fovea::trace
