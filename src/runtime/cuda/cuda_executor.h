// The CUDA executor: runs an ExecutionPlan on the GPU with the kernels registered by
// FOVEA_REGISTER_CUDA_OP (cuda_op.h).
//
// Everything is decided when it is created: every device buffer (weights, one arena placed by the
// memory planner, inputs and outputs at fixed addresses, one workspace), each node's kernel
// parameters and algorithms (cuDNN's search happens here), and a CUDA graph of the whole run.
// run() then only launches that graph on the caller's stream: no allocation, no host
// synchronization, no per-node launch overhead.
//
//   auto executor = CudaExecutor::create(std::move(plan));
//   cudaMemcpyAsync(executor->input(0).raw(), ..., stream);  // or write it there in a kernel
//   executor->run(stream);
//   ... executor->output(0) holds the result once `stream` reaches this point
//
// A graph output whose shape depends on the data (NonMaxSuppression's selection) is placed at the
// largest shape its op can produce (CudaOpDef::bound_output); each run writes how many rows it
// filled to a device count, output_rows_device(i), and only that many rows of output(i) are valid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda_stream.h"
#include "runtime/planner.h"

namespace fovea::runtime::cuda {

struct CudaExecutorOptions {
  // Off: run() launches node by node (for debugging and for measuring what the graph saves).
  bool use_cuda_graph = true;
};

struct DeviceMemoryUse {
  std::size_t weights = 0;    // constants, uploaded once
  std::size_t arena = 0;      // intermediates, placed by liveness
  std::size_t io = 0;         // graph inputs and outputs
  std::size_t workspace = 0;  // scratch shared by the nodes (cuDNN, cuBLASLt, reductions)
  std::size_t total() const { return weights + arena + io + workspace; }
};

class CudaExecutor {
 public:
  // Fails, naming the nodes, when an op has no CUDA kernel, or a value's shape depends on the data
  // and it is not a graph output that no node reads of an op with a bound_output().
  static Result<std::unique_ptr<CudaExecutor>> create(ExecutionPlan plan,
                                                      const CudaExecutorOptions& options = {});
  // Why create() cannot plan `node` of `graph` once its inputs are planned, or "" when it can: it
  // needs a CUDA kernel that takes the node at its shapes, and each output of a static shape or a
  // graph output no node reads of an op with a bound.
  static std::string why_not_planned(const Graph& graph, const Node& node);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  const ExecutionPlan& plan() const { return plan_; }
  int input_count() const { return static_cast<int>(inputs_.size()); }
  int output_count() const { return static_cast<int>(outputs_.size()); }
  // Device tensors at addresses fixed for the executor's life, in the order of the plan's graph.
  const Tensor& input(int i) const { return inputs_.at(static_cast<std::size_t>(i)); }
  // A data-dependent output is its bound's shape here; its first output_rows() rows are valid.
  const Tensor& output(int i) const { return outputs_.at(static_cast<std::size_t>(i)); }
  // The device int64 holding how many rows of output(i) the last run filled (its first dimension),
  // written by the run on its stream: read it after the stream reaches that point. nullptr for an
  // output of static shape.
  const std::int64_t* output_rows_device(int i) const { return output_rows_.at(static_cast<std::size_t>(i)); }

  // Enqueues one run on `stream` (never the legacy default stream): reads input(), writes output().
  Status run(cudaStream_t stream);
  // Convenience for tools and tests: copies host inputs in, runs, copies the outputs back and waits.
  // Data-dependent outputs come back with their true shape (the valid rows only).
  Result<std::vector<Tensor>> run_host(const std::vector<Tensor>& inputs, cudaStream_t stream);

  DeviceMemoryUse memory_use() const { return memory_use_; }
  // cudaMalloc calls this executor has made; all happen in create(), so the count stays put
  // while it runs.
  int device_allocations() const { return device_allocations_; }
  bool uses_cuda_graph() const;

 private:
  struct Device;  // the CUDA handles: cuDNN/cuBLASLt, the capture stream, the instantiated graph
  struct NodeRun;

  explicit CudaExecutor(ExecutionPlan plan);
  Result<void*> allocate(std::size_t bytes);
  Status build(const CudaExecutorOptions& options);
  Status check_kernels() const;
  Status resolve_shapes();
  Result<Shape> bound_shape(const Node& node, int output) const;
  Status place_values();
  Status make_node_runs();
  Status prepare_nodes();
  Tensor device_tensor(ValueId id) const;
  Result<std::vector<Shape>> output_shapes(cudaStream_t stream) const;
  Status enqueue(cudaStream_t stream);
  Status capture();

  ExecutionPlan plan_;
  std::unique_ptr<Device> device_;
  std::vector<Shape> value_shapes_;         // each value's shape; its bound if data-dependent
  std::vector<bool> data_dependent_;        // per value: its rows are decided at run time
  std::vector<void*> value_data_;           // device address of each value id
  std::vector<std::int64_t*> value_rows_;   // per value id: its device row count, or nullptr
  std::vector<std::int64_t*> output_rows_;  // per graph output: its device row count, or nullptr
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  std::vector<std::unique_ptr<NodeRun>> nodes_;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  DeviceMemoryUse memory_use_;
  int device_allocations_ = 0;
};

}  // namespace fovea::runtime::cuda
