// cuDNN's fused attention (its SDPA forward operation, cuDNN 9.13.1 and later) for fovea.Attention
// in float16 without a bias: O = Softmax(scale * Q K^T) V over [B, H, T, D] operands at any strides.
// On Hopper it runs cuDNN's wgmma flash kernel, which took ViT-B's attention 0.55 ms a batch where
// fovea's mma.sync kernel took 1.68 (docs/perf.md, "Attention reading the head split"). Built
// through the backend API (no cudnn-frontend on Debian): one operation, its graph, the heuristic's
// engine configurations tried in order until one finalizes into an execution plan.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "runtime/cuda/cuda_libraries.h"

namespace fovea::runtime::cuda {

namespace backend {
class Plan;  // cudnn_backend.h
}

// One operand [B, H, T, D] in elements: its sizes and strides (D's stride must be 1).
struct AttentionOperand {
  std::array<std::int64_t, 4> sizes{};
  std::array<std::int64_t, 4> strides{};
};

struct CudnnAttentionShape {
  AttentionOperand q, k, v, o;  // K as rows of keys [B, H, Tk, D], not KT
  float scale = 1.0f;
  std::string key() const;  // identifies the plan: shapes, strides and scale
};

// Whether planning may take cuDNN's kernel (tests turn it off to check fovea's own on the same cases).
bool cudnn_attention_allowed();
void allow_cudnn_attention(bool allowed);
// How many plans this process built (a test's proof that cuDNN's path was taken).
int cudnn_attention_plans_built();

class CudnnAttention {
 public:
  // kUnsupported (with cuDNN's reason where it gives one) when the library is older than 9.13.1 or
  // no engine takes the shape; the caller then runs fovea's kernel.
  static Result<std::shared_ptr<const CudnnAttention>> create(cudnnHandle_t handle,
                                                              const CudnnAttentionShape& shape);
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  std::size_t workspace_bytes() const;
  // Enqueues the product on the handle's stream. Pointers 16-byte aligned.
  Status run(cudnnHandle_t handle, const void* q, const void* k, const void* v, void* o,
             void* workspace) const;

 private:
  CudnnAttention() = default;

  std::shared_ptr<const backend::Plan> plan_;
  float scale_ = 1.0f;
};

// The executor's plan for `shape` (CudaLibraries::attention_plans), made on first use; null where
// cuDNN refuses the shape, the reason logged at debug level naming `node`.
std::shared_ptr<const CudnnAttention> shared_cudnn_attention(CudaLibraries& libraries,
                                                             const CudnnAttentionShape& shape,
                                                             const std::string& node);

}  // namespace fovea::runtime::cuda
