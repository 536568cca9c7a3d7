// Helpers the data movement ops share (shape_ops, movement, resize, selection): copying elements by
// size so one instantiation serves every dtype, integer lists that moved from attributes to inputs
// across opsets, and one gather that Slice, Transpose, Expand, Tile, Pad and nearest Resize are all
// instances of.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "runtime/ops/op_util.h"

namespace fovea::runtime::ops {

// An integer list that older opsets give as an attribute and newer ones as an input (Squeeze and
// Unsqueeze axes, Split sizes, Pad pads, Slice starts...). An empty input tensor counts as absent,
// as exporters write one for an omitted optional input.
struct IntOperand {
  bool given = false;
  std::optional<std::vector<std::int64_t>> values;  // nullopt: an input whose value is not known yet
};
Result<IntOperand> int_operand(const InferContext& ctx, std::string_view attribute, int input,
                               int input_since_opset);

// Element offsets into the input for each index along one output axis; kFillOffset marks an
// output index that takes the fill value instead (Pad's border, Resize's extrapolation).
using AxisOffsets = std::vector<std::int64_t>;
inline constexpr std::int64_t kFillOffset = -1;

// out[i_0, ..., i_r-1] = in[offsets[0][i_0] + ... + offsets[r-1][i_r-1]], or *fill (one element of
// out's dtype) where any term is kFillOffset. Parallel over output rows.
void gather_by_axis_offsets(const Tensor& in, Tensor& out, const std::vector<AxisOffsets>& offsets,
                            const void* fill = nullptr);

// Rows of `row_length` elements per parallel_for chunk, sized so a chunk outweighs the handoff to a
// worker thread.
std::int64_t rows_per_chunk(std::int64_t row_length);

// memcpy over the thread pool in 1 MiB pieces: one thread does not reach the memory's bandwidth
// (a Loop that appends to its carried value copies it whole each iteration). Inline below 2 MiB.
void copy_bytes(std::byte* dst, const std::byte* src, std::size_t bytes);

// Offsets for an output axis that reads input index i at position i.
AxisOffsets identity_offsets(std::int64_t count, std::int64_t stride);

// OpDef::flops for ops that only move data.
inline double no_flops(const Node&, const std::vector<Shape>&, const std::vector<Shape>&) {
  return 0;
}

// One element of `dtype` holding `value` (a fill or padding value), as bytes.
std::array<std::byte, 8> element_bytes(DataType dtype, double value);

}  // namespace fovea::runtime::ops
