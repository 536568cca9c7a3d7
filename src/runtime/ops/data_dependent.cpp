// NonZero, Compress and Unique on the CPU: ops whose output size depends on the input's values, so
// infer() leaves that size unknown and the kernel allocates the output once it has counted.
//
//   op         dtypes                                  outputs
//   NonZero    numbers and bool (float16 via float32)  [rank, count] int64 coordinates, row-major order
//   Compress   every dtype (elements move by size)     the slices whose condition is true
//   Unique     numbers (float16 via float32)           Y, indices, inverse_indices, counts (int64)
//
// Unique compares slices as data_dependent_util.h's unique_compare does (NaN above every number
// and equal to itself, so sorting stays a strict weak order). Its unsorted form lists the distinct slices
// in the order they first occur.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "runtime/ops/data_dependent_util.h"
#include "runtime/ops/elementwise_util.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

using NonZeroTypes = DTypes<FOVEA_NUMERIC_TYPES, DataType::kBool>;

// ---- NonZero ----

Status infer_nonzero(InferContext& ctx) {
  FOVEA_TRY(NonZeroTypes::require(ctx, 0));
  const Dims* dims = ctx.input_dims(0);
  const Dim rank =
      dims == nullptr ? Dim::unknown() : Dim::known_size(std::max<std::int64_t>(1, std::ssize(*dims)));
  ctx.set_output(0, DataType::kInt64, Dims{rank, Dim::unknown()});
  return Status::ok();
}

// NonZero scans in fixed blocks: each block's count first, then each block writes its coordinates
// from its offset, both passes in parallel (a detector's score mask has millions of elements).
constexpr std::int64_t kNonZeroBlock = 65536;

Status run_nonzero(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();  // a scalar as one element, as onnxruntime
  const std::int64_t blocks = (x.numel() + kNonZeroBlock - 1) / kNonZeroBlock;
  std::vector<std::int64_t> first(static_cast<std::size_t>(blocks) + 1, 0);  // per block, then the total
  const auto rank = std::ssize(shape);
  NonZeroTypes::dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    const auto block_range = [&](std::int64_t b) {
      return std::pair{b * kNonZeroBlock, std::min(x.numel(), (b + 1) * kNonZeroBlock)};
    };
    parallel_for(blocks, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t b = begin; b < end; ++b) {
        const auto [from, to] = block_range(b);
        first[static_cast<std::size_t>(b) + 1] =
            std::count_if(in + from, in + to, [](T v) { return v != T{0}; });
      }
    });
    std::partial_sum(first.begin(), first.end(), first.begin());
    const std::int64_t count = first.back();
    auto* o = ctx.allocate_output(0, {rank, count}).template data<std::int64_t>();
    parallel_for(blocks, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t b = begin; b < end; ++b) {
        const auto [from, to] = block_range(b);
        std::int64_t j = first[static_cast<std::size_t>(b)];
        for (std::int64_t i = from; i < to; ++i) {
          if (in[i] == T{0}) continue;
          std::int64_t rest = i;
          for (std::int64_t d = rank - 1; d >= 0; --d) {
            o[d * count + j] = rest % shape[static_cast<std::size_t>(d)];
            rest /= shape[static_cast<std::size_t>(d)];
          }
          ++j;
        }
      }
    });
  });
  return Status::ok();
}

// ---- Compress ----

Status infer_compress(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(1, {DataType::kBool}));
  FOVEA_TRY(ctx.require_rank(1, 1, 1));
  const Dims* dims = ctx.input_dims(0);
  if (dims == nullptr) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  Dims out = Dims{Dim::unknown()};
  if (ctx.node().has_attribute("axis")) {
    FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis_attr, ctx.node().attr_int("axis"));
    FOVEA_ASSIGN_OR_RETURN(const int axis, normalize_axis(ctx, axis_attr, static_cast<int>(dims->size())));
    out = *dims;
    out[static_cast<std::size_t>(axis)] = Dim::unknown();
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

Status run_compress(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& condition = ctx.input(1);
  FOVEA_ASSIGN_OR_RETURN(const CompressPlan plan,
                         compress_plan(ctx.inference(), x.shape(), condition.numel()));
  const bool* keep = condition.data<bool>();
  const auto kept = static_cast<std::int64_t>(std::count(keep, keep + plan.conditions, true));
  Tensor& out = ctx.allocate_output(0, compress_output_shape(plan, x.shape(), kept));
  dispatch_by_size(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* o = out.data<T>();
    const SliceLayout& layout = plan.layout;
    for (std::int64_t outer = 0; outer < layout.outer; ++outer) {
      for (std::int64_t k = 0; k < plan.conditions; ++k) {
        if (!keep[k]) continue;
        o = std::copy_n(in + (outer * layout.n + k) * layout.inner, layout.inner, o);
      }
    }
  });
  return Status::ok();
}

// ---- Unique ----

