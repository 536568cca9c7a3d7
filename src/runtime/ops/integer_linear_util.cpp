#include "runtime/ops/integer_linear_util.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "runtime/ops/op_util.h"

namespace fovea::runtime::ops {
namespace {

constexpr const char* kMatMulIntegerNames[] = {"A", "B", "a_zero_point", "b_zero_point"};
constexpr const char* kConvIntegerNames[] = {"x", "w", "x_zero_point", "w_zero_point"};
constexpr const char* kQLinearMatMulNames[] = {"a",       "a_scale",      "a_zero_point", "b",
                                               "b_scale", "b_zero_point", "y_scale",      "y_zero_point"};
constexpr const char* kQLinearConvNames[] = {
    "x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point", "B"};

std::string input_name(const IntegerLinearInputs& in, int i) {
  return fmt::format("input {} ({})", i, in.names[i]);
}

bool is_8bit(DataType dtype) {
  return dtype == DataType::kInt8 || dtype == DataType::kUInt8;
}

// A zero point or scale holds one value (rank 0, or [1]) or, where `per_index` says how many rows,
// columns or channels there are, a 1-D tensor of one value each. Unknown sizes pass until they are
// known.
struct PerIndex {
  bool allowed = false;
  Dim count = Dim::unknown();
  const char* what = "";
};

Status check_parameter_shape(const InferContext& ctx, const IntegerLinearInputs& in, int i,
                             const PerIndex& per) {
  const Dims* dims = ctx.input_dims(i);
  if (dims == nullptr || dims->empty()) return Status::ok();
  if (dims->size() == 1) {
    const Dim& size = (*dims)[0];
    if (!size.known() || size.value == 1) return Status::ok();
    if (per.allowed && (!per.count.known() || per.count.value == size.value)) return Status::ok();
  }
  const std::string per_index =
      per.allowed ? fmt::format(" or one per {} ({})", per.what, dims_string({per.count})) : std::string();
  return ctx.error(
      StatusCode::kInvalidArgument,
      fmt::format("{} is {}: expected one value{}", input_name(in, i), dims_string(*dims), per_index));
}

Status check_operand(const InferContext& ctx, const IntegerLinearInputs& in, int i) {
  if (is_8bit(ctx.input_dtype(i))) return Status::ok();
  return ctx.error(
      StatusCode::kInvalidArgument,
      fmt::format("{} is {}, expected int8 or uint8", input_name(in, i), data_type_name(ctx.input_dtype(i))));
}

Status check_zero_point(const InferContext& ctx, const IntegerLinearInputs& in, int i, int operand,
                        const PerIndex& per) {
  if (i < 0 || !ctx.has_input(i)) return Status::ok();
  if (ctx.input_dtype(i) != ctx.input_dtype(operand)) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("{} is {} but {} is {}: a zero point has its operand's type",
                                 input_name(in, i), data_type_name(ctx.input_dtype(i)),
                                 input_name(in, operand), data_type_name(ctx.input_dtype(operand))));
  }
  return check_parameter_shape(ctx, in, i, per);
}

// Scales are float32 and, where their values are known (constants), positive and finite: a zero,
// negative, NaN or infinite scale has no quantized meaning.
Status check_scale(const InferContext& ctx, const IntegerLinearInputs& in, int i, const PerIndex& per) {
  if (ctx.input_dtype(i) != DataType::kFloat32) {
    return ctx.error(
        StatusCode::kInvalidArgument,
        fmt::format("{} is {}, expected float32", input_name(in, i), data_type_name(ctx.input_dtype(i))));
  }
  FOVEA_TRY(check_parameter_shape(ctx, in, i, per));
  if (const Tensor* value = ctx.input_value(i); value != nullptr) {
    for (std::int64_t e = 0; e < value->numel(); ++e) {
      const float scale = value->data<float>()[e];
      if (!(scale > 0.0f) || !std::isfinite(scale)) {
        return ctx.error(StatusCode::kInvalidArgument,
                         fmt::format("{} element {} is {}: scales must be positive and finite",
                                     input_name(in, i), e, scale));
      }
    }
  }
  return Status::ok();
}

