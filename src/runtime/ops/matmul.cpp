// MatMul (numpy semantics: 1-D operands promoted, batch dims broadcast) and Gemm (transA, transB,
// alpha, beta, optional C broadcast to [M, N]), both on the shared gemm kernel. fovea.Gemm is Gemm
// with a fourth, optional input R of the output's shape added last, Y = alpha A B + beta C + R: a
// linear layer and the residual Add after it (fuse_gemm_residual, passes.h), which the CUDA
// executor adds inside the product (cuBLASLt's C) where it was a pass of its own. fovea.Gemm's
// `activation` "gelu_tanh" applies GELU's tanh form to alpha A B + beta C, before R (a node has one or
// the other): a linear layer and the GELU after it (fuse_gemm_gelu), cuBLASLt's GELU epilogue on CUDA.
#include <optional>

#include <fmt/format.h>

#include "runtime/ops/activation_util.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/op_util.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

// Below this many flops per matrix of a batch, the batch runs in parallel instead of each product.
constexpr double kSmallProductFlops = 1 << 20;

// A MatMul operand's matrix dims after 1-D promotion: rows, cols and the batch dims before them.
struct MatrixDims {
  Dims batch;
  Dim rows;
  Dim cols;
};

MatrixDims matrix_dims(const Dims& dims, bool is_left) {
  if (dims.size() == 1) {
    // [K] is a row vector on the left, a column vector on the right.
    return is_left ? MatrixDims{{}, Dim::known_size(1), dims[0]}
                   : MatrixDims{{}, dims[0], Dim::known_size(1)};
  }
  return MatrixDims{Dims(dims.begin(), dims.end() - 2), dims[dims.size() - 2], dims.back()};
}

Status infer_matmul(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {FOVEA_FLOAT_TYPES}));
  FOVEA_TRY(ctx.require_same_dtype(0, 1));
  FOVEA_TRY(ctx.require_rank(0, 1, kMaxTensorRank));
  FOVEA_TRY(ctx.require_rank(1, 1, kMaxTensorRank));
  const Dims* a = ctx.input_dims(0);
  const Dims* b = ctx.input_dims(1);
  if (a == nullptr || b == nullptr) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  const MatrixDims left = matrix_dims(*a, true);
  const MatrixDims right = matrix_dims(*b, false);
  if (left.cols.known() && right.rows.known() && left.cols.value != right.rows.value) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("inner dims differ: {} x {}", dims_string(*a), dims_string(*b)));
  }
  FOVEA_ASSIGN_OR_RETURN(std::optional<Dims> out, broadcast_dims(ctx, {&left.batch, &right.batch}));
  if (a->size() > 1) out->push_back(left.rows);
  if (b->size() > 1) out->push_back(right.cols);
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

template <typename T>
void run_matmul_typed(const Tensor& a, const Tensor& b, Tensor& y) {
  const MatrixDims left = matrix_dims(dims_of(a.shape()), true);
  const MatrixDims right = matrix_dims(dims_of(b.shape()), false);
  const std::int64_t m = left.rows.value;
  const std::int64_t k = left.cols.value;
  const std::int64_t n = right.cols.value;
  const Shape a_batch = shape_of(left.batch);
  const Shape b_batch = shape_of(right.batch);
  const Shape batch = broadcast_shapes(a_batch, b_batch);
  const T* a_data = a.data<T>();
  const T* b_data = b.data<T>();
  T* y_data = y.data<T>();
  if (element_count(b_batch) == 1 && a_batch == batch) {
    // One B for every batch entry: the batch folds into A's rows, one large product.
    gemm(element_count(batch) * m, n, k, T(1), MatrixView<T>{a_data, k, 1}, MatrixView<T>{b_data, n, 1}, T(0),
         y_data, n);
    return;
  }
  std::vector<std::int64_t> a_offsets;
  std::vector<std::int64_t> b_offsets;
  for_each_broadcast(batch, {broadcast_strides(a_batch, batch), broadcast_strides(b_batch, batch)},
                     [&](std::int64_t, const std::vector<std::int64_t>& offsets) {
                       a_offsets.push_back(offsets[0] * m * k);
                       b_offsets.push_back(offsets[1] * k * n);
                     });
  const auto count = static_cast<std::int64_t>(a_offsets.size());
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  parallel_for(count, flops < kSmallProductFlops ? 1 : count, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const auto at = static_cast<std::size_t>(i);
      gemm(m, n, k, T(1), MatrixView<T>{a_data + a_offsets[at], k, 1},
           MatrixView<T>{b_data + b_offsets[at], n, 1}, T(0), y_data + i * m * n, n);
    }
  });
}

