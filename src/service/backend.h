// What `fovea serve`'s HTTP API asks of a running flow (service/http_api.h serves it).
//
// The HTTP layer parses and checks requests, maps errors to status codes and renders answers;
// the backend (service/flow_backend.h: a flow with sources added and removed at run time) does
// the work. Every call may come from any of the HTTP server's threads at any time while the flow
// runs, so implementations are thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace fovea::service {

// One source as GET /sources lists it.
struct SourceInfo {
  std::string id;  // the name the API knows it by: the request's "id", else one the backend chose
  std::string uri;
  std::string state;             // "connecting", "running", "reconnecting", "ended", "failed"
  std::uint64_t frames = 0;      // frames batched
  std::uint64_t dropped = 0;     // frames dropped (a live source the flow fell behind)
  std::uint64_t reconnects = 0;  // connections lost and made again
  double fps = 0.0;              // frames batched per second, over the last few seconds
  std::string decoder;           // "nvdec" or "cpu"; "" before the first frame
  std::string error;             // the last error, "" if none
};

struct Health {
  bool ready = false;     // the flow runs and takes frames
  bool degraded = false;  // ready, but some source is failing or reconnecting, or frames drop
  std::string reason;     // why not ready or degraded; "" when healthy
};

// Prometheus metric families (the text exposition format, rendered by service/prometheus.h).
using Labels = std::vector<std::pair<std::string, std::string>>;

struct MetricSample {
  Labels labels;
  double value = 0.0;
};

struct HistogramSample {
  Labels labels;
  std::vector<double> upper_bounds;              // ascending, without +Inf
  std::vector<std::uint64_t> cumulative_counts;  // one per bound, then one for +Inf (= count)
  double sum = 0.0;
  std::uint64_t count = 0;
};

enum class MetricType { kCounter, kGauge, kHistogram };

struct MetricFamily {
  std::string name;  // fovea_..., [a-zA-Z_:][a-zA-Z0-9_:]*; a counter's ends in _total
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<MetricSample> samples;        // counters and gauges
  std::vector<HistogramSample> histograms;  // histograms
};

class ServiceBackend {
 public:
  virtual ~ServiceBackend() = default;

  virtual std::vector<SourceInfo> sources() const = 0;
  // `request` is the POST /sources body, a JSON object checked by the HTTP layer to be an object
  // with a string "uri"; the backend checks the rest as the configuration file's `sources:` entry
  // (same keys, same messages). Errors: kInvalidArgument (bad request: 400), kAlreadyExists (an id
  // in use: 409), kResourceExhausted (the flow's source limit: 429).
  virtual Result<SourceInfo> add_source(const nlohmann::json& request) = 0;
  // kNotFound (404) for an id no source has.
  virtual Status remove_source(std::string_view id) = 0;
  // The run report's JSON, live.
  virtual nlohmann::json stats() const = 0;
  virtual Health health() const = 0;
  virtual std::vector<MetricFamily> metrics() const = 0;
};

}  // namespace fovea::service
