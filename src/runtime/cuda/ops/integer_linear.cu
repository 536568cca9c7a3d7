// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv on CUDA: one tiled integer GEMM kernel
// for all four (integer_linear_util.h describes the shared problem). Each block computes a 64x64 tile
// of one batch entry; operand tiles are widened to int32 with their zero points subtracted as they are
// loaded into shared memory, accumulated in int32 (exact: shape inference caps the depth), and every
// element is written through the epilogue the CPU reference uses (int32, or requantized to 8 bits with
// the reference's float64 rounding), so results match it bit for bit. A convolution is an implicit GEMM:
// B's tile is read straight from x through Im2col (groups, strides, dilations and padding included).
//
// Correct first, not fast: plain int32 multiply-adds. DP4A or tensor-core IMMA kernels (or cuBLASLt's
// int8 products) plug in at launch() below, keeping IntegerOutput as their epilogue.
#include <algorithm>
#include <memory>
#include <string>

#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/ops/integer_linear_util.h"

namespace fovea::runtime::cuda {
namespace {

// The classic shared-memory tiling at a modest size: 256 threads, each accumulating a 4x4 block of
// a 64x64 output tile over 16-deep slices (two int32 tiles, 8 KiB of shared memory).
constexpr int kTile = 64;
constexpr int kTileDepth = 16;
constexpr int kThreadTile = 4;
constexpr int kThreadsPerSide = kTile / kThreadTile;
constexpr int kThreads = kThreadsPerSide * kThreadsPerSide;
// CUDA's limit on gridDim.y and gridDim.z; batch entries past it loop inside the grid.
constexpr std::int64_t kMaxGridYZ = 65535;

// Where batch entry z of the product reads its operands and per-row parameters.
struct Entry {
  std::int64_t a_first = 0;   // A's first element
  std::int64_t b_first = 0;   // B's first element (matrix products)
  std::int64_t row_base = 0;  // per-row parameters of row i are at row_base + i
  std::int64_t image = 0;     // convolutions
  std::int64_t group = 0;
};

// MatMul: B is a row-major matrix; the batch broadcasts as numpy's matmul does.
struct MatrixSource {
  BroadcastIndexer<2> batch;  // A's and B's matrix number for output matrix z

  __device__ Entry entry(std::int64_t z, const ops::IntegerProblem& p) const {
    std::int64_t matrices[2];
    batch.offsets(z, matrices);
    return Entry{.a_first = matrices[0] * p.rows * p.depth, .b_first = matrices[1] * p.depth * p.columns};
  }
  __device__ std::int32_t b_value(const Entry& e, const ops::QuantizedOperand& b,
                                  const ops::IntegerProblem& p, std::int64_t k, std::int64_t column) const {
    return b.at(e.b_first + k * p.columns + column) - b.zero(column);
  }
};

// Conv: A is the group's weights, B the input windows (implicit im2col).
struct ConvSource {
  ops::Im2col window;
  std::int64_t groups = 1;

