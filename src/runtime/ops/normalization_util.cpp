#include "runtime/ops/normalization_util.h"

#include <string>

namespace fovea::runtime::ops {

Result<BatchNormActivation> batch_norm_activation(const Node& node) {
  FOVEA_ASSIGN_OR_RETURN(const std::string activation, node.attr_string("activation", std::string()));
  if (activation.empty()) return BatchNormActivation::kNone;
  if (activation == "Relu") return BatchNormActivation::kRelu;
  return make_error(StatusCode::kInvalidArgument, node.describe(), ": activation '", activation,
                    "' is not one fovea.BatchNormalization applies (none, or \"Relu\")");
}

}  // namespace fovea::runtime::ops
