#include "service/prometheus.h"

#include <cmath>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "core/check.h"

namespace fovea::service {
namespace {

bool is_name_start(char c, bool colon_allowed) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_allowed && c == ':');
}

bool is_name_char(char c, bool colon_allowed) {
  return is_name_start(c, colon_allowed) || (c >= '0' && c <= '9');
}

// Metric names are [a-zA-Z_:][a-zA-Z0-9_:]*; label names the same without ':'.
bool is_valid_name(std::string_view name, bool colon_allowed) {
  if (name.empty() || !is_name_start(name.front(), colon_allowed)) return false;
  for (char c : name) {
    if (!is_name_char(c, colon_allowed)) return false;
  }
  return true;
}

// Label names starting with "__" are Prometheus's own; "le" is the bucket bound of histograms.
void check_labels(const Labels& labels, bool histogram) {
  for (const auto& [name, value] : labels) {
    FOVEA_CHECK_MSG(is_valid_name(name, false) && !name.starts_with("__"), name.c_str());
    FOVEA_CHECK_MSG(!(histogram && name == "le"), "a histogram's samples may not have an \"le\" label");
  }
}

void append_escaped(std::string& out, std::string_view text, bool escape_quotes) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && escape_quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// Go's strconv.ParseFloat (what Prometheus reads values with) takes NaN, +Inf, -Inf and plain or
// exponent notation. Integral values up to 2^53 (exact in a double) are written as integers, so a
// counter of 10000000 does not read "1e+07".
std::string format_number(double value) {
  constexpr double kLargestExactInteger = 9007199254740992.0;  // 2^53
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0.0) return "0";  // also -0
  if (value == std::trunc(value) && std::fabs(value) <= kLargestExactInteger)
    return fmt::format("{:.0f}", value);
  return fmt::format("{}", value);
}

// name{a="x",b="y"} value; `le` is a histogram bucket's bound, written as the last label.
void append_sample(std::string& out, std::string_view name, const Labels& labels, std::string_view value,
                   std::string_view le = {}) {
  out += name;
  if (!labels.empty() || !le.empty()) {
    out += '{';
    for (const auto& [label, label_value] : labels) {
      out.append(label).append("=\"");
      append_escaped(out, label_value, true);
      out += "\",";
    }
    if (!le.empty()) out.append("le=\"").append(le).append("\",");
    out.back() = '}';
  }
  out.append(" ").append(value).append("\n");
}

void append_histogram(std::string& out, std::string_view name, const HistogramSample& histogram) {
  check_labels(histogram.labels, true);
  FOVEA_CHECK(histogram.cumulative_counts.size() == histogram.upper_bounds.size() + 1);
  for (std::size_t i = 0; i < histogram.upper_bounds.size(); ++i) {
    FOVEA_CHECK_MSG(std::isfinite(histogram.upper_bounds[i]),
                    "a histogram's bounds are finite (+Inf is implied)");
    FOVEA_CHECK_MSG(i == 0 || histogram.upper_bounds[i - 1] < histogram.upper_bounds[i],
                    "a histogram's bounds ascend");
  }
  const std::string bucket = std::string(name) + "_bucket";
  for (std::size_t i = 0; i < histogram.cumulative_counts.size(); ++i) {
    const bool last = i == histogram.upper_bounds.size();
    append_sample(out, bucket, histogram.labels, std::to_string(histogram.cumulative_counts[i]),
                  last ? "+Inf" : format_number(histogram.upper_bounds[i]));
  }
  append_sample(out, std::string(name) + "_sum", histogram.labels, format_number(histogram.sum));
  append_sample(out, std::string(name) + "_count", histogram.labels, std::to_string(histogram.count));
}

std::string_view type_name(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

void append_family(std::string& out, const MetricFamily& family) {
  FOVEA_CHECK_MSG(is_valid_name(family.name, true), family.name.c_str());
  FOVEA_CHECK_MSG(family.type != MetricType::kCounter || family.name.ends_with("_total"),
                  family.name.c_str());
  const bool histogram = family.type == MetricType::kHistogram;
  FOVEA_CHECK_MSG(histogram ? family.samples.empty() : family.histograms.empty(), family.name.c_str());
  out.append("# HELP ").append(family.name).append(" ");
  append_escaped(out, family.help, false);
  out.append("\n# TYPE ").append(family.name).append(" ").append(type_name(family.type)).append("\n");
  for (const MetricSample& sample : family.samples) {
    check_labels(sample.labels, false);
    append_sample(out, family.name, sample.labels, format_number(sample.value));
  }
  for (const HistogramSample& sample : family.histograms) append_histogram(out, family.name, sample);
}

}  // namespace

std::string render_prometheus(const std::vector<MetricFamily>& families) {
  std::string out;
  std::set<std::string_view> names;
  for (const MetricFamily& family : families) {
    FOVEA_CHECK_MSG(names.insert(family.name).second, family.name.c_str());
    append_family(out, family);
  }
  return out;
}

}  // namespace fovea::service