Status check_bias(const InferContext& ctx, const IntegerLinearInputs& in, const Dim& channels) {
  if (in.bias < 0 || !ctx.has_input(in.bias)) return Status::ok();
  if (ctx.input_dtype(in.bias) != DataType::kInt32) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("{} is {}, expected int32 (scale x_scale * w_scale, zero point 0)",
                                 input_name(in, in.bias), data_type_name(ctx.input_dtype(in.bias))));
  }
  const Dims* dims = ctx.input_dims(in.bias);
  if (dims == nullptr) return Status::ok();
  if (dims->size() != 1 || ((*dims)[0].known() && channels.known() && (*dims)[0].value != channels.value)) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("{} is {}, expected one value per output channel ({})",
                                 input_name(in, in.bias), dims_string(*dims), dims_string({channels})));
  }
  return Status::ok();
}

// The number of terms each output sums: a's last dim, or w's dims after the first.
Status check_depth(const InferContext& ctx, const IntegerLinearInputs& in) {
  const Dims* x = ctx.input_dims(in.x);
  const Dims* w = ctx.input_dims(in.w);
  std::int64_t depth = 1;
  if (in.convolution) {
    if (w == nullptr || w->empty()) return Status::ok();
    for (std::size_t d = 1; d < w->size(); ++d) {
      if (!(*w)[d].known()) return Status::ok();
      depth *= (*w)[d].value;
    }
  } else {
    if (x == nullptr || x->empty() || !x->back().known()) return Status::ok();
    depth = x->back().value;
  }
  if (depth <= kMaxIntegerDepth) return Status::ok();
  return ctx.error(StatusCode::kUnsupported,
                   fmt::format("each output sums {} products; int32 accumulation is exact only up to {} "
                               "(255 * 255 per product)",
                               depth, kMaxIntegerDepth));
}

Status check_conv_rank(const InferContext& ctx, int spatial_rank) {
  if (spatial_rank <= kMaxIntegerConvRank) return Status::ok();
  return ctx.error(StatusCode::kUnsupported, fmt::format("{} spatial dims; integer convolutions take 1 to {}",
                                                         spatial_rank, kMaxIntegerConvRank));
}

// The float op's output dims for operands x and w: its own inference, on a copy of this node that
// lists only them, so shapes and attributes are checked exactly as MatMul and Conv check them.
Result<std::optional<Dims>> float_op_dims(const InferContext& ctx, std::string_view op_type, int x, int w) {
  const OpDef* def = find_op("", op_type);
  FOVEA_CHECK(def != nullptr);
  Node operands = ctx.node();
  operands.inputs = {ctx.node().inputs[static_cast<std::size_t>(x)],
                     ctx.node().inputs[static_cast<std::size_t>(w)]};
  InferContext float_ctx(ctx.graph(), operands,
                         {ValueType{DataType::kFloat32, ctx.input_type(x).dims},
                          ValueType{DataType::kFloat32, ctx.input_type(w).dims}},
                         {nullptr, nullptr});
  FOVEA_TRY(def->infer(float_ctx));
  return float_ctx.outputs()[0].dims;
}

// Per-row (x) and per-column (w) sizes of a matrix product; for a convolution, x's zero point and
// scale are one value and w's are per output channel.
std::pair<PerIndex, PerIndex> per_index_sizes(const InferContext& ctx, const IntegerLinearInputs& in) {
  const Dims* x = ctx.input_dims(in.x);
  const Dims* w = ctx.input_dims(in.w);
  if (in.convolution) {
    const Dim channels = w != nullptr && !w->empty() ? (*w)[0] : Dim::unknown();
    return {PerIndex{}, PerIndex{true, channels, "output channel"}};
  }
  const Dim rows =
      x == nullptr ? Dim::unknown() : (x->size() == 1 ? Dim::known_size(1) : (*x)[x->size() - 2]);
  const Dim columns = w == nullptr ? Dim::unknown() : (w->size() == 1 ? Dim::known_size(1) : w->back());
  return {PerIndex{true, rows, "row of a"}, PerIndex{true, columns, "column of b"}};
}

}  // namespace

const IntegerLinearInputs kMatMulIntegerInputs{
    .x = 0, .x_zero_point = 2, .w = 1, .w_zero_point = 3, .names = kMatMulIntegerNames};
const IntegerLinearInputs kConvIntegerInputs{
    .x = 0, .x_zero_point = 2, .w = 1, .w_zero_point = 3, .convolution = true, .names = kConvIntegerNames};
const IntegerLinearInputs kQLinearMatMulInputs{.x = 0,
                                               .x_scale = 1,
                                               .x_zero_point = 2,
                                               .w = 3,
                                               .w_scale = 4,
                                               .w_zero_point = 5,
                                               .y_scale = 6,
                                               .y_zero_point = 7,
                                               .names = kQLinearMatMulNames};
