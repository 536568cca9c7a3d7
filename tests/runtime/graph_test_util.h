// Running whole graphs in tests: the planned executor, and a reference that evaluates the loaded
// graph node by node with no folding, passes or arena, to check that those change nothing.
#pragma once

#include <string>
#include <vector>

#include "runtime/cpu_executor.h"
#include "runtime/model_builder.h"
#include "runtime/onnx_loader.h"

namespace fovea::runtime::testing {

Graph load_graph(const ModelBuilder& builder);
// The model, loaded as `file_name`, is refused with a message holding every fragment.
void expect_refused_at_load(const ModelBuilder& builder, const std::string& file_name,
                            const std::vector<std::string>& fragments);
std::vector<Tensor> run_unoptimized(const Graph& graph, const std::vector<Tensor>& inputs);
// Plans `graph` for the inputs' shapes (`options` as plan_graph takes them); a failure fails the
// test (and gives an empty plan).
ExecutionPlan plan_for(const Graph& graph, const std::vector<Tensor>& inputs,
                       const PlanOptions& options = {});
// Plans `graph` for the inputs' shapes and runs it on the CPU executor; a failure fails the test
// (and gives no outputs).
std::vector<Tensor> run_planned(const Graph& graph, const std::vector<Tensor>& inputs);
// The planned run (CpuExecutor) matches the node-by-node evaluation of the loaded graph. Passes
// reassociate float math (folded BatchNorm, fused convolutions summed in another order), so the
// tolerance is a few float32 ulps of the values involved (|y| ~ 10).
void expect_same_results(const Graph& graph, const ExecutionPlan& plan, const std::vector<Tensor>& inputs);
int count_ops(const Graph& graph, const std::string& op_type);
// The node named `name`, or nullptr.
const Node* find_node(const Graph& graph, const std::string& name);

// x [2, 4, 9, 11] -> conv -> relu -> conv + residual -> relu -> 2x2 max pool -> y [2, 6, 4, 5]:
// two convolutions that fuse (the second with its residual), then an op that is not one.
ModelBuilder& conv_chain(ModelBuilder& m);

// x [N, 16, 10, 10] -> conv1 3x3 16->32 + relu (r1) -> conv2 1x1 32->32 + relu -> conv3 3x3 32->32
// + shortcut(r1) + relu (r3) -> conv6 1x1 32->32 + relu -> conv7 3x3 32->32 + r3 + relu -> conv4
// 1x1 32->5 -> y [N, 5, 10, 10], the shortcut a 1x1 32->32: a ResNet block with its projection,
// then one with an identity shortcut, as the int8 plans see them; six convolutions the int8
// tensor-core kernel takes (r1 read by two of them, r3 by one and by a residual) and one (5
// output channels) it does not.
ModelBuilder& int8_residual_stack(ModelBuilder& m);

}  // namespace fovea::runtime::testing
