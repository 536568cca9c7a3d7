#include <string>

#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

// A Resize to its input's own size samples every input element at its own place, whatever the mode
// (Hugging Face's SegFormer resizes all four stages to the first one's size, the first included);
// tf_crop_and_resize, which samples a region of interest, is the exception.
bool resize_to_own_size(const Graph& graph, const Node& node) {
  if (node.op_type != "Resize" || node.inputs.empty() || node.outputs.size() != 1) return false;
  const Result<std::string> mode = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (!mode.is_ok() || *mode == "tf_crop_and_resize") return false;
  const auto& in = graph.value(node.inputs[0]).type.dims;
  const auto& out = graph.value(node.outputs[0]).type.dims;
  return in && out && all_known(*in) && *in == *out;
}

bool bypassable(const Graph& graph, const Node& node, const std::vector<int>& uses) {
  if (node.op_type == "Identity" || resize_to_own_size(graph, node)) return true;
  if (node.op_type != "Dropout") return false;
  // Dropout with a mask output someone reads, or an explicit training_mode, stays.
  const bool mask_read = node.outputs.size() > 1 && node.outputs[1] != kNoValue &&
                         uses[static_cast<std::size_t>(node.outputs[1])] > 0;
  const bool training_input = node.inputs.size() > 2 && node.inputs[2] != kNoValue;
  return !mask_read && !training_input && graph.value(node.inputs[0]).type.dims.has_value();
}

}  // namespace

void remove_identities(Graph& graph) {
  std::vector<bool> removed(graph.nodes.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    const std::vector<int> uses = graph.use_counts();
    if (!node.domain.empty() || !bypassable(graph, node, uses)) continue;
    const ValueId in = node.inputs[0];
    const ValueId out = node.outputs[0];
    if (!graph.is_graph_output(out)) {
      removed[n] = true;
      graph.nodes[n].inputs.clear();  // so use counts no longer see it
      replace_uses(graph, out, in);
      continue;
    }
    // The output is a graph output: the input's producer can write it directly, if nothing else
    // needs the input under its own name.
    const Value& input = graph.value(in);
    if (input.producer >= 0 && !graph.is_graph_output(in) && uses[static_cast<std::size_t>(in)] == 1) {
      removed[n] = true;
      graph.nodes[n].inputs.clear();
      graph.nodes[n].outputs.clear();
      rename_output(graph, in, out);
    }
  }
  erase_nodes(graph, removed);
}

}  // namespace fovea::runtime
