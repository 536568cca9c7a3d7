// Shape inference and evaluation of single nodes through the op registry: the step that the CPU
// executor, constant folding and the op tests all share.
#pragma once

#include <vector>

#include "runtime/op.h"

namespace fovea::runtime {

// The op's definition, or an "unsupported op" error naming the node.
Result<const OpDef*> op_for(const Graph* graph, const Node& node);

// Output types of `node` given its inputs' types and whichever input values are known.
Result<std::vector<ValueType>> infer_node(const Graph* graph, const Node& node,
                                          std::vector<ValueType> input_types,
                                          std::vector<const Tensor*> input_values);

// Owned heap tensors: for folding, tests and data-dependent outputs.
KernelContext::Allocator heap_allocator();

// Runs `node` on concrete inputs (an omitted optional input is an empty Tensor). Outputs whose
// shape inference can size come from `allocator`; the kernel allocates data-dependent ones. An If,
// a Loop or a Scan runs its subgraph (control_flow.h) and allocates its outputs itself.
Result<std::vector<Tensor>> evaluate_node(const Graph* graph, const Node& node,
                                          const std::vector<Tensor>& inputs,
                                          const KernelContext::Allocator& allocator);

// The step of a node-by-node run (the CPU executor, an If/Loop/Scan subgraph): evaluates `node` on
// `values` (indexed by value id) and stores its outputs there. While a trace records, the node is
// a range named by its op type ("fovea.FusedConv" for other domains), so `fovea report` ranks ops.
Status evaluate_into(const Graph* graph, const Node& node, std::vector<Tensor>& values,
                     const KernelContext::Allocator& allocator);

}  // namespace fovea::runtime