Status infer_unique(InferContext& ctx) {
  FOVEA_TRY(NumericTypes::require(ctx, 0));
  const Dims* dims = ctx.input_dims(0);
  std::optional<Dims> y;
  Dim n = Dim::unknown();
  if (dims != nullptr) {
    y = Dims{Dim::unknown()};
    if (all_known(*dims)) n = Dim::known_size(element_count(shape_of(*dims)));
    if (ctx.node().has_attribute("axis")) {
      FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis_attr, ctx.node().attr_int("axis"));
      if (dims->empty()) {
        return ctx.error(StatusCode::kInvalidArgument,
                         "axis is set but the input is a scalar, which has no axis");
      }
      FOVEA_ASSIGN_OR_RETURN(const int axis, normalize_axis(ctx, axis_attr, static_cast<int>(dims->size())));
      y = *dims;
      n = (*dims)[static_cast<std::size_t>(axis)];
      (*y)[static_cast<std::size_t>(axis)] = Dim::unknown();
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(y));
  for (int i = 1; i < ctx.output_count(); ++i) {  // indices, inverse_indices (one per slice), counts
    ctx.set_output(i, DataType::kInt64, Dims{i == 2 ? n : Dim::unknown()});
  }
  return Status::ok();
}

// The distinct slices of `plan`: for each, its first index and how many slices equal it; and each
// slice's position among them (inverse).
struct UniqueSlices {
  std::vector<std::int64_t> first;
  std::vector<std::int64_t> count;
  std::vector<std::int64_t> inverse;
};

template <typename T>
UniqueSlices unique_slices(const UniquePlan& plan, const T* in) {
  const SliceLayout& layout = plan.layout;
  auto compare = [&](std::int64_t a, std::int64_t b) {
    return unique_compare(layout, a, b, [&](std::int64_t o) { return in[o]; });
  };
  std::vector<std::int64_t> order(static_cast<std::size_t>(layout.n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t a, std::int64_t b) { return compare(a, b) < 0; });
  UniqueSlices result;
  std::vector<std::int64_t> group_of(order.size());  // by position in `order`
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || compare(order[i - 1], order[i]) != 0) {
      result.first.push_back(order[i]);  // the stable sort keeps equal slices in index order
      result.count.push_back(0);
    }
    ++result.count.back();
    group_of[i] = std::ssize(result.first) - 1;
  }
  // Unsorted: the groups in the order their first slices occur.
  std::vector<std::int64_t> rank(result.first.size());
  std::iota(rank.begin(), rank.end(), 0);
  if (!plan.sorted) {
    std::vector<std::int64_t> by_first(rank);
    std::sort(by_first.begin(), by_first.end(), [&](std::int64_t a, std::int64_t b) {
      return result.first[static_cast<std::size_t>(a)] < result.first[static_cast<std::size_t>(b)];
    });
    UniqueSlices reordered;
    for (std::size_t r = 0; r < by_first.size(); ++r) {
      const auto g = static_cast<std::size_t>(by_first[r]);
      rank[g] = static_cast<std::int64_t>(r);
      reordered.first.push_back(result.first[g]);
      reordered.count.push_back(result.count[g]);
    }
    result = std::move(reordered);
  }
  result.inverse.resize(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    result.inverse[static_cast<std::size_t>(order[i])] = rank[static_cast<std::size_t>(group_of[i])];
  }
  return result;
}

Status run_unique(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(const UniquePlan plan, unique_plan(ctx.inference(), x.shape()));
  NumericTypes::dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    const UniqueSlices slices = unique_slices(plan, in);
    const auto distinct = std::ssize(slices.first);
    const SliceLayout& layout = plan.layout;
    T* y = ctx.allocate_output(0, unique_output_shape(plan, x.shape(), distinct)).data<T>();
    for (std::int64_t outer = 0; outer < layout.outer; ++outer) {
      for (std::int64_t u = 0; u < distinct; ++u) {
        std::copy_n(in + (outer * layout.n + slices.first[static_cast<std::size_t>(u)]) * layout.inner,
                    layout.inner, y + (outer * distinct + u) * layout.inner);
      }
    }
    const std::vector<std::int64_t>* outputs[] = {&slices.first, &slices.inverse, &slices.count};
    for (int i = 1; i < ctx.output_count(); ++i) {  // absent ones too: the executor drops them
      const std::vector<std::int64_t>& values = *outputs[i - 1];
      Tensor& out = ctx.allocate_output(i, {std::ssize(values)});
      std::copy(values.begin(), values.end(), out.data<std::int64_t>());
    }
  });
  return Status::ok();
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "NonZero", .infer = infer_nonzero, .run = run_nonzero});
FOVEA_REGISTER_OP(
    {.op_type = "Compress", .min_inputs = 2, .max_inputs = 2, .infer = infer_compress, .run = run_compress});
FOVEA_REGISTER_OP({.op_type = "Unique", .max_outputs = 4, .infer = infer_unique, .run = run_unique});

}  // namespace fovea::runtime::ops
