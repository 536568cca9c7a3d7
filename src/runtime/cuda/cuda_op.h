// How an op runs on CUDA: one CudaOpDef per op type, registered next to its kernels with
// FOVEA_REGISTER_CUDA_OP. The CPU OpDef (op.h) stays the op's definition (arity, shape inference,
// reference kernel); a CudaOpDef only adds the device implementation, so shapes are never inferred
// twice.
//
//   FOVEA_REGISTER_CUDA_OP({.op_type = "Relu", .run = run_relu_cuda});
//
// Plan time: prepare() (optional) sees the node with concrete shapes and real device buffers; it
// picks algorithms, builds descriptors and states how much workspace run() needs. Run time: run()
// only enqueues work on ctx.stream(). It must not allocate, synchronize the host or read device
// memory on the host, because the executor captures the whole run in a CUDA graph and replays it.
// An output whose shape depends on the data (NonMaxSuppression's selection) is planned at the
// largest shape it can take, which the op's bound_output() gives; run() writes the rows it filled
// to output_rows(i), a device count, so that the run stays in the graph with no host round trip.
// Only the first dimension varies.
//
// Inputs and outputs are Tensors whose data() is device memory, laid out densely in row-major
// order like the CPU executor's. Inputs that are plan-time constants (weights, folded shape
// tensors) are also readable on the host through host_constant(), for parameters such as Reshape's
// shape or Resize's scales.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/cuda_raii.h"
#include "core/cuda_stream.h"
#include "core/status.h"
#include "runtime/op.h"

namespace fovea::runtime::cuda {

struct CudaLibraries;  // cuDNN and cuBLASLt handles (cuda_libraries.h), bound to the run's stream

// The scratch prepare() searches in (cuDNN's Find runs its candidates there): one buffer for the
// whole plan, grown when a node's search needs more, freed once every node is prepared.
class SearchWorkspace {
 public:
  SearchWorkspace() = default;
  SearchWorkspace(const SearchWorkspace&) = delete;
  SearchWorkspace& operator=(const SearchWorkspace&) = delete;

  // At least `bytes` long afterwards, or false where the device cannot spare them (the buffer then
  // stays as it was: a search makes do with the algorithms that fit).
  bool reserve(std::size_t bytes);
  void* data() const { return memory_.get(); }
  std::size_t bytes() const { return bytes_; }
  int allocations() const { return allocations_; }  // cudaMalloc calls made, for the executor's count

 private:
  DeviceMemory memory_;
  std::size_t bytes_ = 0;
  int allocations_ = 0;
};

// What prepare() leaves for run(): op-specific (cuDNN descriptors, the chosen algorithm...).
class CudaNodeState {
 public:
  virtual ~CudaNodeState() = default;
};

class CudaKernelContext {
 public:
  CudaKernelContext(const Graph* graph, const Node& node, std::vector<Tensor> inputs,
                    std::vector<const Tensor*> host_constants, std::vector<Tensor> outputs,
                    std::vector<std::int64_t*> output_rows = {});

  const Node& node() const { return node_; }
  int opset() const { return node_.opset; }
  int input_count() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const;
  // Device memory. An input past the node's last, or omitted, is an empty Tensor.
  const Tensor& input(int i) const;
  // The host copy of input i when it is a plan-time constant; nullptr otherwise.
  const Tensor* host_constant(int i) const;
  int output_count() const { return static_cast<int>(outputs_.size()); }
  // Device memory, already allocated with the shape inference gave (bound_output()'s for a
  // data-dependent output).
  Tensor& output(int i);
  // For a data-dependent output: one device int64 where run() writes how many rows of output(i)
  // it filled. nullptr for outputs of static shape.
  std::int64_t* output_rows(int i) const;
  // Shape inference's view of the node (dtypes, concrete shapes, constant values), so that kernels
  // derive their parameters through the checks the CPU op already made.
  InferContext inference() const;

  cudaStream_t stream() const { return stream_; }
  CudaLibraries& libraries() const { return *libraries_; }
  // Scratch device memory of the size prepare() asked for, shared by every node of the plan (nodes
  // run one after another on one stream).
  void* workspace() const { return workspace_; }
  std::size_t workspace_bytes() const { return workspace_bytes_; }
  // prepare() only: makes workspace() at least `bytes` long for a search whose candidates need
  // more than it has. False where it cannot grow (no search buffer bound, or the device cannot
  // spare the bytes); workspace() then stays as it was.
  bool reserve_workspace(std::size_t bytes);
  // prepare()'s state, cast to the op's type.
  template <typename State>
  State& state() const {
    return static_cast<State&>(*state_);
  }

  // The executor binds these before prepare() and run().
  void bind(cudaStream_t stream, CudaLibraries* libraries, void* workspace, std::size_t workspace_bytes,
            CudaNodeState* state);
  // Before prepare(): workspace() is `search`'s buffer, which reserve_workspace() grows.
  void bind_search(cudaStream_t stream, CudaLibraries* libraries, SearchWorkspace* search);
  // An error naming the model, the node and its op.
  template <typename... Parts>
  Status error(StatusCode code, Parts&&... parts) const {
    return make_error(code, graph_ == nullptr ? std::string() : graph_->where(), node_.describe(), ": ",
                      std::forward<Parts>(parts)...);
  }

 private:
  const Graph* graph_;
  const Node& node_;
  std::vector<Tensor> inputs_;
  std::vector<const Tensor*> host_constants_;
  std::vector<Tensor> outputs_;
  std::vector<std::int64_t*> output_rows_;
  cudaStream_t stream_ = nullptr;
  CudaLibraries* libraries_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  SearchWorkspace* search_ = nullptr;
  CudaNodeState* state_ = nullptr;
};

struct CudaPrepared {
  std::unique_ptr<CudaNodeState> state;
  std::size_t workspace_bytes = 0;
};

struct CudaOpDef {
  std::string_view domain;  // "" for ONNX's default domain, as in OpDef
  std::string_view op_type;
  Result<CudaPrepared> (*prepare)(CudaKernelContext&) = nullptr;
  Status (*run)(CudaKernelContext&) = nullptr;
  // Output 0 is input 0's bytes under another shape (Reshape, Flatten, Squeeze, Unsqueeze,
  // Identity, Dropout): the executor places it there and never calls run().
  bool aliases_input = false;
  // For ops with a data-dependent output: the largest shape output `output` can take, from the
  // node's input shapes and plan-time constants. The executor places the output at this shape;
  // without the hook such an op cannot run on CUDA.
  Result<Shape> (*bound_output)(const InferContext& ctx, int output) = nullptr;
  // Why the kernel cannot take the node at its shapes ("" when it can): asked before planning, so
  // that a session with a CPU tail runs such a node there instead of failing in prepare().
  std::string (*refuses)(const InferContext& ctx) = nullptr;
};

bool register_cuda_op(const CudaOpDef& def);
const CudaOpDef* find_cuda_op(std::string_view domain, std::string_view op_type);
std::vector<const CudaOpDef*> registered_cuda_ops();

}  // namespace fovea::runtime::cuda

#define FOVEA_REGISTER_CUDA_OP(...)                                           \
  [[maybe_unused]] static const bool FOVEA_CONCAT(fovea_cuda_op_, __LINE__) = \
      ::fovea::runtime::cuda::register_cuda_op(::fovea::runtime::cuda::CudaOpDef __VA_ARGS__)