Status run_matmul(KernelContext& ctx) {
  dispatch<FOVEA_FLOAT_TYPES>(ctx.input(0).dtype(), [&](auto tag) {
    run_matmul_typed<typename decltype(tag)::type>(ctx.input(0), ctx.input(1), ctx.output(0));
  });
  return Status::ok();
}

double matmul_flops(const Node&, const std::vector<Shape>& inputs, const std::vector<Shape>& outputs) {
  // Every output element is a K-long dot product.
  return 2.0 * static_cast<double>(element_count(outputs[0])) * static_cast<double>(inputs[0].back());
}

struct GemmAttributes {
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1;
  float beta = 1;
  bool gelu = false;  // fovea.Gemm's activation
};

Result<GemmAttributes> read_gemm_attributes(const Node& node) {
  GemmAttributes g;
  FOVEA_ASSIGN_OR_RETURN(std::int64_t trans_a, node.attr_int("transA", 0));
  FOVEA_ASSIGN_OR_RETURN(std::int64_t trans_b, node.attr_int("transB", 0));
  FOVEA_ASSIGN_OR_RETURN(g.alpha, node.attr_float("alpha", 1.0f));
  FOVEA_ASSIGN_OR_RETURN(g.beta, node.attr_float("beta", 1.0f));
  g.trans_a = trans_a != 0;
  g.trans_b = trans_b != 0;
  FOVEA_ASSIGN_OR_RETURN(g.gelu, gemm_applies_gelu(node));
  return g;
}

