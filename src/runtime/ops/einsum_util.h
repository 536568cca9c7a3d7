// Einsum lowered to one general contraction, shared by the CPU reference (einsum.cpp) and the CUDA
// kernel (cuda/ops/einsum.cu): the equation is parsed once on the host into a plan of output
// labels and summed labels, each with a size and a stride per operand. A label repeated within an
// operand ("ii") adds its strides, which walks the diagonal; a label absent from an operand, or an
// ellipsis dim broadcast from size 1, has stride 0. Every form exported models use is then the
// same loop: batched matmul ("bij,bjk->bik"), transpose ("ij->ji"), reductions ("ij->i"), diagonal
// ("...ii->...i") and inner product ("i,i").
//
// Each output element sums the product of the operands over every combination of the summed
// labels; both sides accumulate in the same type (float for float32 and float16, double for
// float64, int64 for integers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/host_device.h"
#include "runtime/op.h"

namespace fovea::runtime::ops {

inline constexpr int kMaxEinsumOperands = 4;
inline constexpr int kMaxEinsumLabels = 16;

struct EinsumPlan {
  int operands = 0;
  int out_rank = 0;
  int sum_rank = 0;
  std::int64_t out_dims[kMaxEinsumLabels] = {};
  std::int64_t sum_dims[kMaxEinsumLabels] = {};
  std::int64_t out_strides[kMaxEinsumOperands][kMaxEinsumLabels] = {};
  std::int64_t sum_strides[kMaxEinsumOperands][kMaxEinsumLabels] = {};
  std::int64_t sum_count = 1;  // combinations of the summed labels
};

// The plan for the node's equation on inputs of these shapes; an error names what in the
// equation does not fit them.
Result<EinsumPlan> einsum_plan(const InferContext& ctx, const std::vector<Shape>& inputs);
Shape einsum_output_shape(const EinsumPlan& plan);

// The sum for output element o; load(k, offset) reads operand k as the accumulator type A.
template <typename A, typename Load>
FOVEA_HD A einsum_value(const EinsumPlan& plan, std::int64_t o, Load load) {
  std::int64_t base[kMaxEinsumOperands] = {};
  for (int j = plan.out_rank - 1; j >= 0; --j) {
    const std::int64_t coord = o % plan.out_dims[j];
    o /= plan.out_dims[j];
    for (int k = 0; k < plan.operands; ++k) base[k] += coord * plan.out_strides[k][j];
  }
  A sum = A(0);
  for (std::int64_t s = 0; s < plan.sum_count; ++s) {
    std::int64_t offsets[kMaxEinsumOperands] = {};
    for (int k = 0; k < plan.operands; ++k) offsets[k] = base[k];
    std::int64_t rest = s;
    for (int j = plan.sum_rank - 1; j >= 0; --j) {
      const std::int64_t coord = rest % plan.sum_dims[j];
      rest /= plan.sum_dims[j];
      for (int k = 0; k < plan.operands; ++k) offsets[k] += coord * plan.sum_strides[k][j];
    }
    A product = load(0, offsets[0]);
    for (int k = 1; k < plan.operands; ++k) product *= load(k, offsets[k]);
    sum += product;
  }
  return sum;
}

}  // namespace fovea::runtime::ops
