// trace.json in the Chrome trace event format (opens in Perfetto and chrome://tracing): one
// process "fovea CPU" with a track per thread holding its ranges and the CUDA calls that launched
// GPU work, one process per GPU with a track per stream holding its ops, and a flow arrow from
// each launching call to its op.
#pragma once

#include <nlohmann/json.hpp>

#include "trace/records.h"

namespace fovea::trace {

nlohmann::json chrome_trace(const TraceData& data);

}  // namespace fovea::trace
