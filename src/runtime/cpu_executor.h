// The CPU reference executor: runs an ExecutionPlan node by node with the registered CPU kernels.
// Intermediates live in the plan's arena, allocated once; only graph outputs and data-dependent
// values (NonMaxSuppression's selection) are allocated per run.
#pragma once

#include <memory>
#include <vector>

#include "runtime/planner.h"

namespace fovea::runtime {

class CpuExecutor {
 public:
  explicit CpuExecutor(ExecutionPlan plan);
  CpuExecutor(const CpuExecutor&) = delete;
  CpuExecutor& operator=(const CpuExecutor&) = delete;

  const ExecutionPlan& plan() const { return plan_; }

  // Inputs in the order of plan().graph.inputs; their dtypes and shapes must match the plan.
  // Outputs come back in the order of plan().graph.outputs, owned by the caller.
  Result<std::vector<Tensor>> run(const std::vector<Tensor>& inputs);

  // Values allocated outside the arena in the last run (data-dependent shapes).
  int dynamic_allocations() const { return dynamic_allocations_; }

 private:
  Tensor allocate(ValueId value, DataType dtype, Shape shape);

  ExecutionPlan plan_;
  std::unique_ptr<std::byte[]> arena_;
  int dynamic_allocations_ = 0;
};

}  // namespace fovea::runtime
