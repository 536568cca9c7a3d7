// The machinery shared by the elementwise, activation, logic and cast ops: one n-ary kernel with
// multidirectional broadcasting (threaded over large outputs), dtype groups that check in infer()
// and dispatch in run() from one list, and value conversions without undefined behaviour.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "runtime/ops/op_util.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {

// Outputs smaller than this run inline: a chunk of 16K elements is roughly 10 µs of simple
// arithmetic, about what handing it to a pool thread costs.
inline constexpr std::int64_t kElementwiseMinChunk = 16384;

// A list of dtypes an op accepts: checked in infer() and dispatched on in run() from the same list,
// so the two cannot drift apart.
template <DataType... Ds>
struct DTypes {
  static Status require(const InferContext& ctx, int input) { return ctx.require_dtype(input, {Ds...}); }
  template <typename F>
  static bool dispatch(DataType dtype, F&& f) {
    return ops::dispatch<Ds...>(dtype, std::forward<F>(f));
  }
};
using FloatTypes = DTypes<FOVEA_FLOAT_TYPES>;
using NumericTypes = DTypes<FOVEA_NUMERIC_TYPES>;
using SignedTypes = DTypes<FOVEA_FLOAT_TYPES, DataType::kInt64, DataType::kInt32, DataType::kInt8>;
using BoolTypes = DTypes<DataType::kBool>;
using NumericOrBoolTypes = DTypes<FOVEA_NUMERIC_TYPES, DataType::kBool>;

namespace detail {

template <typename Op, typename Pointers, std::size_t... K>
auto apply_at(Op& op, const Pointers& in, const std::array<std::int64_t, sizeof...(K)>& offsets,
              std::index_sequence<K...>) {
  return op(std::get<K>(in)[offsets[K]]...);
}

}  // namespace detail

// out[i] = op(in[i]...) for every element of `out`, whose shape is the broadcast of the inputs'
// shapes. TO and TI are the storage types. An input may alias `out` when it has out's shape (the
// variadic ops accumulate in place).
template <typename TO, typename... TI, typename Op>
void map_elements(Tensor& out, Op op, const std::conditional_t<true, Tensor, TI>&... in) {
  constexpr std::size_t kInputs = sizeof...(TI);
  TO* o = out.data<TO>();
  const std::tuple<const TI*...> pointers{in.template data<TI>()...};
  const Shape& out_shape = out.shape();
  const std::int64_t total = out.numel();
  if (total == 0) return;
  if (((in.shape() == out_shape) && ...)) {
    parallel_for(total, kElementwiseMinChunk, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        o[i] = std::apply([&](const TI*... p) { return op(p[i]...); }, pointers);
      }
    });
    return;
  }
  const std::array<Shape, kInputs> strides{broadcast_strides(in.shape(), out_shape)...};
  const std::size_t rank = out_shape.size();
  const std::size_t last = rank - 1;  // rank >= 1 here: a rank-0 output has rank-0 inputs
  parallel_for(total, kElementwiseMinChunk, [&](std::int64_t begin, std::int64_t end) {
    // The multi-index of `begin`, and each input's offset there.
    Shape index(rank, 0);
    std::array<std::int64_t, kInputs> offsets{};
    std::int64_t rest = begin;
    for (std::size_t d = rank; d-- > 0;) {
      index[d] = rest % out_shape[d];
      rest /= out_shape[d];
      for (std::size_t k = 0; k < kInputs; ++k) offsets[k] += index[d] * strides[k][d];
    }
    // Runs along the innermost dim, then a carry through the outer dims.
    for (std::int64_t i = begin; i < end;) {
      const std::int64_t run = std::min(end - i, out_shape[last] - index[last]);
      std::array<std::int64_t, kInputs> at = offsets;
      for (std::int64_t j = 0; j < run; ++j) {
        o[i + j] = detail::apply_at(op, pointers, at, std::index_sequence_for<TI...>{});
        for (std::size_t k = 0; k < kInputs; ++k) at[k] += strides[k][last];
      }
      i += run;
      index[last] += run;
      for (std::size_t k = 0; k < kInputs; ++k) offsets[k] += run * strides[k][last];
      for (std::size_t d = last; d > 0 && index[d] == out_shape[d]; --d) {
        index[d] = 0;
        ++index[d - 1];
        for (std::size_t k = 0; k < kInputs; ++k) {
          offsets[k] += strides[k][d - 1] - strides[k][d] * out_shape[d];
        }
      }
    }
  });
}

