// Metric families rendered in Prometheus's text exposition format, version 0.0.4 (what GET /metrics
// serves; https://prometheus.io/docs/instrumenting/exposition_formats/).
//
// Per family: "# HELP" (with \ and newlines escaped) and "# TYPE" once, then its samples, one per
// line, labels in braces with \, " and newlines escaped. A histogram's samples are its cumulative
// _bucket{le="..."} lines (+Inf last), _sum and _count. Numbers are written so that Prometheus
// parses them back exactly: NaN, +Inf, -Inf, integral values without an exponent, others in their
// shortest round-trip form.
//
// The families come from fovea's own code, so a malformed one (a bad metric or label name, a
// counter not ending in _total, a histogram whose bounds and counts do not match, two families of
// one name) is a bug and a FOVEA_CHECK, not an error for the scraper.
#pragma once

#include <string>
#include <vector>

#include "service/backend.h"

namespace fovea::service {

std::string render_prometheus(const std::vector<MetricFamily>& families);

}  // namespace fovea::service
