#include "trace/analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace fovea::trace {
namespace {

using GroupKey = std::pair<std::string, RangeStyle>;

// Ops by the thread that launched them, each list in launch order.
std::unordered_map<std::uint64_t, std::vector<const GpuOpRecord*>> ops_by_thread(const TraceData& data) {
  std::unordered_map<std::uint64_t, std::vector<const GpuOpRecord*>> by_thread;
  for (const GpuOpRecord& op : data.ops) by_thread[op.api_thread].push_back(&op);
  for (auto& [thread, ops] : by_thread) {
    std::sort(ops.begin(), ops.end(),
              [](const GpuOpRecord* a, const GpuOpRecord* b) { return a->api_start_ns < b->api_start_ns; });
  }
  return by_thread;
}

RangeProjection project(const RangeRecord& range, const std::vector<const GpuOpRecord*>& ops) {
  RangeProjection p;
  auto it = std::lower_bound(ops.begin(), ops.end(), range.start_ns,
                             [](const GpuOpRecord* op, std::int64_t t) { return op->api_start_ns < t; });
  for (; it != ops.end() && (*it)->api_start_ns <= range.end_ns; ++it) {
    const GpuOpRecord& op = **it;
    if (op.api_end_ns > range.end_ns) continue;
    ++p.gpu_ops;
    p.proj_start_ns = std::min(p.proj_start_ns.value_or(op.start_ns), op.start_ns);
    p.proj_end_ns = std::max(p.proj_end_ns.value_or(op.end_ns), op.end_ns);
  }
  return p;
}

// Direct children from the recorded levels: in start order (a parent before a child that starts
// at the same time), a range's parent is the innermost open range one level up.
void count_children(const TraceData& data, std::vector<RangeProjection>& projections) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < data.ranges.size(); ++i) {
    if (data.ranges[i].style == RangeStyle::kPushPop) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const RangeRecord& x = data.ranges[a];
    const RangeRecord& y = data.ranges[b];
    return std::tie(x.thread, x.start_ns, x.level) < std::tie(y.thread, y.start_ns, y.level);
  });
  std::vector<std::size_t> open;
  for (std::size_t i : order) {
    const RangeRecord& range = data.ranges[i];
    while (!open.empty() && (data.ranges[open.back()].thread != range.thread ||
                             data.ranges[open.back()].level >= range.level)) {
      open.pop_back();
    }
    if (!open.empty() && data.ranges[open.back()].level == range.level - 1)
      ++projections[open.back()].children;
    open.push_back(i);
  }
}

// Largest total first; ties in name (and style) order, so reports are reproducible.
template <typename Row, typename Total, typename Key>
void sort_rows(std::vector<Row>& rows, Total total, Key key) {
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    if (total(a) != total(b)) return total(a) > total(b);
    return key(a) < key(b);
  });
}

std::vector<GpuProjRow> gpu_proj_rows(const TraceData& data,
                                      const std::vector<RangeProjection>& projections) {
  struct Accumulator {
    std::vector<std::int64_t> proj;
    std::int64_t range_ns = 0, ops = 0, levels = 0, children = 0;
  };
  std::map<GroupKey, Accumulator> groups;
  for (std::size_t i = 0; i < data.ranges.size(); ++i) {
    const RangeRecord& range = data.ranges[i];
    const RangeProjection& p = projections[i];
    if (p.gpu_ops == 0) continue;
    Accumulator& a = groups[{range_label(range), range.style}];
    a.proj.push_back(*p.proj_end_ns - *p.proj_start_ns);
    a.range_ns += range.end_ns - range.start_ns;
    a.ops += p.gpu_ops;
    a.levels += range.level;
    a.children += p.children;
  }
  std::vector<GpuProjRow> rows;
  for (auto& [key, a] : groups) {
    const auto n = static_cast<double>(a.proj.size());
    rows.push_back(GpuProjRow{.range = key.first,
                              .style = key.second,
                              .proj = compute_stats(std::move(a.proj)),
                              .total_range_ns = a.range_ns,
                              .total_gpu_ops = a.ops,
                              .avg_gpu_ops = static_cast<double>(a.ops) / n,
                              .avg_range_level = static_cast<double>(a.levels) / n,
                              .avg_num_child = static_cast<double>(a.children) / n});
  }
  sort_rows(
      rows, [](const GpuProjRow& r) { return r.proj.total; },
      [](const GpuProjRow& r) {
        return GroupKey{r.range, r.style};
      });
  return rows;
}

// Rows of (key, Stats) with Time (%) against the sum of all rows' totals.
template <typename Row, typename Key, typename Make>
std::vector<Row> time_rows(std::map<Key, std::vector<std::int64_t>> durations, Make make) {
  std::vector<Row> rows;
  std::int64_t grand_total = 0;
  for (auto& [key, values] : durations) {
    rows.push_back(make(key, compute_stats(std::move(values))));
    grand_total += rows.back().time.total;
  }
  for (Row& row : rows) {
    row.time_percent = grand_total > 0
                           ? 100.0 * static_cast<double>(row.time.total) / static_cast<double>(grand_total)
                           : 0.0;
  }
  return rows;
}

