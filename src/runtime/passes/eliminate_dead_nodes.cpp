#include <algorithm>
#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"
#include "runtime/shape_inference.h"

namespace fovea::runtime {

void eliminate_dead_nodes(Graph& graph) {
  graph.index_producers();
  std::vector<bool> needed_value(graph.values.size(), false);
  for (ValueId out : graph.outputs) needed_value[static_cast<std::size_t>(out)] = true;
  std::vector<bool> removed(graph.nodes.size(), true);
  // Reverse topological order: a node is live when one of its outputs is needed.
  for (std::size_t n = graph.nodes.size(); n-- > 0;) {
    const Node& node = graph.nodes[n];
    const bool live = std::any_of(node.outputs.begin(), node.outputs.end(), [&](ValueId v) {
      return v != kNoValue && needed_value[static_cast<std::size_t>(v)];
    });
    if (!live) continue;
    removed[n] = false;
    for (ValueId in : node.inputs) {
      if (in != kNoValue) needed_value[static_cast<std::size_t>(in)] = true;
    }
  }
  erase_nodes(graph, removed);
}

Status optimize(Graph& graph) {
  remove_identities(graph);
  FOVEA_TRY(fold_batchnorm_into_conv(graph));
  fuse_conv_epilogues(graph);
  fuse_gelu(graph);
  fuse_attention(graph);
  sink_transposes(graph);
  fuse_matmul_bias(graph);
  move_transposes_to_attention(graph, AttentionSide::kInputs);
  fold_attention_views(graph);
  move_transposes_to_attention(graph, AttentionSide::kOutputs);
  fold_attention_views(graph);  // the outputs' moved Transposes (the operands are folded already)
  fuse_gemm_residual(graph);
  eliminate_dead_nodes(graph);
  graph.compact();
  // Fused nodes get their types from their own inference, which also checks the rewrite.
  return infer_shapes(graph, FoldConstants::kNo);
}

}  // namespace fovea::runtime
