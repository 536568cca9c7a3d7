// Models from older exporters (default-domain opsets 1-10) run on kernels that implement the op
// forms of opsets 11-21: at load, every node of such a model is rewritten into the form its op has
// at opset 11 (attributes that became inputs turn into constant initializers, Upsample and
// Resize-10 into Resize-11, legacy broadcasting into numpy broadcasting...), and the graph then
// declares opset 11. What changed in which op version is one table in opset_conversion.cpp.
//
// What decides a node's conversion is its op version: the largest since-version of its op type
// that is not above the model's opset (Relu in an opset-9 model is Relu-6). Ops whose semantics did
// not change between that version and opset 11 are accepted as they are; an old form that cannot
// be converted is an error naming the node, the op, its op version and why.
#pragma once

#include <string_view>

#include "core/status.h"
#include "runtime/graph.h"

namespace fovea::runtime {

// The oldest opset whose op forms the kernels implement; older models are converted to it.
inline constexpr int kKernelOpset = 11;

// The op version that opset `opset` of the default domain defines for `op_type` (for opsets below
// kKernelOpset); 0 when the op does not exist at that opset or is not an ONNX op.
int op_version(std::string_view op_type, int opset);

// Converts a model whose default-domain opset is below kKernelOpset (nodes in a topological
// order, constants loaded) to the opset-kKernelOpset forms; other models are left as they are.
// A model of any opset is refused when a node carries an attribute that its op takes as an input
// at that opset (Clip's min at opset 13): the kernel would ignore it.
// Ops fovea does not register are left for shape inference to report as unsupported.
Status convert_old_opsets(Graph& graph);

}  // namespace fovea::runtime
