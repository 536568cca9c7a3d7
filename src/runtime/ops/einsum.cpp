// Einsum on the CPU: one contraction loop over the output elements (einsum_util.h, shared with
// the CUDA kernel in cuda/ops/einsum.cu).
//
//   dtypes: float32/64 (float16 via float32), int64, int32; every input has the same dtype
#include <fmt/format.h>

#include "runtime/ops/einsum_util.h"
#include "runtime/ops/elementwise_util.h"

namespace fovea::runtime::ops {
namespace {

using EinsumTypes = DTypes<FOVEA_FLOAT_TYPES, DataType::kInt64, DataType::kInt32>;

// The accumulator of T: float and double themselves, int64 for integers.
template <typename T>
using EinsumAccumulator = std::conditional_t<std::is_floating_point_v<T>, T, std::int64_t>;

Status infer_einsum(InferContext& ctx) {
  std::vector<Shape> shapes;
  for (int i = 0; i < ctx.input_count(); ++i) {
    FOVEA_TRY(EinsumTypes::require(ctx, i));
    FOVEA_TRY(ctx.require_same_dtype(0, i));
    const Dims* dims = ctx.input_dims(i);
    if (dims == nullptr || !all_known(*dims)) {
      ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
      return Status::ok();
    }
    shapes.push_back(shape_of(*dims));
  }
  FOVEA_ASSIGN_OR_RETURN(const EinsumPlan plan, einsum_plan(ctx, shapes));
  ctx.set_output(0, ctx.input_dtype(0), einsum_output_shape(plan));
  return Status::ok();
}

Status run_einsum(KernelContext& ctx) {
  std::vector<Shape> shapes;
  for (int i = 0; i < ctx.input_count(); ++i) shapes.push_back(ctx.input(i).shape());
  FOVEA_ASSIGN_OR_RETURN(const EinsumPlan plan, einsum_plan(ctx.inference(), shapes));
  EinsumTypes::dispatch(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = EinsumAccumulator<T>;
    const T* operands[kMaxEinsumOperands] = {};
    for (int k = 0; k < plan.operands; ++k) operands[k] = ctx.input(k).data<T>();
    T* out = ctx.output(0).data<T>();
    for (std::int64_t o = 0; o < ctx.output(0).numel(); ++o) {
      out[o] = static_cast<T>(einsum_value<A>(
          plan, o, [&](int k, std::int64_t offset) { return static_cast<A>(operands[k][offset]); }));
    }
  });
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "Einsum", .max_inputs = kVariadic, .infer = infer_einsum, .run = run_einsum});

}  // namespace fovea::runtime::ops
