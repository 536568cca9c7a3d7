// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv on the CPU: the reference the CUDA kernel
// is checked against. Each batch entry of the product (integer_linear_util.h) is widened to int32 with
// its zero points subtracted (a convolution's input through im2col, whose padding is zero after the
// subtraction), multiplied in int32 and written through the epilogue the CUDA kernel also uses.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/ops/integer_linear_util.h"
#include "runtime/ops/op_util.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

// acc[rows x columns] = a[rows x depth] b[depth x columns] in int32, the operands already less their
// zero points; rows in parallel. No overflow: infer_integer_linear caps the depth.
void integer_gemm(const IntegerProblem& p, const std::vector<std::int32_t>& a,
                  const std::vector<std::int32_t>& b, std::vector<std::int32_t>& acc) {
  parallel_for(p.rows, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      std::int32_t* row = acc.data() + i * p.columns;
      std::fill(row, row + p.columns, 0);
      for (std::int64_t k = 0; k < p.depth; ++k) {
        const std::int32_t a_ik = a[static_cast<std::size_t>(i * p.depth + k)];
        const std::int32_t* b_row = b.data() + k * p.columns;
        for (std::int64_t j = 0; j < p.columns; ++j) row[j] += a_ik * b_row[j];
      }
    }
  });
}

// Rows [rows x depth] of A starting at element `first` of the operand, less the zero point of row
// `row_base + i`.
void widen_rows(const QuantizedOperand& operand, std::int64_t first, std::int64_t row_base,
                const IntegerProblem& p, std::vector<std::int32_t>& out) {
  for (std::int64_t i = 0; i < p.rows; ++i) {
    const std::int32_t zero = operand.zero(row_base + i);
    for (std::int64_t k = 0; k < p.depth; ++k) {
      out[static_cast<std::size_t>(i * p.depth + k)] = operand.at(first + i * p.depth + k) - zero;
    }
  }
}

// Entry z's products written to the output (element (z, i, j) of [batch, rows, columns]); per-row
// parameters are at row_base + i.
void store_entry(const IntegerOutput& output, const IntegerProblem& p, std::int64_t z, std::int64_t row_base,
                 const std::vector<std::int32_t>& acc) {
  for (std::int64_t i = 0; i < p.rows; ++i) {
    for (std::int64_t j = 0; j < p.columns; ++j) {
      output.store((z * p.rows + i) * p.columns + j, acc[static_cast<std::size_t>(i * p.columns + j)],
                   row_base + i, j);
    }
  }
}

IntegerOperands operands_of(KernelContext& ctx, const IntegerLinearInputs& in) {
  return integer_operands(
      in, [&](int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }, ctx.output(0));
}

Status run_matmul_like(KernelContext& ctx, const IntegerLinearInputs& in) {
  const MatmulGeometry g = matmul_geometry(ctx.input(in.x).shape(), ctx.input(in.w).shape());
  const IntegerProblem& p = g.problem;
  const IntegerOperands operands = operands_of(ctx, in);
  std::vector<std::int32_t> a(static_cast<std::size_t>(p.rows * p.depth));
  std::vector<std::int32_t> b(static_cast<std::size_t>(p.depth * p.columns));
  std::vector<std::int32_t> acc(static_cast<std::size_t>(p.rows * p.columns));
  for_each_broadcast(g.batch, {broadcast_strides(g.a_batch, g.batch), broadcast_strides(g.b_batch, g.batch)},
                     [&](std::int64_t z, const std::vector<std::int64_t>& matrices) {
                       widen_rows(operands.a, matrices[0] * p.rows * p.depth, 0, p, a);
                       const std::int64_t b_first = matrices[1] * p.depth * p.columns;
                       for (std::int64_t k = 0; k < p.depth; ++k) {
                         for (std::int64_t j = 0; j < p.columns; ++j) {
                           b[static_cast<std::size_t>(k * p.columns + j)] =
                               operands.b.at(b_first + k * p.columns + j) - operands.b.zero(j);
                         }
                       }
                       integer_gemm(p, a, b, acc);
                       store_entry(operands.output, p, z, 0, acc);
                     });
  return Status::ok();
}