const IntegerLinearInputs kQLinearConvInputs{.x = 0,
                                             .x_scale = 1,
                                             .x_zero_point = 2,
                                             .w = 3,
                                             .w_scale = 4,
                                             .w_zero_point = 5,
                                             .y_scale = 6,
                                             .y_zero_point = 7,
                                             .bias = 8,
                                             .convolution = true,
                                             .names = kQLinearConvNames};

Status infer_integer_linear(InferContext& ctx, const IntegerLinearInputs& in) {
  FOVEA_TRY(check_operand(ctx, in, in.x));
  FOVEA_TRY(check_operand(ctx, in, in.w));
  const auto [x_per, w_per] = per_index_sizes(ctx, in);
  FOVEA_TRY(check_zero_point(ctx, in, in.x_zero_point, in.x, x_per));
  FOVEA_TRY(check_zero_point(ctx, in, in.w_zero_point, in.w, w_per));
  DataType out_dtype = DataType::kInt32;
  if (in.y_zero_point >= 0) {
    FOVEA_TRY(check_scale(ctx, in, in.x_scale, x_per));
    FOVEA_TRY(check_scale(ctx, in, in.w_scale, w_per));
    FOVEA_TRY(check_scale(ctx, in, in.y_scale, PerIndex{}));
    FOVEA_TRY(check_operand(ctx, in, in.y_zero_point));
    FOVEA_TRY(check_parameter_shape(ctx, in, in.y_zero_point, PerIndex{}));
    out_dtype = ctx.input_dtype(in.y_zero_point);
  }
  FOVEA_TRY(check_bias(ctx, in, w_per.count));
  FOVEA_TRY(check_depth(ctx, in));
  if (const Dims* x = ctx.input_dims(in.x); in.convolution && x != nullptr) {
    FOVEA_TRY(check_conv_rank(ctx, static_cast<int>(x->size()) - 2));
  }
  FOVEA_ASSIGN_OR_RETURN(std::optional<Dims> out,
                         float_op_dims(ctx, in.convolution ? "Conv" : "MatMul", in.x, in.w));
  ctx.set_output(0, out_dtype, std::move(out));
  return Status::ok();
}

MatmulGeometry matmul_geometry(const Shape& a, const Shape& b) {
  MatmulGeometry g;
  g.a_batch = a.size() <= 2 ? Shape{} : Shape(a.begin(), a.end() - 2);
  g.b_batch = b.size() <= 2 ? Shape{} : Shape(b.begin(), b.end() - 2);
  g.batch = broadcast_shapes(g.a_batch, g.b_batch);
  g.problem = IntegerProblem{.batch = element_count(g.batch),
                             .rows = a.size() == 1 ? 1 : a[a.size() - 2],
                             .columns = b.size() == 1 ? 1 : b.back(),
                             .depth = a.back()};
  return g;
}

Result<ConvGeometry> conv_geometry(const InferContext& ctx, const Shape& x, const Shape& w) {
  ConvGeometry g;
  const int rank = static_cast<int>(x.size()) - 2;
  FOVEA_TRY(check_conv_rank(ctx, rank));
  FOVEA_ASSIGN_OR_RETURN(g.groups, ctx.node().attr_int("group", 1));
  FOVEA_ASSIGN_OR_RETURN(WindowAttributes attributes,
                         read_window_attributes(ctx, rank, Shape(w.begin() + 2, w.end())));
  FOVEA_ASSIGN_OR_RETURN(std::vector<WindowDim> dims, resolve_window(ctx, attributes, x));
  Im2col& window = g.window;
  window.rank = rank;
  window.channels = x[1];
  window.group_in = x[1] / g.groups;
  std::int64_t out_plane = 1;
  for (int d = 0; d < rank; ++d) {
    const WindowDim& dim = dims[static_cast<std::size_t>(d)];
    window.in[d] = dim.in;
    window.out[d] = dim.out;
    window.kernel[d] = dim.kernel;
    window.stride[d] = dim.stride;
    window.dilation[d] = dim.dilation;
    window.pad_begin[d] = dim.pad_begin;
    window.in_plane *= dim.in;
    window.kernel_size *= dim.kernel;
    out_plane *= dim.out;
  }
  g.problem = IntegerProblem{.batch = x[0] * g.groups,
                             .rows = w[0] / g.groups,
                             .columns = out_plane,
                             .depth = window.group_in * window.kernel_size};
  return g;
}

}  // namespace fovea::runtime::ops
