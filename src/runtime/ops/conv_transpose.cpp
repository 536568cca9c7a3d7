// ConvTranspose (N-D, groups, strides, dilations, pads, output_padding, output_shape, auto_pad, bias)
// as gemm + col2im: per image and group, columns (M/group*kernel x in_plane) = W_g^T * X_g, then each
// column entry is added into the output position its input position and kernel tap reach.
#include <fmt/format.h>

#include "runtime/ops/conv_util.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/op_util.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

Status infer_conv_transpose(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {FOVEA_FLOAT_TYPES}));
  FOVEA_TRY(ctx.require_same_dtype(0, 1));
  if (ctx.has_input(2)) FOVEA_TRY(ctx.require_same_dtype(0, 2));
  const Dims* x = ctx.input_dims(0);
  const Dims* w = ctx.input_dims(1);
  const auto kernel = weights_kernel_shape(w);
  if (x == nullptr || (!kernel && !ctx.node().has_attribute("kernel_shape"))) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  const int rank = static_cast<int>(x->size());
  if (rank < 3) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("input has rank {}, expected [N, C, spatial...] of rank >= 3", rank));
  }
  FOVEA_TRY(ctx.require_rank(1, rank, rank));
  FOVEA_ASSIGN_OR_RETURN(TransposeAttributes t, read_transpose_attributes(ctx, rank - 2, kernel));
  if (w != nullptr && (*x)[1].known() && (*w)[0].known() && (*x)[1].value != (*w)[0].value) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("input has {} channels but weights {} expect {}", (*x)[1].value,
                                 dims_string(*w), (*w)[0].value));
  }
  if (w != nullptr && (*w)[0].known() && (*w)[0].value % t.groups != 0) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("{} input channels do not split into group={}", (*w)[0].value, t.groups));
  }
  const bool channels_known = w != nullptr && (*w)[1].known();
  Dims out{(*x)[0], channels_known ? Dim::known_size((*w)[1].value * t.groups) : Dim::unknown()};
  for (int d = 0; d < rank - 2; ++d) {
    const Dim& in = (*x)[static_cast<std::size_t>(d + 2)];
    if (!in.known()) {
      out.push_back(Dim::unknown());
      continue;
    }
    FOVEA_ASSIGN_OR_RETURN(WindowDim dim, transpose_dim(ctx, t, d, in.value));
    out.push_back(Dim::known_size(dim.out));
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

// Adds columns (rows r = (m, tap) for m in [m_begin, m_end), one column per input position) into the
// output planes of channels m.
template <typename T>
void col2im(const T* columns, const std::vector<WindowDim>& dims, std::int64_t kernel_size,
            std::int64_t in_plane, std::int64_t out_plane, std::int64_t m_begin, std::int64_t m_end, T* y) {
  const std::size_t rank = dims.size();
  std::vector<std::int64_t> tap(rank);
  std::vector<std::int64_t> position(rank);
  for (std::int64_t m = m_begin; m < m_end; ++m) {
    T* plane = y + m * out_plane;
    for (std::int64_t k = 0; k < kernel_size; ++k) {
      for (std::int64_t r = k, d = static_cast<std::int64_t>(rank); d-- > 0;) {
        tap[static_cast<std::size_t>(d)] = r % dims[static_cast<std::size_t>(d)].kernel;
        r /= dims[static_cast<std::size_t>(d)].kernel;
      }
      const T* row = columns + (m * kernel_size + k) * in_plane;
      std::fill(position.begin(), position.end(), 0);
      for (std::int64_t j = 0; j < in_plane; ++j) {
        std::int64_t offset = 0;
        bool inside = true;
        for (std::size_t d = 0; d < rank; ++d) {
          const std::int64_t o = position[d] * dims[d].stride - dims[d].pad_begin + tap[d] * dims[d].dilation;
          inside = inside && o >= 0 && o < dims[d].out;
          offset = offset * dims[d].out + o;
        }
        if (inside) plane[offset] += row[j];
        for (std::size_t d = rank; d-- > 0;) {
          if (++position[d] < dims[d].in) break;
          position[d] = 0;
        }
      }
    }
  }
}

template <typename T>
void run_typed(KernelContext& ctx, const std::vector<WindowDim>& dims, std::int64_t groups) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  Tensor& y = ctx.output(0);
  const std::int64_t batch = x.dim(0);
  const std::int64_t group_in = x.dim(1) / groups;
  const std::int64_t group_out = w.dim(1);
  const std::int64_t out_channels = group_out * groups;
  std::int64_t in_plane = 1, out_plane = 1, kernel_size = 1;
  for (const WindowDim& d : dims) {
    in_plane *= d.in;
    out_plane *= d.out;
    kernel_size *= d.kernel;
  }
  const std::int64_t rows = group_out * kernel_size;
  const T* bias = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    y.data<T>()[i] = bias != nullptr ? bias[(i / out_plane) % out_channels] : T(0);
  }
  std::vector<T> columns(static_cast<std::size_t>(rows * in_plane));
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t g = 0; g < groups; ++g) {
      const T* w_group = w.data<T>() + g * group_in * rows;
      const T* x_group = x.data<T>() + (n * x.dim(1) + g * group_in) * in_plane;
      gemm(rows, in_plane, group_in, T(1), MatrixView<T>{w_group, 1, rows},
           MatrixView<T>{x_group, in_plane, 1}, T(0), columns.data(), in_plane);
      T* y_group = y.data<T>() + (n * out_channels + g * group_out) * out_plane;
      parallel_for(group_out, 1, [&](std::int64_t begin, std::int64_t end) {
        col2im(columns.data(), dims, kernel_size, in_plane, out_plane, begin, end, y_group);
      });
    }
  }
}

Status run_conv_transpose(KernelContext& ctx) {
  const InferContext concrete = ctx.inference();
  const Shape& x = ctx.input(0).shape();
  const Shape& w = ctx.input(1).shape();
  FOVEA_ASSIGN_OR_RETURN(
      TransposeAttributes t,
      read_transpose_attributes(concrete, static_cast<int>(x.size()) - 2, Shape(w.begin() + 2, w.end())));
  std::vector<WindowDim> dims;
  for (std::size_t d = 2; d < x.size(); ++d) {
    FOVEA_ASSIGN_OR_RETURN(WindowDim dim, transpose_dim(concrete, t, static_cast<int>(d - 2), x[d]));
    dims.push_back(dim);
  }
  dispatch<FOVEA_FLOAT_TYPES>(
      ctx.input(0).dtype(), [&](auto tag) { run_typed<typename decltype(tag)::type>(ctx, dims, t.groups); });
  return Status::ok();
}

double conv_transpose_flops(const Node&, const std::vector<Shape>& inputs, const std::vector<Shape>&) {
  // Each input element is multiplied into M/group * kernel outputs: the weights' dims after the first.
  const Shape& w = inputs[1];
  return 2.0 * static_cast<double>(element_count(inputs[0])) *
         static_cast<double>(element_count(Shape(w.begin() + 1, w.end())));
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "ConvTranspose",
                   .min_inputs = 2,
                   .max_inputs = 3,
                   .infer = infer_conv_transpose,
                   .run = run_conv_transpose,
                   .flops = conv_transpose_flops});

}  // namespace fovea::runtime::ops
