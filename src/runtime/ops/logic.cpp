// Comparisons, boolean logic and Where, all with multidirectional broadcasting.
//
//   op                                       dtypes
//   Equal                                    float32/64, int64/32/8, uint8, bool -> bool
//   Greater Less GreaterOrEqual LessOrEqual  float32/64, int64/32/8, uint8 -> bool
//   And Or Xor Not                           bool -> bool
//   Where                                    condition bool; X, Y any dtype (moved, not computed)
#include "runtime/ops/elementwise_util.h"

namespace fovea::runtime::ops {
namespace {

struct EqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};

struct GreaterOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};

struct LessOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};

struct GreaterOrEqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};

struct LessOrEqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};

struct AndOp {
  bool operator()(bool a, bool b) const { return a && b; }
};

struct OrOp {
  bool operator()(bool a, bool b) const { return a || b; }
};

struct XorOp {
  bool operator()(bool a, bool b) const { return a != b; }
};

struct NotOp {
  bool operator()(bool a) const { return !a; }
};

Status infer_where(InferContext& ctx) {
  FOVEA_TRY(BoolTypes::require(ctx, 0));
  FOVEA_TRY(ctx.require_same_dtype(1, 2));
  return infer_broadcast_output(ctx, ctx.input_dtype(1));
}

Status run_where(KernelContext& ctx) {
  dispatch_by_size(ctx.input(1).dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    map_elements<U, bool, U, U>(
        ctx.output(0), [](bool condition, U x, U y) { return condition ? x : y; }, ctx.input(0), ctx.input(1),
        ctx.input(2));
  });
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "Equal",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_binary<NumericOrBoolTypes, EqualOp>,
                   .run = run_binary<NumericOrBoolTypes, EqualOp>});
FOVEA_REGISTER_OP({.op_type = "Greater",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_binary<NumericTypes, GreaterOp>,
                   .run = run_binary<NumericTypes, GreaterOp>});
FOVEA_REGISTER_OP({.op_type = "Less",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_binary<NumericTypes, LessOp>,
                   .run = run_binary<NumericTypes, LessOp>});
FOVEA_REGISTER_OP({.op_type = "GreaterOrEqual",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_binary<NumericTypes, GreaterOrEqualOp>,
                   .run = run_binary<NumericTypes, GreaterOrEqualOp>});
FOVEA_REGISTER_OP({.op_type = "LessOrEqual",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_binary<NumericTypes, LessOrEqualOp>,
                   .run = run_binary<NumericTypes, LessOrEqualOp>});
FOVEA_REGISTER_OP({.op_type = "And",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_binary<BoolTypes, AndOp>,
                   .run = run_binary<BoolTypes, AndOp>});
FOVEA_REGISTER_OP({.op_type = "Or",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_binary<BoolTypes, OrOp>,
                   .run = run_binary<BoolTypes, OrOp>});
FOVEA_REGISTER_OP({.op_type = "Xor",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_binary<BoolTypes, XorOp>,
                   .run = run_binary<BoolTypes, XorOp>});
FOVEA_REGISTER_OP({.op_type = "Not",
                   .infer = infer_unary<BoolTypes, NotOp>,
                   .run = run_unary<BoolTypes, NotOp>});

FOVEA_REGISTER_OP(
    {.op_type = "Where", .min_inputs = 3, .max_inputs = 3, .infer = infer_where, .run = run_where});

}  // namespace fovea::runtime::ops
