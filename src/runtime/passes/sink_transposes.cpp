// A Transpose read only by an elementwise op with a constant operand moves past that op (passes.h).
// ConvNeXt's block is the case that matters: torchvision writes its layer scale as
//   Mul(gamma [C, 1, 1], Transpose(Linear(...), perm 0,3,1,2))
// so the scale, a broadcasting Mul, stands between the model's Permute back to NCHW and the
// residual Add. Moved before the Transpose it is a Mul by a row [1, 1, 1, C] that fuse_matmul_bias
// folds into the Linear's weights, and the Transpose then feeds the residual Add directly, which
// convert_to_channels_last runs in NHWC: two Transposes and a broadcast pass less a block.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/ops/conv_util.h"
#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

// `constant` (broadcasting into rank perm.size()) as the operand that broadcasts the same way into
// the Transpose's input: left-padded with 1s to the full rank, then its axes put back where the
// Transpose took them from (the inverse permutation).
Tensor untransposed(const Tensor& constant, const std::vector<std::int64_t>& perm) {
  Shape padded(perm.size() - constant.shape().size(), 1);
  padded.insert(padded.end(), constant.shape().begin(), constant.shape().end());
  std::vector<std::int64_t> inverse(perm.size());
  for (std::size_t d = 0; d < perm.size(); ++d)
    inverse[static_cast<std::size_t>(perm[d])] = static_cast<std::int64_t>(d);
  return ops::permute_tensor(constant.clone().reshaped(padded), inverse);
}

// Rewrites `op` when it is Add/Sub/Mul/Div of a constant and a Transpose's output that only it
// reads, with no broadcasting of the transposed operand: the op then reads the Transpose's input and
// the untransposed constant, and the Transpose transposes its result. Returns whether it did.
bool sink_through(Graph& graph, std::size_t op_index) {
  static const std::set<std::string> kOps = {"Add", "Sub", "Mul", "Div"};
  const Node& op = graph.nodes[op_index];
  if (!op.domain.empty() || !kOps.count(op.op_type) || op.inputs.size() != 2 || op.outputs.size() != 1)
    return false;
  for (std::size_t side = 0; side < 2; ++side) {
    const ValueId transposed = op.inputs[side], constant = op.inputs[1 - side];
    Node* transpose = producer_of(graph, transposed);
    if (transpose == nullptr || !is_op(*transpose, "Transpose") || !graph.is_constant(constant)) continue;
    const std::optional<Shape> out = known_shape(graph, op.outputs[0]);
    if (!out || known_shape(graph, transposed) != out) continue;
    const std::optional<std::vector<std::int64_t>> perm = transpose_perm(*transpose, out->size());
    // sole_consumer last: it scans the graph.
    if (!perm || graph.value(constant).constant->shape().size() > perm->size() ||
        sole_consumer(graph, transposed) != &op)
      continue;
    const ValueId source = transpose->inputs[0];
    const ValueId moved_constant = graph.add_constant(graph.value(constant).name + "/untransposed",
                                                      untransposed(*graph.value(constant).constant, *perm));
    ValueType before_type = graph.value(op.outputs[0]).type;  // by value: adding values may move them
    before_type.dims = graph.value(source).type.dims;
    const ValueId before =
        graph.add_value(graph.value(op.outputs[0]).name + "/before_transpose", before_type);
    // The op takes the Transpose's place (it reads only values that exist there) and the Transpose
    // the op's, writing the op's old output.
    const auto transpose_index = static_cast<std::size_t>(transpose - graph.nodes.data());
    Node moved_op = graph.nodes[op_index];
    moved_op.inputs[side] = source;
    moved_op.inputs[1 - side] = moved_constant;
    const ValueId after = moved_op.outputs[0];
    moved_op.outputs[0] = before;
    Node moved_transpose = std::move(graph.nodes[transpose_index]);
    moved_transpose.inputs[0] = before;
    moved_transpose.outputs[0] = after;
    graph.nodes[transpose_index] = std::move(moved_op);
    graph.nodes[op_index] = std::move(moved_transpose);
    graph.index_producers();
    return true;
  }
  return false;
}

}  // namespace

void sink_transposes(Graph& graph) {
  // In graph order, so a Transpose that has moved past one op is met again by the next reader.
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) sink_through(graph, n);
}

}  // namespace fovea::runtime
