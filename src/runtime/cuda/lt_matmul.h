// One cuBLASLt product, planned once: MatMul and Gemm (ops/matmul.cu) and the 1x1 convolutions
// that run as GEMMs (ops/conv.cu). Row-major products are computed as their column-major transposes
// (Y^T = B^T A^T), so no operand is ever copied. float16 runs on tensor cores with float32
// accumulation; float32 uses CUBLAS_COMPUTE_32F, never TF32, so it matches the CPU reference. The
// algorithm is the fastest of cuBLASLt's first heuristic picks for the exact shapes and epilogue,
// timed at plan time as the plan runs it (choose_fastest), or the first pick without a search.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_libraries.h"
#include "runtime/cuda/cuda_op.h"

namespace fovea::runtime::cuda {

// Scratch for cuBLASLt's split-K and stream-K algorithms.
constexpr std::size_t kLtWorkspaceBytes = std::size_t{32} << 20;

// How many of cuBLASLt's heuristic picks a product's search times. Its first pick is not always its
// fastest: the tile that suits the shape best depends on how the tiles fill the SMs' waves, which
// the heuristic estimates, and on the epilogue's reads (a residual as C).
constexpr int kLtCandidates = 8;

// One row-major product Y[M,N] = alpha * op(A) op(B) + beta * C, repeated over `batch` matrices at
// fixed strides (0 reuses one operand).
struct MatmulShape {
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::int64_t batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_y = 0;
};

// What cuBLASLt adds after the product, in its epilogue: a bias row (device memory, N elements of
// the data type, fixed for the plan's life) added to every row of Y, then a ReLU or GELU's tanh form
// (cuBLASLt's GELU; not both).
struct LtEpilogue {
  const void* bias = nullptr;
  bool relu = false;
  bool gelu = false;
};

// One call: Y = epilogue(alpha * op(A) op(B) + beta * C). C is laid out as Y (Y itself when null);
// the scratch is ctx's workspace unless given.
struct LtCall {
  const void* a = nullptr;
  const void* b = nullptr;
  void* y = nullptr;
  float alpha = 1.0f;
  float beta = 0.0f;
  const void* c = nullptr;
  void* scratch = nullptr;
  std::size_t scratch_bytes = 0;
};

// The algorithm cache's key for a product (LtMatmul::choose_fastest): the machine, cuBLASLt's version
// and everything the heuristic's list depends on. `reads_c`: beta is not zero, so the epilogue reads
// C, which changes which tile is fastest. Only once cuBLASLt is loaded (an executor exists).
std::string lt_problem_key(DataType dtype, const MatmulShape& shape, cublasLtEpilogue_t epilogue,
                           bool reads_c);

class LtMatmul final : public CudaNodeState {
 public:
  LtMatmul() = default;
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  ~LtMatmul() override;

  // Plans the product with cuBLASLt's first heuristic pick; kUnsupported when cuBLASLt has no
  // algorithm for the product with that epilogue.
  Status create(CudaKernelContext& ctx, DataType dtype, const MatmulShape& shape,
                const LtEpilogue& epilogue = {});
  // prepare() only: times up to kLtCandidates of the heuristic's picks on `call` (its operands real
  // device buffers; Y is written) and keeps the fastest. The choice is cached per product and
  // machine beside the convolutions' (conv_algorithm_cache.h) and shares their search budget; past
  // the budget, the first pick stays. Later calls do nothing.
  Status choose_fastest(CudaKernelContext& ctx, const LtCall& call);
  Status run(CudaKernelContext& ctx, const LtCall& call) const;
  Status run(CudaKernelContext& ctx, const void* a, const void* b, void* y, float alpha, float beta) const {
    return run(ctx, LtCall{.a = a, .b = b, .y = y, .alpha = alpha, .beta = beta});
  }

 private:
  Status layout(cublasLtMatrixLayout_t* out, cudaDataType_t type, std::uint64_t rows, std::uint64_t cols,
                std::int64_t ld, std::int64_t stride) const;

  MatmulShape shape_;
  DataType dtype_ = DataType::kFloat32;
  cublasLtEpilogue_t epilogue_ = CUBLASLT_EPILOGUE_DEFAULT;
  // The heuristic's picks, best first by its estimate, until choose_fastest() has chosen.
  std::vector<cublasLtMatmulAlgo_t> candidates_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, y_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace fovea::runtime::cuda
