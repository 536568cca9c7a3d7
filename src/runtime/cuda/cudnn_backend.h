// cuDNN's backend (graph) API in RAII form, for the fused operations fovea plans through it
// (cudnn_attention.h; cuDNN's fused matmul + GELU was tried through it and was slower than cuBLASLt
// and a GELU pass, docs/perf.md): descriptors and their attributes, an operation graph, the
// heuristic's engine configurations and the execution plans they finalize into. Every failure is
// kUnsupported naming the step and cuDNN's reason: a graph cuDNN does not take means running
// fovea's own kernels instead, not an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/status.h"
#include "runtime/cuda/cuda_libraries.h"

namespace fovea::runtime::cuda::backend {

struct DescriptorDeleter {
  void operator()(cudnnBackendDescriptor_t desc) const { cudnnBackendDestroyDescriptor(desc); }
};
using Descriptor = std::unique_ptr<std::remove_pointer_t<cudnnBackendDescriptor_t>, DescriptorDeleter>;

Result<Descriptor> make(cudnnBackendDescriptorType_t type, const char* what);
Status set(const Descriptor& desc, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
           std::int64_t count, const void* values, const char* what);
Status set_descriptor(const Descriptor& desc, cudnnBackendAttributeName_t name, const Descriptor& value,
                      const char* what);
Status finalize(const Descriptor& desc, const char* what);

// A tensor: `sizes` and `strides` in elements, `uid` its name in the variant pack. Virtual tensors
// live only inside a fused kernel; by-value ones are host scalars passed with each run.
struct TensorSpec {
  cudnnDataType_t type = CUDNN_DATA_HALF;
  std::vector<std::int64_t> sizes, strides;
  std::int64_t uid = 0;
  bool is_virtual = false;
  bool by_value = false;
};
Result<Descriptor> tensor(const TensorSpec& spec, const char* what);

// An execution plan with every descriptor it refers to (tensors, operations, the graph and the
// engine configuration), kept alive as long as it.
class Plan {
 public:
  Plan(Descriptor plan, Descriptor config, std::shared_ptr<const std::vector<Descriptor>> graph,
       std::size_t workspace_bytes)
      : graph_(std::move(graph)),
        config_(std::move(config)),
        plan_(std::move(plan)),
        workspace_bytes_(workspace_bytes) {}
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  std::size_t workspace_bytes() const { return workspace_bytes_; }
  // Enqueues the plan on the handle's stream with the variant pack's pointers by uid.
  Status execute(cudnnHandle_t handle, const std::vector<std::int64_t>& uids,
                 const std::vector<void*>& pointers, void* workspace) const;

 private:
  // Destroyed in reverse: the plan before its configuration, both before the graph they refer to.
  std::shared_ptr<const std::vector<Descriptor>> graph_;  // the tensors, operations and graph
  Descriptor config_;
  Descriptor plan_;
  std::size_t workspace_bytes_ = 0;
};

// Plans for the graph of `ops` (which the plans keep, with `kept`: the tensors and anything else the
// operations refer to), one per engine configuration cuDNN's heuristic proposes and that finalizes,
// best first, at most `most`. Empty (an error) when none does.
Result<std::vector<std::shared_ptr<Plan>>> plans(cudnnHandle_t handle, std::vector<Descriptor> ops,
                                                 std::vector<Descriptor> kept, std::size_t most);

}  // namespace fovea::runtime::cuda::backend