Status infer_gemm(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {FOVEA_FLOAT_TYPES}));
  FOVEA_TRY(ctx.require_same_dtype(0, 1));
  FOVEA_TRY(ctx.require_rank(0, 2, 2));
  FOVEA_TRY(ctx.require_rank(1, 2, 2));
  FOVEA_ASSIGN_OR_RETURN(GemmAttributes g, read_gemm_attributes(ctx.node()));
  const Dims* a = ctx.input_dims(0);
  const Dims* b = ctx.input_dims(1);
  const Dim m = a != nullptr ? (*a)[g.trans_a ? 1 : 0] : Dim::unknown();
  const Dim k = a != nullptr ? (*a)[g.trans_a ? 0 : 1] : Dim::unknown();
  const Dim k_b = b != nullptr ? (*b)[g.trans_b ? 1 : 0] : Dim::unknown();
  const Dim n = b != nullptr ? (*b)[g.trans_b ? 0 : 1] : Dim::unknown();
  if (k.known() && k_b.known() && k.value != k_b.value) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("inner dims differ: A is {}, B is {} (transA={}, transB={})",
                                 dims_string(*a), dims_string(*b), g.trans_a, g.trans_b));
  }
  const Dims out{m, n};
  if (ctx.has_input(2)) {
    FOVEA_TRY(ctx.require_same_dtype(0, 2));
    FOVEA_TRY(ctx.require_rank(2, 0, 2));
    // C broadcasts one way only: each of its dims is 1 or the output's.
    if (const Dims* c = ctx.input_dims(2); c != nullptr) {
      for (std::size_t d = 0; d < c->size(); ++d) {
        const Dim& cd = (*c)[d];
        const Dim& od = out[2 - c->size() + d];
        if (cd.known() && cd.value != 1 && od.known() && cd.value != od.value) {
          return ctx.error(
              StatusCode::kInvalidArgument,
              fmt::format("C {} does not broadcast to the output {}", dims_string(*c), dims_string(out)));
        }
      }
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status::ok();
}

constexpr int kResidual = 3;  // fovea.Gemm's R

Status infer_gemm_residual(InferContext& ctx) {
  FOVEA_TRY(infer_gemm(ctx));
  if (!ctx.has_input(kResidual)) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(const bool gelu, gemm_applies_gelu(ctx.node()));
  if (gelu) {
    return ctx.error(StatusCode::kInvalidArgument,
                     "an activation and a residual R in one node: the activation would come first");
  }
  FOVEA_TRY(ctx.require_same_dtype(0, kResidual));
  const Dims* r = ctx.input_dims(kResidual);
  const std::optional<Dims>& out = ctx.outputs()[0].dims;
  if (r != nullptr && out && *r != *out) {
    return ctx.error(
        StatusCode::kInvalidArgument,
        fmt::format("the residual R {} is not the output's shape {}", dims_string(*r), dims_string(*out)));
  }
  return Status::ok();
}

template <typename T>
void run_gemm_typed(KernelContext& ctx, const GemmAttributes& g) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  const std::int64_t m = y.dim(0);
  const std::int64_t n = y.dim(1);
  const std::int64_t k = a.dim(g.trans_a ? 0 : 1);
  T beta = T(0);
  if (ctx.has_input(2) && g.beta != 0.0f) {
    // Y starts as C broadcast to [M, N]; the product then accumulates onto beta * Y.
    const Tensor& c = ctx.input(2);
    const T* c_data = c.data<T>();
    for_each_broadcast(y.shape(), {broadcast_strides(c.shape(), y.shape())},
                       [&](std::int64_t i, const std::vector<std::int64_t>& offsets) {
                         y.data<T>()[i] = c_data[offsets[0]];
                       });
    beta = T(g.beta);
  }
  const MatrixView<T> a_view =
      g.trans_a ? MatrixView<T>{a.data<T>(), 1, m} : MatrixView<T>{a.data<T>(), k, 1};
  const MatrixView<T> b_view =
      g.trans_b ? MatrixView<T>{b.data<T>(), 1, k} : MatrixView<T>{b.data<T>(), n, 1};
  gemm(m, n, k, T(g.alpha), a_view, b_view, beta, y.data<T>(), n);
  if (g.gelu) {
    T* out = y.data<T>();
    for (std::int64_t i = 0; i < m * n; ++i) out[i] = gelu_tanh(out[i]);
  }
  if (ctx.input_count() > kResidual && ctx.has_input(kResidual)) {
    const T* r = ctx.input(kResidual).data<T>();
    T* out = y.data<T>();
    for (std::int64_t i = 0; i < m * n; ++i) out[i] += r[i];
  }
}

Status run_gemm(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(GemmAttributes g, read_gemm_attributes(ctx.node()));
  dispatch<FOVEA_FLOAT_TYPES>(ctx.input(0).dtype(),
                              [&](auto tag) { run_gemm_typed<typename decltype(tag)::type>(ctx, g); });
  return Status::ok();
}

double gemm_flops(const Node& node, const std::vector<Shape>& inputs, const std::vector<Shape>& outputs) {
  const Result<std::int64_t> trans_a_attr = node.attr_int("transA", 0);
  const bool trans_a = trans_a_attr.is_ok() && trans_a_attr.value() != 0;
  return 2.0 * static_cast<double>(element_count(outputs[0])) *
         static_cast<double>(inputs[0][trans_a ? 0 : 1]);
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "MatMul",
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .infer = infer_matmul,
                   .run = run_matmul,
                   .flops = matmul_flops});
FOVEA_REGISTER_OP({.op_type = "Gemm",
                   .min_inputs = 2,
                   .max_inputs = 3,
                   .infer = infer_gemm,
                   .run = run_gemm,
                   .flops = gemm_flops});
FOVEA_REGISTER_OP({.domain = "fovea",
                   .op_type = "Gemm",
                   .min_inputs = 2,
                   .max_inputs = 4,
                   .infer = infer_gemm_residual,
                   .run = run_gemm,
                   .flops = gemm_flops});

}  // namespace fovea::runtime::ops
