// fovea.Attention's operands read through strided views (fold_attention_views, passes.h): the
// node's Q, KT or V input may be a larger tensor of which the operand is a strided selection, and
// its output may be written already transposed. Shared by the op's inference, the CPU reference,
// the CUDA kernels and the pass that makes the views.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/graph.h"
#include "runtime/tensor.h"

namespace fovea::runtime::ops {

inline constexpr int kAttentionQ = 0, kAttentionKt = 1, kAttentionV = 2, kAttentionBias = 3;

// Element (i_0, ..., i_{r-1}) of the operand is element offset + sum of i_j * strides[j] of the
// input, counted in the input's row-major order.
struct AttentionView {
  std::int64_t offset = 0;
  Shape sizes;
  std::vector<std::int64_t> strides;
};

// The attribute that holds operand `input`'s view (Q, KT or V): INTS [offset, size_0, stride_0,
// size_1, stride_1, ...], one pair per dim of the operand.
const char* attention_view_attribute(int input);
// With perm, the node's output is Transpose(Y, perm) of the product Y [..., Tq, Dv].
inline constexpr const char* kAttentionOutputPerm = "y_perm";

std::vector<std::int64_t> encode_attention_view(const AttentionView& view);
// The view of operand `input`, nullopt when the node reads the input whole; a malformed attribute
// (odd length, negative size, offset or stride) is an error naming the node.
Result<std::optional<AttentionView>> attention_view(const Node& node, int input);
// The output permutation, nullopt when absent; not a permutation of `rank` axes is an error.
Result<std::optional<std::vector<std::int64_t>>> attention_output_perm(const Node& node, std::size_t rank);

// Whether every element the view selects lies in an input of `numel` elements.
bool view_within(const AttentionView& view, std::int64_t numel);
// The view as its own row-major tensor (the CPU reference's operand).
Tensor gather_view(const Tensor& input, const AttentionView& view);

}  // namespace fovea::runtime::ops
