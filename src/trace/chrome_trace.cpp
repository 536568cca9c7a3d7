#include "trace/chrome_trace.h"

#include <set>
#include <string>
#include <utility>

namespace fovea::trace {
namespace {

using nlohmann::json;

// Process ids of the trace's own making: Perfetto only needs them distinct.
constexpr int kCpuPid = 1;
constexpr int kFirstGpuPid = 100;

// Chrome traces count in microseconds; fractions keep the nanoseconds.
double us(std::int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

json complete_event(std::string name, const char* category, int pid, std::uint64_t tid, std::int64_t start_ns,
                    std::int64_t end_ns) {
  return json{{"name", std::move(name)},
              {"cat", category},
              {"ph", "X"},
              {"pid", pid},
              {"tid", tid},
              {"ts", us(start_ns)},
              {"dur", us(end_ns - start_ns)}};
}

json metadata(const char* what, int pid, std::uint64_t tid, const std::string& name) {
  return json{{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

void add_ranges(const TraceData& data, json& events) {
  std::set<std::uint64_t> threads;
  for (const RangeRecord& range : data.ranges) {
    json event =
        complete_event(range.name, range.domain.c_str(), kCpuPid, range.thread, range.start_ns, range.end_ns);
    event["args"] = {{"style", range_style_name(range.style)}, {"level", range.level}};
    if (range.batch) event["args"]["batch"] = *range.batch;
    events.push_back(std::move(event));
    threads.insert(range.thread);
  }
  for (std::uint64_t thread : threads) {
    events.push_back(metadata("thread_name", kCpuPid, thread, "thread " + std::to_string(thread)));
  }
}

// Each op, its launching call on the CPU track, and the flow arrow between them ("s" binds to the
// enclosing slice at its time on the CPU track, "f" with binding point "e" to the op).
void add_ops(const TraceData& data, json& events) {
  std::set<std::pair<int, std::uint64_t>> streams;
  for (const GpuOpRecord& op : data.ops) {
    const int pid = kFirstGpuPid + op.device;
    json event =
        complete_event(op.name, gpu_op_kind_name(op.kind).data(), pid, op.stream, op.start_ns, op.end_ns);
    event["args"] = {{"correlation", op.correlation}, {"api", op.api_name}};
    events.push_back(std::move(event));
    streams.emplace(op.device, op.stream);
    if (op.api_thread == 0) continue;  // launched before the session: no call to point from
    if (op.kind != GpuOpKind::kRangeSpan) {
      events.push_back(
          complete_event(op.api_name, "cuda_api", kCpuPid, op.api_thread, op.api_start_ns, op.api_end_ns));
    }
    const json flow_base = {{"name", "launch"}, {"cat", "launch"}, {"id", op.correlation}};
    json start = flow_base;
    start.update({{"ph", "s"}, {"pid", kCpuPid}, {"tid", op.api_thread}, {"ts", us(op.api_start_ns)}});
    json finish = flow_base;
    finish.update({{"ph", "f"}, {"bp", "e"}, {"pid", pid}, {"tid", op.stream}, {"ts", us(op.start_ns)}});
    events.push_back(std::move(start));
    events.push_back(std::move(finish));
  }
  std::set<int> devices;
  for (const auto& [device, stream] : streams) {
    events.push_back(
        metadata("thread_name", kFirstGpuPid + device, stream, "stream " + std::to_string(stream)));
    devices.insert(device);
  }
  for (int device : devices) {
    events.push_back(metadata("process_name", kFirstGpuPid + device, 0, "GPU " + std::to_string(device)));
  }
}

// The calls that blocked without launching GPU work, on their threads beside the ranges.
void add_blocking_calls(const TraceData& data, json& events) {
  for (const BlockingCall& call : data.blocking_calls) {
    events.push_back(complete_event(call.name, "cuda_api", kCpuPid, call.thread, call.start_ns, call.end_ns));
  }
}

}  // namespace

json chrome_trace(const TraceData& data) {
  json events = json::array();
  events.push_back(metadata("process_name", kCpuPid, 0, "fovea CPU"));
  add_ranges(data, events);
  add_ops(data, events);
  add_blocking_calls(data, events);
  return json{{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ns"},
              {"otherData", {{"mode", capture_mode_name(data.mode)}, {"label", data.label}}}};
}

}  // namespace fovea::trace
