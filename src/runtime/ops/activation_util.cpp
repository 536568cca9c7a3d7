#include "runtime/ops/activation_util.h"

#include "runtime/ops/elementwise_util.h"

namespace fovea::runtime::ops {

Result<float> leaky_relu_alpha(const Node& node) {
  return node.attr_float("alpha", 0.01f);
}

Result<HardSigmoidParams> hard_sigmoid_params(const Node& node) {
  FOVEA_ASSIGN_OR_RETURN(float alpha, node.attr_float("alpha", 0.2f));
  FOVEA_ASSIGN_OR_RETURN(float beta, node.attr_float("beta", 0.5f));
  return HardSigmoidParams{alpha, beta};
}

Result<float> elu_alpha(const Node& node) {
  return node.attr_float("alpha", 1.0f);
}

Result<bool> gelu_uses_tanh(const Node& node) {
  FOVEA_ASSIGN_OR_RETURN(const std::string approximate, node.attr_string("approximate", "none"));
  if (approximate == "none") return false;
  if (approximate == "tanh") return true;
  return make_error(StatusCode::kInvalidArgument, "Gelu '", node.name, "': approximate '", approximate,
                    "': use none or tanh");
}

Result<bool> gemm_applies_gelu(const Node& node) {
  if (node.domain != "fovea") return false;  // ONNX's Gemm has no activation
  FOVEA_ASSIGN_OR_RETURN(const std::string activation, node.attr_string("activation", ""));
  if (activation.empty()) return false;
  if (activation == kGemmGeluTanh) return true;
  return make_error(StatusCode::kInvalidArgument, "fovea.Gemm '", node.name, "': activation '", activation,
                    "': the only one is ", kGemmGeluTanh);
}

template <typename T>
Result<T> clip_bound(const Node& node, const Tensor* bound, const char* attribute, T limit) {
  if (node.opset < 11) {
    if (!node.has_attribute(attribute)) return limit;
    FOVEA_ASSIGN_OR_RETURN(float value, node.attr_float(attribute));
    return convert_value<T>(value);
  }
  if (bound == nullptr) return limit;
  T value = limit;
  dispatch<FOVEA_ALL_TYPES>(bound->dtype(), [&](auto tag) {
    value = convert_value<T>(bound->data<typename decltype(tag)::type>()[0]);
  });
  return value;
}

template Result<float> clip_bound(const Node&, const Tensor*, const char*, float);
template Result<double> clip_bound(const Node&, const Tensor*, const char*, double);
template Result<std::int64_t> clip_bound(const Node&, const Tensor*, const char*, std::int64_t);
template Result<std::int32_t> clip_bound(const Node&, const Tensor*, const char*, std::int32_t);
template Result<std::int8_t> clip_bound(const Node&, const Tensor*, const char*, std::int8_t);
template Result<std::uint8_t> clip_bound(const Node&, const Tensor*, const char*, std::uint8_t);

}  // namespace fovea::runtime::ops
