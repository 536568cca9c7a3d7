// The ServiceBackend over a running flow (fovea serve): the API's sources are the flow's mux slots,
// added and removed through pipeline::FlowControl, and its figures are the flow's live stats.
//
// Ids. Each listed source has an id, unique among the listed ones: the request's "id", else its
// "name", else "source-N"; the configuration file's sources keep the names source_names() gave
// them. An id is also the source's name in the flow's outputs (metadata, MQTT topics), so it must
// fit a URL path segment and an MQTT topic level. A source removed leaves the list at once (its
// frames already decoded still go through the flow); one that ended by itself stays listed, with
// its figures, until it is removed or a new source takes its slot. A source added right after one
// was removed may wait a moment (up to 2 s) for that one's slot to drain.
//
// Rates. The flow's counters are totals; the rates the API shows (fps, recent drops) come from
// samples of them the backend keeps per id, taken whenever the API asks, so they cost nothing
// between requests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/flow_runner.h"
#include "service/backend.h"
#include "service/counter_history.h"

namespace fovea::service {

struct FlowBackendOptions {
  // Sources listed at once, at most (429 beyond): the flow's slots may be more (FlowOptions::
  // source_slots), but sources removed still hold theirs until their frames have drained.
  std::size_t max_sources = 0;
};

class FlowBackend final : public ServiceBackend {
 public:
  // `initial_ids[i]`: the id of the source in slot i, the configuration file's (source_names()).
  // `control` is bound to the flow by run_flow; the backend may exist before and after the run.
  FlowBackend(pipeline::FlowControl& control, std::vector<std::string> initial_ids,
              FlowBackendOptions options);

  std::vector<SourceInfo> sources() const override;
  Result<SourceInfo> add_source(const nlohmann::json& request) override;
  Status remove_source(std::string_view id) override;
  nlohmann::json stats() const override;
  Health health() const override;
  std::vector<MetricFamily> metrics() const override;

 private:
  struct Entry {
    std::size_t slot = 0;
    SourceInfo last;          // as last seen: what the list shows while the flow does not run
    CounterHistory counters;  // empty until the backend first reads the source
  };
  // The flow's figures at one moment, the listed sources' rates updated from them.
  struct Snapshot;

  Snapshot take_snapshot() const;  // with mutex_ held
  // With mutex_ held: the source started under `id` (free, and the list not full), or none while
  // every slot is still held by a removed source that drains its frames.
  Result<std::optional<SourceInfo>> try_add(const std::string& id, const pipeline::SourceConfig& source);
  std::string generated_id();  // with mutex_ held

  pipeline::FlowControl& control_;
  const FlowBackendOptions options_;
  // Guards what follows, and is held across each call into control_ that reads or changes slots,
  // so that the flow's figures and the ids' slots agree.
  mutable std::mutex mutex_;
  // The readers (sources, health, metrics) update the rates and the last-seen figures: mutable.
  mutable std::map<std::string, Entry, std::less<>> entries_;
  mutable bool seen_running_ = false;  // the flow has run: not running now means it has stopped
  // The counter reported never goes down.
  mutable std::uint64_t frames_reported_ = 0;
  std::uint64_t generated_ = 0;  // "source-N" ids handed out
};

}  // namespace fovea::service