std::vector<NvtxRow> nvtx_rows(const TraceData& data) {
  std::map<GroupKey, std::vector<std::int64_t>> durations;
  for (const RangeRecord& range : data.ranges) {
    durations[{range_label(range), range.style}].push_back(range.end_ns - range.start_ns);
  }
  auto rows = time_rows<NvtxRow>(std::move(durations), [](const GroupKey& key, Stats stats) {
    return NvtxRow{.range = key.first, .style = key.second, .time = stats};
  });
  sort_rows(
      rows, [](const NvtxRow& r) { return r.time.total; },
      [](const NvtxRow& r) {
        return GroupKey{r.range, r.style};
      });
  return rows;
}

std::vector<KernelRow> kernel_rows(const TraceData& data) {
  std::map<std::string, std::vector<std::int64_t>> durations;
  for (const GpuOpRecord& op : data.ops) {
    if (op.kind == GpuOpKind::kKernel) durations[op.name].push_back(op.end_ns - op.start_ns);
  }
  auto rows = time_rows<KernelRow>(std::move(durations), [](const std::string& name, Stats stats) {
    return KernelRow{.name = name, .time = stats};
  });
  sort_rows(
      rows, [](const KernelRow& r) { return r.time.total; }, [](const KernelRow& r) { return r.name; });
  return rows;
}

std::vector<BlockingCallRow> blocking_call_rows(const TraceData& data) {
  std::map<std::string, std::vector<std::int64_t>> durations;
  std::map<std::string, std::set<std::uint64_t>> threads;
  for (const BlockingCall& call : data.blocking_calls) {
    durations[call.name].push_back(call.end_ns - call.start_ns);
    threads[call.name].insert(call.thread);
  }
  auto rows =
      time_rows<BlockingCallRow>(std::move(durations), [&threads](const std::string& name, Stats stats) {
        return BlockingCallRow{
            .name = name, .time = stats, .threads = static_cast<std::int64_t>(threads[name].size())};
      });
  sort_rows(
      rows, [](const BlockingCallRow& r) { return r.time.total; },
      [](const BlockingCallRow& r) { return r.name; });
  return rows;
}

// One CUDA call of a thread, from a GPU op's launching call or a blocking call.
struct ApiCall {
  std::string_view name;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

// Each thread's CUDA calls in start order. A call that launched several ops (a graph's kernels, one
// correlation id) is one call.
std::unordered_map<std::uint64_t, std::vector<ApiCall>> api_calls_by_thread(const TraceData& data) {
  std::unordered_map<std::uint64_t, std::vector<ApiCall>> by_thread;
  std::set<std::tuple<std::uint64_t, std::uint64_t, std::int64_t>> counted;  // thread, correlation, start
  for (const GpuOpRecord& op : data.ops) {
    if (op.api_thread == 0 || op.kind == GpuOpKind::kRangeSpan) continue;
    if (!counted.emplace(op.api_thread, op.correlation, op.api_start_ns).second) continue;
    by_thread[op.api_thread].push_back({op.api_name, op.api_start_ns, op.api_end_ns});
  }
  for (const BlockingCall& call : data.blocking_calls) {
    by_thread[call.thread].push_back({call.name, call.start_ns, call.end_ns});
  }
  for (auto& [thread, calls] : by_thread) {
    std::sort(calls.begin(), calls.end(),
              [](const ApiCall& a, const ApiCall& b) { return a.start_ns < b.start_ns; });
  }
  return by_thread;
}

// The innermost of a thread's push/pop ranges around each of its calls, in one sweep: `ranges` in
// start order (outer before inner), `calls` in start order; nullptr for a call in none.
std::vector<const RangeRecord*> enclosing_ranges(const std::vector<const RangeRecord*>& ranges,
                                                 const std::vector<ApiCall>& calls) {
  std::vector<const RangeRecord*> enclosing;
  std::vector<const RangeRecord*> open;  // begun before the current call, outermost first
  std::size_t next = 0;
  for (const ApiCall& call : calls) {
    for (; next < ranges.size() && ranges[next]->start_ns <= call.start_ns; ++next) {
      while (!open.empty() && open.back()->end_ns <= ranges[next]->start_ns) open.pop_back();
      open.push_back(ranges[next]);
    }
    // Ranges that ended before this call began hold no later call either.
    while (!open.empty() && open.back()->end_ns < call.start_ns) open.pop_back();
    const auto inner = std::find_if(open.rbegin(), open.rend(),
                                    [&](const RangeRecord* range) { return range->end_ns >= call.end_ns; });
    enclosing.push_back(inner == open.rend() ? nullptr : *inner);
  }
  return enclosing;
}

std::vector<ApiRangeRow> api_range_rows(const TraceData& data) {
  std::unordered_map<std::uint64_t, std::vector<const RangeRecord*>> ranges_by_thread;
  std::map<std::string, std::int64_t> range_ns;  // per label, its push/pop instances' total
  for (const RangeRecord& range : data.ranges) {
    if (range.style != RangeStyle::kPushPop) continue;  // start/end ranges may cross threads
    ranges_by_thread[range.thread].push_back(&range);
    range_ns[range_label(range)] += range.end_ns - range.start_ns;
  }
  for (auto& [thread, ranges] : ranges_by_thread) {
    std::sort(ranges.begin(), ranges.end(), [](const RangeRecord* a, const RangeRecord* b) {
      return std::tie(a->start_ns, a->level) < std::tie(b->start_ns, b->level);
    });
  }
  std::map<std::pair<std::string, std::string>, std::vector<std::int64_t>> durations;
  for (const auto& [thread, calls] : api_calls_by_thread(data)) {
    const std::vector<const RangeRecord*> enclosing = enclosing_ranges(ranges_by_thread[thread], calls);
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const std::string range = enclosing[i] != nullptr ? range_label(*enclosing[i]) : std::string(kNoRange);
      durations[{range, std::string(calls[i].name)}].push_back(calls[i].end_ns - calls[i].start_ns);
    }
  }
  std::vector<ApiRangeRow> rows;
  for (auto& [key, values] : durations) {
    ApiRangeRow row{.range = key.first, .name = key.second, .time = compute_stats(std::move(values))};
    const auto total = range_ns.find(row.range);
    if (total != range_ns.end() && total->second > 0) {
      row.range_percent = 100.0 * static_cast<double>(row.time.total) / static_cast<double>(total->second);
    }
    rows.push_back(std::move(row));
  }
  sort_rows(
      rows, [](const ApiRangeRow& r) { return r.time.total; },
      [](const ApiRangeRow& r) { return std::tie(r.range, r.name); });
  return rows;
}

