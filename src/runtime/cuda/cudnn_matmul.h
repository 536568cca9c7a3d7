// cuDNN's runtime-fused matrix product for fovea.Gemm with a GELU: Y = GELU(A B + bias) in one
// kernel, where cuBLASLt's GELU epilogue computes only the tanh approximation and ViT's erf form took
// a pass of its own over the MLP's widest activation (0.61 of ViT-B's 5.6 ms a batch on the H200,
// docs/perf.md). Built through the backend API (cudnn_backend.h) as a graph of a matmul and its
// pointwise epilogue; the caller times the plans against cuBLASLt and a GELU pass and keeps the
// faster.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/cuda/cuda_libraries.h"

namespace fovea::runtime::cuda {

namespace backend {
class Plan;  // cudnn_backend.h
}

// Y[M, N] = GELU(A[M, K] B + bias[N]) in float16, B [K, N] or [N, K] (trans_b), float accumulation.
struct FusedMatmulShape {
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_b = false;
  bool bias = false;
  bool gelu_tanh = false;  // the tanh approximation, else the erf form
};

// When planning takes cuDNN's fused product: never, where one of its plans is timed faster than
// cuBLASLt and the GELU pass (the default), or always where cuDNN has a plan (tests of its path).
enum class FusedGemmPolicy { kNever, kWhenFaster, kAlways };
FusedGemmPolicy fused_gemm_policy();
void set_fused_gemm_policy(FusedGemmPolicy policy);
// How many Gemms this process planned on cuDNN's fused product (a test's proof of the path).
int fused_gemms_chosen();
// The debug log's line for a node's timed choice: cuBLASLt and the GELU pass, then each plan.
void log_fused_gemm_timings(const std::string& node, float unfused_ms, const std::vector<float>& plan_ms,
                            int chosen);

// Up to `most` plans, best first by cuDNN's heuristic; kUnsupported where cuDNN fuses none.
Result<std::vector<std::shared_ptr<const backend::Plan>>> fused_matmul_plans(cudnnHandle_t handle,
                                                                             const FusedMatmulShape& shape,
                                                                             std::size_t most);

// Enqueues one plan on the handle's stream; bias null where the shape has none. Pointers 16-byte
// aligned.
Status run_fused_matmul(const backend::Plan& plan, cudnnHandle_t handle, const void* a, const void* b,
                        const void* bias, void* y, void* workspace);

}  // namespace fovea::runtime::cuda
