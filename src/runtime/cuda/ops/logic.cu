// Comparisons, boolean logic and Where on CUDA (ops/logic.cpp), broadcasting. float16 compares in
// float, like the reference's widened inputs.
#include "runtime/cuda/elementwise.cuh"

namespace fovea::runtime::cuda {
namespace {

struct EqualOp {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a == b;
  }
};

struct GreaterOp {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a > b;
  }
};

struct LessOp {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a < b;
  }
};

struct GreaterOrEqualOp {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a >= b;
  }
};

struct LessOrEqualOp {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a <= b;
  }
};

struct AndOp {
  __device__ bool operator()(bool a, bool b) const { return a && b; }
};

struct OrOp {
  __device__ bool operator()(bool a, bool b) const { return a || b; }
};

struct XorOp {
  __device__ bool operator()(bool a, bool b) const { return a != b; }
};

struct NotOp {
  __device__ bool operator()(bool a) const { return !a; }
};

struct WhereOp {
  template <typename U>
  __device__ U operator()(bool condition, U x, U y) const {
    return condition ? x : y;
  }
};

// Where only moves elements: one instantiation per element size, float16 and bool included.
Status run_where(CudaKernelContext& ctx) {
  Status status;
  ops::dispatch_by_size(ctx.input(1).dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    // The cast: nvcc flags the discarded result of operator= on a [[nodiscard]] type.
    static_cast<void>(status = launch_elementwise<U, bool, U, U>(ctx, WhereOp{}, ctx.output(0), ctx.input(0),
                                                                 ctx.input(1), ctx.input(2)));
  });
  return status;
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "Equal",
                        .run = run_binary<EqualOp, FOVEA_CUDA_NUMERIC_TYPES, DataType::kBool>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Greater", .run = run_binary<GreaterOp, FOVEA_CUDA_NUMERIC_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Less", .run = run_binary<LessOp, FOVEA_CUDA_NUMERIC_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "GreaterOrEqual",
                        .run = run_binary<GreaterOrEqualOp, FOVEA_CUDA_NUMERIC_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "LessOrEqual",
                        .run = run_binary<LessOrEqualOp, FOVEA_CUDA_NUMERIC_TYPES>});
FOVEA_REGISTER_CUDA_OP({.op_type = "And", .run = run_binary<AndOp, DataType::kBool>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Or", .run = run_binary<OrOp, DataType::kBool>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Xor", .run = run_binary<XorOp, DataType::kBool>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Not", .run = run_unary<NotOp, DataType::kBool>});
FOVEA_REGISTER_CUDA_OP({.op_type = "Where", .run = run_where});

}  // namespace fovea::runtime::cuda