std::vector<GapRow> gap_rows(const TraceData& data, std::int64_t threshold_ns) {
  std::map<int, std::vector<const GpuOpRecord*>> by_device;
  for (const GpuOpRecord& op : data.ops) by_device[op.device].push_back(&op);
  std::vector<GapRow> gaps;
  for (auto& [device, ops] : by_device) {
    std::sort(ops.begin(), ops.end(),
              [](const GpuOpRecord* a, const GpuOpRecord* b) { return a->start_ns < b->start_ns; });
    std::int64_t busy_until = ops.front()->end_ns;
    for (const GpuOpRecord* op : ops) {
      if (op->start_ns - busy_until >= threshold_ns) {
        gaps.push_back(GapRow{.device = device,
                              .duration_ns = op->start_ns - busy_until,
                              .start_ns = busy_until,
                              .end_ns = op->start_ns});
      }
      busy_until = std::max(busy_until, op->end_ns);
    }
  }
  std::sort(gaps.begin(), gaps.end(), [](const GapRow& a, const GapRow& b) {
    return std::tie(a.start_ns, a.device) < std::tie(b.start_ns, b.device);
  });
  for (std::size_t i = 0; i < gaps.size(); ++i) gaps[i].row = static_cast<std::int64_t>(i + 1);
  return gaps;
}

}  // namespace

Stats compute_stats(std::vector<std::int64_t> values) {
  Stats s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  s.instances = static_cast<std::int64_t>(n);
  s.total = std::accumulate(values.begin(), values.end(), std::int64_t{0});
  s.avg = static_cast<double>(s.total) / static_cast<double>(n);
  s.med = n % 2 == 1 ? static_cast<double>(values[n / 2])
                     : (static_cast<double>(values[n / 2 - 1]) + static_cast<double>(values[n / 2])) / 2.0;
  s.min = values.front();
  s.max = values.back();
  if (n > 1) {
    double squares = 0;
    for (std::int64_t v : values)
      squares += (static_cast<double>(v) - s.avg) * (static_cast<double>(v) - s.avg);
    s.stddev = std::sqrt(squares / static_cast<double>(n - 1));
  }
  return s;
}

std::string range_label(const RangeRecord& range) {
  return range.domain == "fovea" ? range.name : range.domain + ":" + range.name;
}

std::vector<RangeProjection> project_ranges(const TraceData& data) {
  const auto by_thread = ops_by_thread(data);
  const std::vector<const GpuOpRecord*> none;
  std::vector<RangeProjection> projections;
  projections.reserve(data.ranges.size());
  for (const RangeRecord& range : data.ranges) {
    auto it = by_thread.find(range.thread);
    projections.push_back(project(range, it != by_thread.end() ? it->second : none));
  }
  count_children(data, projections);
  return projections;
}

Tables analyze(const TraceData& data, std::int64_t gap_threshold_ns) {
  const std::vector<RangeProjection> projections = project_ranges(data);
  return Tables{.gpu_proj = gpu_proj_rows(data, projections),
                .nvtx = nvtx_rows(data),
                .kernels = kernel_rows(data),
                .blocking_calls = blocking_call_rows(data),
                .api_by_range = api_range_rows(data),
                .gaps = gap_rows(data, gap_threshold_ns),
                .gap_threshold_ns = gap_threshold_ns};
}

}  // namespace fovea::trace