Status run_conv_like(KernelContext& ctx, const IntegerLinearInputs& in) {
  FOVEA_ASSIGN_OR_RETURN(const ConvGeometry g,
                         conv_geometry(ctx.inference(), ctx.input(in.x).shape(), ctx.input(in.w).shape()));
  const IntegerProblem& p = g.problem;
  const IntegerOperands operands = operands_of(ctx, in);
  std::vector<std::int32_t> a(static_cast<std::size_t>(p.rows * p.depth));
  std::vector<std::int32_t> b(static_cast<std::size_t>(p.depth * p.columns));
  std::vector<std::int32_t> acc(static_cast<std::size_t>(p.rows * p.columns));
  const std::int32_t x_zero = operands.b.zero(0);
  for (std::int64_t z = 0; z < p.batch; ++z) {
    const std::int64_t image = z / g.groups;
    const std::int64_t group = z % g.groups;
    const std::int64_t row_base = group * p.rows;  // the group's first output channel
    widen_rows(operands.a, row_base * p.depth, row_base, p, a);
    for (std::int64_t k = 0; k < p.depth; ++k) {
      for (std::int64_t j = 0; j < p.columns; ++j) {
        std::int64_t offset = 0;
        b[static_cast<std::size_t>(k * p.columns + j)] =
            g.window.source(image, group, k, j, &offset) ? operands.b.at(offset) - x_zero : 0;
      }
    }
    integer_gemm(p, a, b, acc);
    store_entry(operands.output, p, z, row_base, acc);
  }
  return Status::ok();
}

template <const IntegerLinearInputs& kInputs>
Status infer(InferContext& ctx) {
  return infer_integer_linear(ctx, kInputs);
}

template <const IntegerLinearInputs& kInputs>
Status run(KernelContext& ctx) {
  return kInputs.convolution ? run_conv_like(ctx, kInputs) : run_matmul_like(ctx, kInputs);
}

// Two operations per product term: each output element sums `depth` of them.
template <const IntegerLinearInputs& kInputs>
double integer_linear_flops(const Node&, const std::vector<Shape>& inputs,
                            const std::vector<Shape>& outputs) {
  const Shape& w = inputs[static_cast<std::size_t>(kInputs.w)];
  const double depth = kInputs.convolution
                           ? static_cast<double>(element_count(Shape(w.begin() + 1, w.end())))
                           : static_cast<double>(inputs[static_cast<std::size_t>(kInputs.x)].back());
  return 2.0 * static_cast<double>(element_count(outputs[0])) * depth;
}

// The scales stay float32 in a float16 plan.
constexpr std::uint32_t kQLinearScales = (1u << 1) | (1u << 4) | (1u << 6);

}  // namespace

FOVEA_REGISTER_OP({.op_type = "MatMulInteger",
                   .min_inputs = 2,
                   .max_inputs = 4,
                   .infer = infer<kMatMulIntegerInputs>,
                   .run = run<kMatMulIntegerInputs>,
                   .flops = integer_linear_flops<kMatMulIntegerInputs>});
FOVEA_REGISTER_OP({.op_type = "QLinearMatMul",
                   .min_inputs = 8,
                   .max_inputs = 8,
                   .infer = infer<kQLinearMatMulInputs>,
                   .run = run<kQLinearMatMulInputs>,
                   .float32_inputs = kQLinearScales,
                   .flops = integer_linear_flops<kQLinearMatMulInputs>});
FOVEA_REGISTER_OP({.op_type = "ConvInteger",
                   .min_inputs = 2,
                   .max_inputs = 4,
                   .infer = infer<kConvIntegerInputs>,
                   .run = run<kConvIntegerInputs>,
                   .flops = integer_linear_flops<kConvIntegerInputs>});
FOVEA_REGISTER_OP({.op_type = "QLinearConv",
                   .min_inputs = 8,
                   .max_inputs = 9,
                   .infer = infer<kQLinearConvInputs>,
                   .run = run<kQLinearConvInputs>,
                   .float32_inputs = kQLinearScales,
                   .flops = integer_linear_flops<kQLinearConvInputs>});

}  // namespace fovea::runtime::ops
