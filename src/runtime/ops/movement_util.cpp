#include "runtime/ops/movement_util.h"

#include <algorithm>
#include <cstring>

#include "runtime/parallel.h"

namespace fovea::runtime::ops {

Result<IntOperand> int_operand(const InferContext& ctx, std::string_view attribute, int input,
                               int input_since_opset) {
  IntOperand operand;
  if (ctx.opset() < input_since_opset) {
    if (ctx.node().has_attribute(attribute)) {
      FOVEA_ASSIGN_OR_RETURN(operand.values, ctx.node().attr_ints(attribute));
      operand.given = true;
    }
    return operand;
  }
  if (!ctx.has_input(input)) return operand;
  FOVEA_TRY(ctx.require_dtype(input, {DataType::kInt64, DataType::kInt32}));
  const Dims* dims = ctx.input_dims(input);
  if (dims != nullptr && dims->size() == 1 && (*dims)[0].known() && (*dims)[0].value == 0) return operand;
  operand.given = true;
  if (const Tensor* value = ctx.input_value(input)) operand.values = integers_of(*value);
  return operand;
}

// About 16K elements per chunk: enough to outweigh the handoff to a worker thread (a few
// microseconds) while leaving work for every core on a 21x520x520 segmentation map.
std::int64_t rows_per_chunk(std::int64_t row_length) {
  constexpr std::int64_t kElementsPerChunk = 1 << 14;
  return std::max<std::int64_t>(1, kElementsPerChunk / std::max<std::int64_t>(row_length, 1));
}

void copy_bytes(std::byte* dst, const std::byte* src, std::size_t bytes) {
  constexpr std::size_t kPiece = std::size_t{1} << 20;
  const auto pieces = static_cast<std::int64_t>((bytes + kPiece - 1) / kPiece);
  parallel_for(pieces, 2, [&](std::int64_t begin, std::int64_t end) {
    const std::size_t from = static_cast<std::size_t>(begin) * kPiece;
    const std::size_t to = std::min(bytes, static_cast<std::size_t>(end) * kPiece);
    std::memcpy(dst + from, src + from, to - from);
  });
}

namespace {

template <typename T>
void gather_typed(const T* in, T* out, const Shape& out_shape, const std::vector<AxisOffsets>& offsets,
                  T fill) {
  const std::size_t outer_rank = out_shape.size() - 1;
  const std::int64_t row = out_shape.back();
  const AxisOffsets& last = offsets.back();
  const std::int64_t rows = row == 0 ? 0 : element_count(out_shape) / row;
  parallel_for(rows, rows_per_chunk(row), [&](std::int64_t begin, std::int64_t end) {
    std::vector<std::int64_t> index(outer_rank, 0);
    for (std::size_t d = outer_rank, rest = static_cast<std::size_t>(begin); d-- > 0;) {
      index[d] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(out_shape[d]));
      rest /= static_cast<std::size_t>(out_shape[d]);
    }
    for (std::int64_t r = begin; r < end; ++r) {
      std::int64_t base = 0;
      bool fill_row = false;
      for (std::size_t d = 0; d < outer_rank; ++d) {
        const std::int64_t offset = offsets[d][static_cast<std::size_t>(index[d])];
        fill_row = fill_row || offset == kFillOffset;
        base += offset;
      }
      T* dst = out + r * row;
      if (fill_row) {
        std::fill(dst, dst + row, fill);
      } else {
        for (std::int64_t j = 0; j < row; ++j) {
          const std::int64_t offset = last[static_cast<std::size_t>(j)];
          dst[j] = offset == kFillOffset ? fill : in[base + offset];
        }
      }
      for (std::size_t d = outer_rank; d-- > 0;) {
        if (++index[d] < out_shape[d]) break;
        index[d] = 0;
      }
    }
  });
}

}  // namespace

void gather_by_axis_offsets(const Tensor& in, Tensor& out, const std::vector<AxisOffsets>& offsets,
                            const void* fill) {
  FOVEA_CHECK(offsets.size() == out.shape().size() && in.dtype() == out.dtype());
  if (out.numel() == 0) return;
  if (out.rank() == 0) {
    std::memcpy(out.raw(), in.raw(), in.bytes());
    return;
  }
  dispatch_by_size(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T fill_value{};
    if (fill != nullptr) std::memcpy(&fill_value, fill, sizeof(T));
    gather_typed(in.data<T>(), out.data<T>(), out.shape(), offsets, fill_value);
  });
}

AxisOffsets identity_offsets(std::int64_t count, std::int64_t stride) {
  AxisOffsets offsets(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) offsets[static_cast<std::size_t>(i)] = i * stride;
  return offsets;
}

std::array<std::byte, 8> element_bytes(DataType dtype, double value) {
  std::array<std::byte, 8> bytes{};
  const bool known = dispatch<FOVEA_ALL_TYPES>(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T element{};
    if constexpr (std::is_same_v<T, Half>) {
      element = float_to_half(static_cast<float>(value));
    } else if constexpr (std::is_same_v<T, bool>) {
      element = value != 0;
    } else {
      element = static_cast<T>(value);
    }
    std::memcpy(bytes.data(), &element, sizeof(T));
  });
  FOVEA_CHECK(known);
  return bytes;
}

}  // namespace fovea::runtime::ops
