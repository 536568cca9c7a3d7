// One cuBLASLt product, planned once: MatMul and Gemm (ops/matmul.cu) and the 1x1 convolutions
// that run as GEMMs (ops/conv.cu). Row-major products are computed as their column-major transposes
// (Y^T = B^T A^T), so no operand is ever copied. float16 runs on tensor cores with float32
// accumulation; float32 uses CUBLAS_COMPUTE_32F, never TF32, so it matches the CPU reference. The
// algorithm is cuBLASLt's heuristic pick for the exact shapes and epilogue.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/cuda/cuda_libraries.h"
#include "runtime/cuda/cuda_op.h"

namespace fovea::runtime::cuda {

// Scratch for cuBLASLt's split-K and stream-K algorithms.
constexpr std::size_t kLtWorkspaceBytes = std::size_t{32} << 20;

// One row-major product Y[M,N] = alpha * op(A) op(B) + beta * C, repeated over `batch` matrices at
// fixed strides (0 reuses one operand).
struct MatmulShape {
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::int64_t batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_y = 0;
};

// What cuBLASLt adds after the product, in its epilogue: a bias row (device memory, N elements of
// the data type, fixed for the plan's life) added to every row of Y, then a ReLU.
struct LtEpilogue {
  const void* bias = nullptr;
  bool relu = false;
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

class LtMatmul final : public CudaNodeState {
 public:
  LtMatmul() = default;
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  ~LtMatmul() override;

  // kUnsupported when cuBLASLt has no algorithm for the product with that epilogue.
  Status create(CudaKernelContext& ctx, DataType dtype, const MatmulShape& shape,
                const LtEpilogue& epilogue = {});
  Status run(CudaKernelContext& ctx, const LtCall& call) const;
  Status run(CudaKernelContext& ctx, const void* a, const void* b, void* y, float alpha, float beta) const {
    return run(ctx, LtCall{.a = a, .b = b, .y = y, .alpha = alpha, .beta = beta});
  }

 private:
  Status layout(cublasLtMatrixLayout_t* out, cudaDataType_t type, std::uint64_t rows, std::uint64_t cols,
                std::int64_t ld, std::int64_t stride) const;

  MatmulShape shape_;
  DataType dtype_ = DataType::kFloat32;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, y_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace fovea::runtime::cuda