// Sets output 0 to the broadcast of every present input's dims, with `dtype`.
inline Status infer_broadcast_output(InferContext& ctx, DataType dtype) {
  std::vector<const Dims*> dims;
  for (int i = 0; i < ctx.input_count(); ++i) {
    if (ctx.has_input(i)) dims.push_back(ctx.input_dims(i));
  }
  FOVEA_ASSIGN_OR_RETURN(std::optional<Dims> out, broadcast_dims(ctx, dims));
  ctx.set_output(0, dtype, std::move(out));
  return Status::ok();
}

template <typename T>
bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

// One element converted from F to T as Cast defines it, never undefined behaviour: to bool is
// "nonzero"; floating to integer truncates toward zero and saturates at T's range (NaN gives 0,
// which ONNX leaves implementation-defined); between integers it wraps, like numpy's astype.
template <typename T, typename F>
T convert_value(F value) {
  if constexpr (std::is_same_v<F, Half>) {
    return convert_value<T>(half_to_float(value));
  } else if constexpr (std::is_same_v<T, Half>) {
    return float_to_half(convert_value<float>(value));
  } else if constexpr (std::is_same_v<T, bool>) {
    return value != F{0};
  } else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<F>) {
    if (std::isnan(value)) return T{0};
    // The limits as F, exactly: lowest() is -2^k (exact) and max()+1 is 2^k (exact).
    const F low = static_cast<F>(std::numeric_limits<T>::lowest());
    const F high = static_cast<F>(std::numeric_limits<T>::max() / 2 + 1) * F{2};
    if (value <= low) return std::numeric_limits<T>::lowest();
    if (value >= high) return std::numeric_limits<T>::max();
    return static_cast<T>(value);
  } else {
    return static_cast<T>(value);
  }
}

// An op functor built from the node's attributes when it has any (Op::make, validated in infer()
// and read again in run()), else default-constructed.
template <typename Op>
Result<Op> make_op(const Node& node) {
  if constexpr (requires { Op::make(node); }) {
    return Op::make(node);
  } else {
    return Op{};
  }
}

// Unary ops y = op(x) with x's dtype and shape, for x in Types.
template <typename Types, typename Op>
Status infer_unary(InferContext& ctx) {
  FOVEA_TRY(Types::require(ctx, 0));
  FOVEA_TRY(make_op<Op>(ctx.node()).status());
  return infer_same_as_input(ctx);
}

template <typename Types, typename Op>
Status run_unary(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(Op op, make_op<Op>(ctx.node()));
  Types::dispatch(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elements<T, T>(ctx.output(0), op, ctx.input(0));
  });
  return Status::ok();
}

// Broadcasting binary ops c = op(a, b), a and b of one dtype in Types; c has that dtype, or bool
// when op returns bool (comparisons).
template <typename Types, typename Op>
Status infer_binary(InferContext& ctx) {
  FOVEA_TRY(Types::require(ctx, 0));
  FOVEA_TRY(ctx.require_same_dtype(0, 1));
  DataType out = ctx.input_dtype(0);
  Types::dispatch(out, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<std::invoke_result_t<Op&, T, T>, bool>) out = DataType::kBool;
  });
  return infer_broadcast_output(ctx, out);
}

template <typename Types, typename Op>
Status run_binary(KernelContext& ctx) {
  Types::dispatch(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elements<std::invoke_result_t<Op&, T, T>, T, T>(ctx.output(0), Op{}, ctx.input(0), ctx.input(1));
  });
  return Status::ok();
}

}  // namespace fovea::runtime::ops
