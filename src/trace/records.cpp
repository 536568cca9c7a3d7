#include "trace/records.h"

#include <array>
#include <utility>

namespace fovea::trace {
namespace {

template <typename Enum, std::size_t N>
std::optional<Enum> parse_by_name(const std::array<std::pair<Enum, std::string_view>, N>& names,
                                  std::string_view name) {
  for (const auto& [value, text] : names) {
    if (text == name) return value;
  }
  return std::nullopt;
}

template <typename Enum, std::size_t N>
std::string_view name_of(const std::array<std::pair<Enum, std::string_view>, N>& names, Enum value) {
  for (const auto& [candidate, text] : names) {
    if (candidate == value) return text;
  }
  return "?";
}

constexpr std::array<std::pair<CaptureMode, std::string_view>, 3> kModeNames{{
    {CaptureMode::kCupti, "cupti"},
    {CaptureMode::kCudaEvents, "cuda-events"},
    {CaptureMode::kCpuOnly, "cpu-only"},
}};
constexpr std::array<std::pair<RangeStyle, std::string_view>, 2> kStyleNames{{
    {RangeStyle::kPushPop, "PushPop"},
    {RangeStyle::kStartEnd, "StartEnd"},
}};
constexpr std::array<std::pair<GpuOpKind, std::string_view>, 4> kKindNames{{
    {GpuOpKind::kKernel, "kernel"},
    {GpuOpKind::kMemcpy, "memcpy"},
    {GpuOpKind::kMemset, "memset"},
    {GpuOpKind::kRangeSpan, "range-span"},
}};

}  // namespace

std::string_view capture_mode_name(CaptureMode mode) {
  return name_of(kModeNames, mode);
}
std::optional<CaptureMode> parse_capture_mode(std::string_view name) {
  return parse_by_name(kModeNames, name);
}
std::string_view range_style_name(RangeStyle style) {
  return name_of(kStyleNames, style);
}
std::optional<RangeStyle> parse_range_style(std::string_view name) {
  return parse_by_name(kStyleNames, name);
}
std::string_view gpu_op_kind_name(GpuOpKind kind) {
  return name_of(kKindNames, kind);
}
std::optional<GpuOpKind> parse_gpu_op_kind(std::string_view name) {
  return parse_by_name(kKindNames, name);
}

}  // namespace fovea::trace
