#include "runtime/ops/attention_util.h"

#include <string>

#include "runtime/ops/movement_util.h"

namespace fovea::runtime::ops {

const char* attention_view_attribute(int input) {
  static constexpr const char* kNames[] = {"q_view", "kt_view", "v_view"};
  return kNames[input];
}

std::vector<std::int64_t> encode_attention_view(const AttentionView& view) {
  std::vector<std::int64_t> encoded = {view.offset};
  for (std::size_t d = 0; d < view.sizes.size(); ++d) {
    encoded.push_back(view.sizes[d]);
    encoded.push_back(view.strides[d]);
  }
  return encoded;
}

Result<std::optional<AttentionView>> attention_view(const Node& node, int input) {
  const char* name = attention_view_attribute(input);
  if (!node.has_attribute(name)) return std::optional<AttentionView>();
  FOVEA_ASSIGN_OR_RETURN(const std::vector<std::int64_t> encoded, node.attr_ints(name));
  if (encoded.size() % 2 != 1) {
    return Status(StatusCode::kInvalidArgument, node.describe() + ": attribute " + name +
                                                    " must be [offset, size, stride, ...], got " +
                                                    std::to_string(encoded.size()) + " values");
  }
  AttentionView view;
  view.offset = encoded[0];
  for (std::size_t i = 1; i < encoded.size(); i += 2) {
    view.sizes.push_back(encoded[i]);
    view.strides.push_back(encoded[i + 1]);
  }
  bool negative = view.offset < 0;
  for (std::size_t d = 0; d < view.sizes.size(); ++d) negative |= view.sizes[d] < 0 || view.strides[d] < 0;
  if (negative) {
    return Status(StatusCode::kInvalidArgument,
                  node.describe() + ": attribute " + name + " holds a negative offset, size or stride");
  }
  return std::optional<AttentionView>(std::move(view));
}

Result<std::optional<std::vector<std::int64_t>>> attention_output_perm(const Node& node, std::size_t rank) {
  if (!node.has_attribute(kAttentionOutputPerm)) return std::optional<std::vector<std::int64_t>>();
  FOVEA_ASSIGN_OR_RETURN(std::vector<std::int64_t> perm, node.attr_ints(kAttentionOutputPerm));
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (std::size_t i = 0; valid && i < perm.size(); ++i) {
    const std::int64_t axis = perm[i];
    valid = axis >= 0 && axis < static_cast<std::int64_t>(rank) && !seen[static_cast<std::size_t>(axis)];
    if (valid) seen[static_cast<std::size_t>(axis)] = true;
  }
  if (!valid) {
    return Status(StatusCode::kInvalidArgument, node.describe() + ": attribute " + kAttentionOutputPerm +
                                                    " is not a permutation of " + std::to_string(rank) +
                                                    " axes");
  }
  return std::optional<std::vector<std::int64_t>>(std::move(perm));
}

bool view_within(const AttentionView& view, std::int64_t numel) {
  std::int64_t last = view.offset;
  for (std::size_t d = 0; d < view.sizes.size(); ++d) {
    if (view.sizes[d] == 0) return true;  // selects nothing
    last += (view.sizes[d] - 1) * view.strides[d];
  }
  return last < numel;
}

Tensor gather_view(const Tensor& input, const AttentionView& view) {
  Tensor out = Tensor::allocate(input.dtype(), view.sizes);
  std::vector<AxisOffsets> offsets;
  for (std::size_t d = 0; d < view.sizes.size(); ++d)
    offsets.push_back(identity_offsets(view.sizes[d], view.strides[d]));
  if (!offsets.empty()) {
    for (std::int64_t& offset : offsets.front()) offset += view.offset;
  }
  gather_by_axis_offsets(input, out, offsets);
  return out;
}

}  // namespace fovea::runtime::ops
