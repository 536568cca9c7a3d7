// MatMul and Gemm on cuBLASLt (lt_matmul.h: row-major products as their column-major transposes,
// float16 on tensor cores, float32 never on TF32, the algorithm chosen once at plan time).
#include <memory>
#include <type_traits>
#include <vector>

#include "runtime/cuda/cuda_libraries.h"
#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/elementwise.cuh"
#include "runtime/cuda/gelu.cuh"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/cuda/lt_matmul.h"
#include "runtime/ops/activation_util.h"
#include "runtime/ops/op_util.h"

namespace fovea::runtime::cuda {

namespace {

// ---- MatMul ------------------------------------------------------------------------------------

struct MatmulState final : public CudaNodeState {
  LtMatmul product;
  // Uneven broadcasting of the batch dims: one product per output matrix at these element offsets.
  std::vector<std::int64_t> a_offsets, b_offsets;
};

Shape batch_of(const Shape& shape) {
  return shape.size() <= 2 ? Shape{} : Shape(shape.begin(), shape.end() - 2);
}

Result<CudaPrepared> prepare_matmul(CudaKernelContext& ctx) {
  const Shape& a = ctx.input(0).shape();
  const Shape& b = ctx.input(1).shape();
  MatmulShape shape;
  shape.m = a.size() == 1 ? 1 : a[a.size() - 2];
  shape.k = a.back();
  shape.n = b.size() == 1 ? 1 : b.back();
  const Shape a_batch = batch_of(a);
  const Shape b_batch = batch_of(b);
  const Shape batch = ops::broadcast_shapes(a_batch, b_batch);
  auto state = std::make_unique<MatmulState>();
  if (element_count(b_batch) == 1 && a_batch == batch) {
    shape.m *= element_count(batch);  // one B for every batch entry: a single tall product
  } else if (a_batch == b_batch || element_count(a_batch) == 1 || element_count(b_batch) == 1) {
    shape.batch = element_count(batch);
    shape.stride_a = element_count(a_batch) == 1 ? 0 : shape.m * shape.k;
    shape.stride_b = element_count(b_batch) == 1 ? 0 : shape.k * shape.n;
    shape.stride_y = shape.m * shape.n;
  } else {
    ops::for_each_broadcast(batch,
                            {ops::broadcast_strides(a_batch, batch), ops::broadcast_strides(b_batch, batch)},
                            [&](std::int64_t, const std::vector<std::int64_t>& offsets) {
                              state->a_offsets.push_back(offsets[0] * shape.m * shape.k);
                              state->b_offsets.push_back(offsets[1] * shape.k * shape.n);
                            });
  }
  FOVEA_TRY(state->product.create(ctx, ctx.input(0).dtype(), shape));
  // Timed on the first of the products where there are several.
  FOVEA_TRY(state->product.choose_fastest(
      ctx, LtCall{.a = ctx.input(0).raw(), .b = ctx.input(1).raw(), .y = ctx.output(0).raw()}));
  return CudaPrepared{std::move(state), kLtWorkspaceBytes};
}

Status run_matmul(CudaKernelContext& ctx) {
  const auto& state = ctx.state<MatmulState>();
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (state.a_offsets.empty()) return state.product.run(ctx, a.raw(), b.raw(), y.raw(), 1.0f, 0.0f);
  const std::size_t element = data_type_size(a.dtype());
  const std::int64_t matrix = y.dim(y.rank() - 1) * (y.rank() > 1 ? y.dim(y.rank() - 2) : 1);
  for (std::size_t i = 0; i < state.a_offsets.size(); ++i) {
    FOVEA_TRY(state.product.run(
        ctx, static_cast<const std::byte*>(a.raw()) + state.a_offsets[i] * element,
        static_cast<const std::byte*>(b.raw()) + state.b_offsets[i] * element,
        static_cast<std::byte*>(y.raw()) + static_cast<std::int64_t>(i) * matrix * element, 1.0f, 0.0f));
  }
  return Status::ok();
}

// ---- Gemm and fovea.Gemm ----------------------------------------------------------------------

constexpr int kC = 2, kResidual = 3;  // fovea.Gemm's R: the output's shape, added last

struct GemmState final : public CudaNodeState {
  std::unique_ptr<LtMatmul> product;
  float alpha = 1;
  // beta * C (broadcast) + R written into Y before the product, which then adds Y; false where C
  // is cuBLASLt's bias epilogue and R its C operand, or where there are neither.
  bool prefill = false;
  float beta = 0;  // C's factor in the prefill
  // fovea.Gemm's GELU as a pass over Y after the product: where cuBLASLt has no algorithm with its
  // GELU epilogue for the product (none needed where it has one).
  bool gelu_pass = false;
};

bool has_residual(const CudaKernelContext& ctx) {
  return ctx.input_count() > kResidual && ctx.has_input(kResidual);
}

// C as cuBLASLt's bias epilogue takes it: a row of N values (shape [N] or [1, N]) added with
// beta 1, in float32 or float16, so Y = alpha A B + C needs no pass to broadcast C first (a
// classifier's bias; a linear layer's, which fuse_matmul_bias turns into a Gemm).
bool bias_epilogue(const CudaKernelContext& ctx, float beta, std::int64_t n) {
  if (!ctx.has_input(kC) || beta != 1.0f) return false;
  const Tensor& c = ctx.input(kC);
  const DataType dtype = c.dtype();
  const bool row = c.rank() == 1 || (c.rank() == 2 && c.dim(0) == 1);
  return row && c.dim(c.rank() - 1) == n && n > 1 &&
         (dtype == DataType::kFloat32 || dtype == DataType::kFloat16);
}

// Y[M,N] = beta * C broadcast (C is [M or 1, N or 1] after padding its rank to 2; null: none)
// + R (null: none), summed in float (double for double).
template <typename T>
__global__ void prefill_kernel(const T* c, float beta, const T* r, T* y, std::int64_t m, std::int64_t n,
                               std::int64_t c_rows, std::int64_t c_cols) {
  using Sum = std::conditional_t<std::is_same_v<T, double>, double, float>;
  FOVEA_GRID_STRIDE_LOOP(i, m * n) {
    const std::int64_t row = i / n;
    const std::int64_t col = i - row * n;
    Sum sum = r != nullptr ? static_cast<Sum>(r[i]) : Sum(0);
    if (c != nullptr) {
      sum += static_cast<Sum>(beta) *
             static_cast<Sum>(c[(c_rows == 1 ? 0 : row) * c_cols + (c_cols == 1 ? 0 : col)]);
    }
    y[i] = static_cast<T>(sum);
  }
}

// The product's operands as run_gemm passes them, after its prefill (if any) of Y.
LtCall gemm_call(CudaKernelContext& ctx, const GemmState& state) {
  LtCall call{
      .a = ctx.input(0).raw(), .b = ctx.input(1).raw(), .y = ctx.output(0).raw(), .alpha = state.alpha};
  if (state.prefill) {
    call.beta = 1.0f;  // C is Y itself
  } else if (has_residual(ctx)) {
    call.beta = 1.0f;
    call.c = ctx.input(kResidual).raw();
  }
  return call;
}

Result<CudaPrepared> prepare_gemm(CudaKernelContext& ctx) {
  const Node& node = ctx.node();
  FOVEA_ASSIGN_OR_RETURN(std::int64_t trans_a, node.attr_int("transA", 0));
  FOVEA_ASSIGN_OR_RETURN(std::int64_t trans_b, node.attr_int("transB", 0));
  auto state = std::make_unique<GemmState>();
  FOVEA_ASSIGN_OR_RETURN(state->alpha, node.attr_float("alpha", 1.0f));
  FOVEA_ASSIGN_OR_RETURN(float beta, node.attr_float("beta", 1.0f));
  state->beta = ctx.has_input(kC) ? beta : 0.0f;
  const Tensor& y = ctx.output(0);
  MatmulShape shape;
  shape.m = y.dim(0);
  shape.n = y.dim(1);
  shape.k = ctx.input(0).dim(trans_a != 0 ? 0 : 1);
  shape.trans_a = trans_a != 0;
  shape.trans_b = trans_b != 0;
  FOVEA_ASSIGN_OR_RETURN(const bool gelu, ops::gemm_applies_gelu(node));
  const bool bias = bias_epilogue(ctx, state->beta, shape.n);
  if (bias || gelu) {
    auto fused = std::make_unique<LtMatmul>();
    const LtEpilogue epilogue{.bias = bias ? ctx.input(kC).raw() : nullptr, .gelu = gelu};
    if (fused->create(ctx, ctx.input(0).dtype(), shape, epilogue).is_ok()) {
      state->product = std::move(fused);
      // R, if any, is cuBLASLt's C beside a bias epilogue; without one, C and R are prefilled.
      state->prefill = !bias && (state->beta != 0.0f || has_residual(ctx));
    }
    // No algorithm with the epilogue for this product: C is broadcast into Y first, as any C is, and
    // the GELU is a pass of its own.
  }
  if (state->product == nullptr) {
    state->prefill = state->beta != 0.0f || has_residual(ctx);
    state->gelu_pass = gelu;
    state->product = std::make_unique<LtMatmul>();
    FOVEA_TRY(state->product->create(ctx, ctx.input(0).dtype(), shape));
  }
  FOVEA_TRY(state->product->choose_fastest(ctx, gemm_call(ctx, *state)));
  return CudaPrepared{std::move(state), kLtWorkspaceBytes};
}

Status prefill(CudaKernelContext& ctx, const GemmState& state) {
  Tensor& y = ctx.output(0);
  const Tensor* c = state.beta != 0.0f ? &ctx.input(kC) : nullptr;
  const void* r = has_residual(ctx) ? ctx.input(kResidual).raw() : nullptr;
  const std::int64_t c_rows = c != nullptr && c->rank() == 2 ? c->dim(0) : 1;
  const std::int64_t c_cols = c != nullptr && c->rank() >= 1 ? c->dim(c->rank() - 1) : 1;
  const std::int64_t m = y.dim(0);
  const std::int64_t n = y.dim(1);
  const bool ok =
      dispatch_device<DataType::kFloat32, DataType::kFloat16, DataType::kFloat64>(y.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        prefill_kernel<T><<<grid_for(m * n), kBlockSize, 0, ctx.stream()>>>(
            c != nullptr ? static_cast<const T*>(c->raw()) : nullptr, state.beta, static_cast<const T*>(r),
            static_cast<T*>(y.raw()), m, n, c_rows, c_cols);
      });
  FOVEA_CHECK(ok);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

Status run_gemm(CudaKernelContext& ctx) {
  const auto& state = ctx.state<GemmState>();
  if (state.prefill) FOVEA_TRY(prefill(ctx, state));
  FOVEA_TRY(state.product->run(ctx, gemm_call(ctx, state)));
  if (!state.gelu_pass) return Status::ok();
  Tensor& y = ctx.output(0);
  return dispatch_elementwise<FOVEA_CUDA_FLOAT_TYPES>(ctx, y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return launch_elementwise<T, T>(ctx, GeluTanh{}, y, y);
  });
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "MatMul", .prepare = prepare_matmul, .run = run_matmul});
FOVEA_REGISTER_CUDA_OP({.op_type = "Gemm", .prepare = prepare_gemm, .run = run_gemm});
FOVEA_REGISTER_CUDA_OP({.domain = "fovea", .op_type = "Gemm", .prepare = prepare_gemm, .run = run_gemm});

}  // namespace fovea::runtime::cuda
