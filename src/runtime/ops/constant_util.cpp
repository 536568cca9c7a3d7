#include "runtime/ops/constant_util.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace fovea::runtime::ops {

Result<Tensor> constant_value(const Node& node) {
  for (const char* unsupported : {"sparse_value", "value_string", "value_strings"}) {
    if (node.has_attribute(unsupported)) {
      return make_error(StatusCode::kUnsupported, node.describe(), ": attribute '", unsupported,
                        "' is not supported");
    }
  }
  static constexpr const char* kValueAttributes[] = {"value", "value_float", "value_floats", "value_int",
                                                     "value_ints"};
  const auto set = std::count_if(std::begin(kValueAttributes), std::end(kValueAttributes),
                                 [&](const char* key) { return node.has_attribute(key); });
  if (set != 1) {
    return make_error(StatusCode::kInvalidArgument, node.describe(),
                      ": exactly one of the attributes value, value_float, value_floats, value_int and "
                      "value_ints must be set, got ",
                      std::to_string(set));
  }
  if (node.has_attribute("value")) return node.attr_tensor("value");
  if (node.has_attribute("value_float")) {
    FOVEA_ASSIGN_OR_RETURN(float v, node.attr_float("value_float"));
    return Tensor::from_vector(DataType::kFloat32, {}, std::vector<float>{v});
  }
  if (node.has_attribute("value_floats")) {
    FOVEA_ASSIGN_OR_RETURN(std::vector<float> v, node.attr_floats("value_floats"));
    return Tensor::from_vector(DataType::kFloat32, {static_cast<std::int64_t>(v.size())}, v);
  }
  if (node.has_attribute("value_int")) {
    FOVEA_ASSIGN_OR_RETURN(std::int64_t v, node.attr_int("value_int"));
    return Tensor::from_vector(DataType::kInt64, {}, std::vector<std::int64_t>{v});
  }
  FOVEA_ASSIGN_OR_RETURN(std::vector<std::int64_t> v, node.attr_ints("value_ints"));
  return Tensor::from_vector(DataType::kInt64, {static_cast<std::int64_t>(v.size())}, v);
}

Result<DimRange> shape_range(const Node& node, std::int64_t rank) {
  FOVEA_ASSIGN_OR_RETURN(std::int64_t start, node.attr_int("start", 0));
  FOVEA_ASSIGN_OR_RETURN(std::int64_t end, node.attr_int("end", rank));
  const auto clamp = [rank](std::int64_t v) {
    return std::clamp(v < 0 ? v + rank : v, std::int64_t{0}, rank);
  };
  const std::int64_t b = clamp(start);
  return DimRange{b, std::max(b, clamp(end))};
}

Result<Tensor> fill_value(const Node& node) {
  if (!node.has_attribute("value")) return Tensor::allocate(DataType::kFloat32, {});
  return node.attr_tensor("value");
}

}  // namespace fovea::runtime::ops