  __device__ Entry entry(std::int64_t z, const ops::IntegerProblem& p) const {
    const std::int64_t group = z % groups;
    return Entry{
        .a_first = group * p.rows * p.depth, .row_base = group * p.rows, .image = z / groups, .group = group};
  }
  __device__ std::int32_t b_value(const Entry& e, const ops::QuantizedOperand& b, const ops::IntegerProblem&,
                                  std::int64_t k, std::int64_t column) const {
    std::int64_t offset = 0;
    return window.source(e.image, e.group, k, column, &offset) ? b.at(offset) - b.zero(0) : 0;
  }
};

template <typename Source>
__global__ void __launch_bounds__(kThreads)
    integer_gemm_kernel(ops::IntegerProblem p, ops::QuantizedOperand a, ops::QuantizedOperand b,
                        ops::IntegerOutput output, Source source) {
  __shared__ std::int32_t a_tile[kTileDepth][kTile];
  __shared__ std::int32_t b_tile[kTileDepth][kTile];
  const int tx = static_cast<int>(threadIdx.x) % kThreadsPerSide;
  const int ty = static_cast<int>(threadIdx.x) / kThreadsPerSide;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * kTile;
  const std::int64_t column0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  for (std::int64_t z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const Entry e = source.entry(z, p);
    std::int32_t acc[kThreadTile][kThreadTile] = {};
    for (std::int64_t k0 = 0; k0 < p.depth; k0 += kTileDepth) {
      // A's tile: consecutive threads along k, B's along columns, the contiguous dim of each.
      for (int t = static_cast<int>(threadIdx.x); t < kTile * kTileDepth; t += kThreads) {
        const std::int64_t row = row0 + t / kTileDepth;
        const std::int64_t k = k0 + t % kTileDepth;
        a_tile[t % kTileDepth][t / kTileDepth] =
            row < p.rows && k < p.depth ? a.at(e.a_first + row * p.depth + k) - a.zero(e.row_base + row) : 0;
      }
      for (int t = static_cast<int>(threadIdx.x); t < kTile * kTileDepth; t += kThreads) {
        const std::int64_t k = k0 + t / kTile;
        const std::int64_t column = column0 + t % kTile;
        b_tile[t / kTile][t % kTile] =
            column < p.columns && k < p.depth ? source.b_value(e, b, p, k, column) : 0;
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kTileDepth; ++kk) {
        std::int32_t a_values[kThreadTile];
        std::int32_t b_values[kThreadTile];
#pragma unroll
        for (int i = 0; i < kThreadTile; ++i) {
          a_values[i] = a_tile[kk][ty * kThreadTile + i];
          b_values[i] = b_tile[kk][tx * kThreadTile + i];
        }
#pragma unroll
        for (int i = 0; i < kThreadTile; ++i) {
#pragma unroll
          for (int j = 0; j < kThreadTile; ++j) acc[i][j] += a_values[i] * b_values[j];
        }
      }
      __syncthreads();
    }
    for (int i = 0; i < kThreadTile; ++i) {
      const std::int64_t row = row0 + ty * kThreadTile + i;
      for (int j = 0; j < kThreadTile; ++j) {
        const std::int64_t column = column0 + tx * kThreadTile + j;
        if (row < p.rows && column < p.columns) {
          output.store((z * p.rows + row) * p.columns + column, acc[i][j], e.row_base + row, column);
        }
      }
    }
  }
}

struct IntegerLinearState final : public CudaNodeState {
  ops::IntegerProblem problem;
  bool convolution = false;
  MatrixSource matrix;
  ConvSource conv;
};

Status check_grid(const CudaKernelContext& ctx, const ops::IntegerProblem& p) {
  if ((p.rows + kTile - 1) / kTile <= kMaxGridYZ) return Status::ok();
  return ctx.error(StatusCode::kUnsupported, "the product has ", std::to_string(p.rows),
                   " rows; the CUDA kernel takes up to ", std::to_string(kMaxGridYZ * kTile));
}

template <const ops::IntegerLinearInputs& kInputs>
Result<CudaPrepared> prepare_integer_linear(CudaKernelContext& ctx) {
  auto state = std::make_unique<IntegerLinearState>();
  const Shape& x = ctx.input(kInputs.x).shape();
  const Shape& w = ctx.input(kInputs.w).shape();
  state->convolution = kInputs.convolution;
  if (kInputs.convolution) {
    FOVEA_ASSIGN_OR_RETURN(const ops::ConvGeometry g, ops::conv_geometry(ctx.inference(), x, w));
    state->problem = g.problem;
    state->conv = ConvSource{.window = g.window, .groups = g.groups};
  } else {
    const ops::MatmulGeometry g = ops::matmul_geometry(x, w);
    if (g.batch.size() > static_cast<std::size_t>(kMaxRank)) {
      return ctx.error(StatusCode::kUnsupported, std::to_string(g.batch.size()),
                       " batch dims; the CUDA kernel takes up to ", std::to_string(kMaxRank));
    }
    state->problem = g.problem;
    const Shape* const operands[2] = {&g.a_batch, &g.b_batch};
    state->matrix = MatrixSource{make_broadcast_indexer<2>(g.batch, operands)};
  }
  FOVEA_TRY(check_grid(ctx, state->problem));
  return CudaPrepared{std::move(state), 0};
}

template <typename Source>
void launch(const CudaKernelContext& ctx, const ops::IntegerProblem& p, const ops::IntegerOperands& operands,
            const Source& source) {
  const dim3 grid(static_cast<unsigned>((p.columns + kTile - 1) / kTile),
                  static_cast<unsigned>((p.rows + kTile - 1) / kTile),
                  static_cast<unsigned>(std::min(p.batch, kMaxGridYZ)));
  integer_gemm_kernel<<<grid, kThreads, 0, ctx.stream()>>>(p, operands.a, operands.b, operands.output,
                                                           source);
}

template <const ops::IntegerLinearInputs& kInputs>
Status run_integer_linear(CudaKernelContext& ctx) {
  const auto& state = ctx.state<IntegerLinearState>();
  const ops::IntegerProblem& p = state.problem;
  if (p.batch == 0 || p.rows == 0 || p.columns == 0) return Status::ok();
  const ops::IntegerOperands operands = ops::integer_operands(
      kInputs, [&](int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }, ctx.output(0));
  if (state.convolution) {
    launch(ctx, p, operands, state.conv);
  } else {
    launch(ctx, p, operands, state.matrix);
  }
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "MatMulInteger",
                        .prepare = prepare_integer_linear<ops::kMatMulIntegerInputs>,
                        .run = run_integer_linear<ops::kMatMulIntegerInputs>});
FOVEA_REGISTER_CUDA_OP({.op_type = "QLinearMatMul",
                        .prepare = prepare_integer_linear<ops::kQLinearMatMulInputs>,
                        .run = run_integer_linear<ops::kQLinearMatMulInputs>});
FOVEA_REGISTER_CUDA_OP({.op_type = "ConvInteger",
                        .prepare = prepare_integer_linear<ops::kConvIntegerInputs>,
                        .run = run_integer_linear<ops::kConvIntegerInputs>});
FOVEA_REGISTER_CUDA_OP({.op_type = "QLinearConv",
                        .prepare = prepare_integer_linear<ops::kQLinearConvInputs>,
                        .run = run_integer_linear<ops::kQLinearConvInputs>});

}  // namespace fovea::runtime::cuda
