// A linear layer's GELU goes into the layer (passes.h): the MLPs of ViT, Swin and ConvNeXt apply GELU
// to their first product's output, a pass over the block's widest activation (ViT-B: 0.6 ms of a
// 5.1 ms batch on the H200, docs/perf.md) that cuBLASLt's GELU epilogue computes inside the product.
// That epilogue computes the tanh form. A tanh Gelu is that form exactly; an erf Gelu is fused only
// where the product is stored in float16: there the unfused path rounds the product to float16
// before its erf, an error larger than the two forms' difference (at most 4.7e-4, at x = -2.7), so
// the fused result is at least as close to the exact erf GELU (docs/perf.md measures both).
#include <optional>
#include <vector>

#include "runtime/ops/activation_util.h"
#include "runtime/passes/pass_util.h"
#include "runtime/passes/passes.h"

namespace fovea::runtime {

namespace {

// A Gemm that computes no more than alpha A B + beta C: plain, or fovea.Gemm without R or an
// activation of its own.
bool plain_gemm(const Node& node) {
  if (node.outputs.size() != 1 || node.op_type != "Gemm") return false;
  if (node.domain.empty()) return node.inputs.size() <= 3;
  const bool residual = node.inputs.size() > 3 && node.inputs[3] != kNoValue;
  return node.domain == "fovea" && !residual && !node.has_attribute("activation");
}

struct Match {
  Node* writer = nullptr;  // what writes the Gelu's input: the Gemm, or the Reshape after it
  Node* gelu = nullptr;
};

// The Gelu that alone reads the product (through the Reshape fuse_matmul_bias puts after it, if any),
// in a form the epilogue computes for the product's dtype.
std::optional<Match> fusable_gelu(Graph& graph, Node& gemm) {
  const ValueId product = gemm.outputs[0];
  Match match{.writer = &gemm, .gelu = sole_consumer(graph, product)};
  if (match.gelu != nullptr && is_op(*match.gelu, "Reshape")) {
    match.writer = match.gelu;
    match.gelu = sole_consumer(graph, match.writer->outputs[0]);
  }
  if (match.gelu == nullptr || !is_op(*match.gelu, "Gelu")) return std::nullopt;
  const Result<bool> tanh_form = ops::gelu_uses_tanh(*match.gelu);
  if (!tanh_form.is_ok()) return std::nullopt;  // planning names the bad attribute
  const bool float16 = graph.value(product).type.dtype == DataType::kFloat16;
  if (!tanh_form.value() && !float16) return std::nullopt;
  return match;
}

}  // namespace

void fuse_gemm_gelu(Graph& graph) {
  std::vector<bool> removed(graph.nodes.size(), false);
  bool any = false;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    Node& gemm = graph.nodes[n];
    if (!plain_gemm(gemm)) continue;
    const std::optional<Match> match = fusable_gelu(graph, gemm);
    if (!match) continue;
    gemm.domain = "fovea";
    Attribute activation;
    activation.kind = Attribute::Kind::kString;
    activation.s = ops::kGemmGeluTanh;
    gemm.attributes["activation"] = activation;
    // What wrote the Gelu's input now writes its output, which its readers, after it, read.
    match->writer->outputs[0] = match->gelu->outputs[0];
    removed[static_cast<std::size_t>(match->gelu - graph.nodes.data())] = true;
    any = true;
  }
  if (any) erase_nodes(graph, removed);
}

}  // namespace fovea::runtime
