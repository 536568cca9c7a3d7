// Conv (N-D, groups, dilations, strides, pads, auto_pad, bias) as one matrix product per image and
// group: Y_g (M/group x out_plane) = W_g (M/group x C/group*kernel) * columns, where the columns are
// the input windows packed straight into the gemm's B panels (implicit im2col, no column buffer).
// A 1x1 convolution with stride 1 and no padding multiplies by the input itself; a 2-D one with one
// input channel per group (depthwise) runs as direct loops instead (depthwise_2d).
#include <algorithm>

#include <fmt/format.h>

#include "runtime/ops/conv_util.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/op_util.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

constexpr int kX = 0;
constexpr int kW = 1;
constexpr int kB = 2;
constexpr int kZ = 3;

// Below this many flops per (image, group) product, images and groups run in parallel instead of
// inside each product (depthwise convolutions: thousands of tiny products).
constexpr double kSmallBlockFlops = 1 << 22;
// Elements per parallel chunk of the bias and activation passes.
constexpr std::int64_t kElementwiseChunk = 1 << 15;

// The concrete geometry of one Conv call.
struct ConvShape {
  std::int64_t batch = 0;
  std::int64_t channels = 0;
  std::int64_t out_channels = 0;
  std::int64_t groups = 1;
  std::vector<WindowDim> dims;
  std::int64_t in_plane = 1;
  std::int64_t out_plane = 1;
  std::int64_t kernel_size = 1;

  std::int64_t group_in() const { return channels / groups; }
  std::int64_t group_out() const { return out_channels / groups; }
  // The gemm's K: one weight row covers C/group channels times the kernel window.
  std::int64_t depth() const { return group_in() * kernel_size; }
  // A 1x1 window with stride 1 and no padding reads the input plane as it is.
  bool pointwise() const {
    return std::all_of(dims.begin(), dims.end(), [](const WindowDim& d) {
      return d.kernel == 1 && d.stride == 1 && d.pad_begin == 0 && d.in == d.out;
    });
  }
};

Status check_channels(const InferContext& ctx, const Dims* x, const Dims* w, std::int64_t groups) {
  if (w != nullptr && (*w)[0].known() && (*w)[0].value % groups != 0) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("{} output channels do not split into group={}", (*w)[0].value, groups));
  }
  if (x != nullptr && w != nullptr && (*x)[1].known() && (*w)[1].known() &&
      (*x)[1].value != (*w)[1].value * groups) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("input has {} channels but weights {} with group={} expect {}",
                                 (*x)[1].value, dims_string(*w), groups, (*w)[1].value * groups));
  }
  if (const Dims* b = ctx.has_input(kB) ? ctx.input_dims(kB) : nullptr; b != nullptr && w != nullptr) {
    FOVEA_TRY(ctx.require_rank(kB, 1, 1));
    if ((*b)[0].known() && (*w)[0].known() && (*b)[0].value != (*w)[0].value) {
      return ctx.error(StatusCode::kInvalidArgument, fmt::format("bias has {} entries for {} output channels",
                                                                 (*b)[0].value, (*w)[0].value));
    }
  }
  return Status::ok();
}

// The residual input of fovea.FusedConv must have the output's shape (no broadcasting).
Status check_residual(const InferContext& ctx, const Dims& out) {
  const Dims* z = ctx.input_dims(kZ);
  if (z == nullptr) return Status::ok();
  bool same = z->size() == out.size();
  for (std::size_t d = 0; same && d < out.size(); ++d) {
    same = !(*z)[d].known() || !out[d].known() || (*z)[d].value == out[d].value;
  }
  if (!same) {
    return ctx.error(
        StatusCode::kInvalidArgument,
        fmt::format("residual input {} does not match the output {}", dims_string(*z), dims_string(out)));
  }
  return Status::ok();
}

Result<ConvShape> conv_shape(const InferContext& ctx, const Shape& x, const Shape& w) {
  ConvShape s;
  FOVEA_ASSIGN_OR_RETURN(s.groups, ctx.node().attr_int("group", 1));
  FOVEA_ASSIGN_OR_RETURN(WindowAttributes window, read_window_attributes(ctx, static_cast<int>(x.size()) - 2,
                                                                         Shape(w.begin() + 2, w.end())));
  FOVEA_ASSIGN_OR_RETURN(s.dims, resolve_window(ctx, window, x));
  s.batch = x[0];
  s.channels = x[1];
  s.out_channels = w[0];
  for (const WindowDim& d : s.dims) {
    s.in_plane *= d.in;
    s.out_plane *= d.out;
    s.kernel_size *= d.kernel;
  }
  return s;
}

// B of the convolution's gemm read from the input image: row k = (channel, kernel offset), column
// n = output position; positions in the padding read as zero.
template <typename T>
PackB<T> pack_im2col(const T* x, const ConvShape& s) {
  return [x, &s](std::int64_t k0, std::int64_t kc, std::int64_t n0, std::int64_t nc, T* panel) {
    constexpr std::int64_t kNR = kGemmNR<T>;
    const std::size_t rank = s.dims.size();
    constexpr auto kPanel = static_cast<std::size_t>(kNR);
    const auto cols = static_cast<std::size_t>(nc);
    const auto rows = static_cast<std::size_t>(kc);
    // Per column and dim: the input coordinate where its window starts; per column: its offset in
    // the plane, and whether the whole window lies inside the input (most columns of a large image).
    std::vector<std::int64_t> start(rank * cols);
    std::vector<std::int64_t> column_offset(cols, 0);
    std::vector<bool> interior(cols, true);
    std::vector<std::int64_t> position(rank);
    for (std::int64_t n = n0, d = static_cast<std::int64_t>(rank); d-- > 0;) {
      position[static_cast<std::size_t>(d)] = n % s.dims[static_cast<std::size_t>(d)].out;
      n /= s.dims[static_cast<std::size_t>(d)].out;
    }
    std::vector<std::int64_t> in_stride(rank, 1);
    for (std::size_t d = rank - 1; d-- > 0;) in_stride[d] = in_stride[d + 1] * s.dims[d + 1].in;
    for (std::size_t j = 0; j < cols; ++j) {
      for (std::size_t d = 0; d < rank; ++d) {
        const WindowDim& dim = s.dims[d];
        const std::int64_t first = position[d] * dim.stride - dim.pad_begin;
        start[d * cols + j] = first;
        column_offset[j] += first * in_stride[d];
        interior[j] = interior[j] && first >= 0 && first + (dim.kernel - 1) * dim.dilation < dim.in;
      }
      for (std::size_t d = rank; d-- > 0;) {
        if (++position[d] < s.dims[d].out) break;
        position[d] = 0;
      }
    }
    // Per row: the offset of its channel and kernel tap, and per dim the tap's offset.
    std::vector<std::int64_t> row_offset(rows);
    std::vector<std::int64_t> tap(rank * rows);
    for (std::size_t p = 0; p < rows; ++p) {
      const std::int64_t k = k0 + static_cast<std::int64_t>(p);
      row_offset[p] = (k / s.kernel_size) * s.in_plane;
      std::int64_t r = k % s.kernel_size;
      for (std::size_t d = rank; d-- > 0;) {
        tap[d * rows + p] = (r % s.dims[d].kernel) * s.dims[d].dilation;
        row_offset[p] += tap[d * rows + p] * in_stride[d];
        r /= s.dims[d].kernel;
      }
    }

    for (std::size_t j0 = 0; j0 < cols; j0 += kPanel) {
      const bool all_interior =
          j0 + kPanel <= cols &&
          std::all_of(interior.begin() + static_cast<std::ptrdiff_t>(j0),
                      interior.begin() + static_cast<std::ptrdiff_t>(j0 + kPanel), [](bool b) { return b; });
      for (std::size_t p = 0; p < rows; ++p, panel += kPanel) {
        const T* row = x + row_offset[p];
        if (all_interior) {
          for (std::size_t q = 0; q < kPanel; ++q) panel[q] = row[column_offset[j0 + q]];
          continue;
        }
        for (std::size_t q = 0; q < kPanel; ++q) {
          const std::size_t j = j0 + q;
          bool inside = j < cols;
          for (std::size_t d = 0; inside && d < rank; ++d) {
            const std::int64_t i = start[d * cols + j] + tap[d * rows + p];
            inside = i >= 0 && i < s.dims[d].in;
          }
          panel[q] = inside ? row[column_offset[j]] : T(0);
        }
      }
    }
  };
}

// A 2-D convolution whose groups read one input channel each (depthwise: MobileNet, EfficientNet,
// ConvNeXt) as direct loops: as a product its A has one row per output channel, and the packed
// product computed a 12-row tile for it (a 3x3 layer of 256 channels at 80 x 80 ran at 2 GFLOPS).
// Per output row and tap, the columns whose input lies inside the image form one run, a loop the
// compiler vectorizes. y holds the bias and residual already when `accumulate`.
template <typename T>
void depthwise_2d(const T* x, const T* w, T* y, const ConvShape& s, std::int64_t channels, bool accumulate) {
  const WindowDim& dh = s.dims[0];
  const WindowDim& dw = s.dims[1];
  for (std::int64_t m = 0; m < channels; ++m) {
    const T* taps = w + m * s.kernel_size;
    for (std::int64_t oh = 0; oh < dh.out; ++oh) {
      T* row = y + m * s.out_plane + oh * dw.out;
      if (!accumulate) std::fill(row, row + dw.out, T(0));
      for (std::int64_t kh = 0; kh < dh.kernel; ++kh) {
        const std::int64_t ih = oh * dh.stride - dh.pad_begin + kh * dh.dilation;
        if (ih < 0 || ih >= dh.in) continue;
        const T* x_row = x + ih * dw.in;
        for (std::int64_t kw = 0; kw < dw.kernel; ++kw) {
          const T tap = taps[kh * dw.kernel + kw];
          // Output columns ow with 0 <= ow * stride + offset < in.
          const std::int64_t offset = kw * dw.dilation - dw.pad_begin;
          const std::int64_t first = offset >= 0 ? 0 : (-offset + dw.stride - 1) / dw.stride;
          const std::int64_t last =
              dw.in - offset <= 0 ? 0 : std::min(dw.out, (dw.in - offset - 1) / dw.stride + 1);
          if (dw.stride == 1) {
            for (std::int64_t ow = first; ow < last; ++ow) row[ow] += tap * x_row[ow + offset];
          } else {
            for (std::int64_t ow = first; ow < last; ++ow) row[ow] += tap * x_row[ow * dw.stride + offset];
          }
        }
      }
    }
  }
}

template <typename T>
void run_conv_typed(KernelContext& ctx, const ConvShape& s, const Activation& activation) {
  const T* x = ctx.input(kX).data<T>();
  const T* w = ctx.input(kW).data<T>();
  const T* bias = ctx.has_input(kB) ? ctx.input(kB).data<T>() : nullptr;
  const T* residual = ctx.has_input(kZ) ? ctx.input(kZ).data<T>() : nullptr;
  T* y = ctx.output(0).data<T>();
  const std::int64_t group_out = s.group_out();
  const std::int64_t block_size = group_out * s.out_plane;

  auto run_block = [&](std::int64_t block) {
    const std::int64_t n = block / s.groups;
    const std::int64_t g = block % s.groups;
    const std::int64_t first_channel = n * s.out_channels + g * group_out;
    T* y_block = y + first_channel * s.out_plane;
    // Bias and residual go into Y first; the product then accumulates onto them.
    const bool accumulate = bias != nullptr || residual != nullptr;
    if (accumulate) {
      parallel_for(block_size, kElementwiseChunk, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) {
          const T b = bias != nullptr ? bias[g * group_out + i / s.out_plane] : T(0);
          y_block[i] = residual != nullptr ? b + residual[first_channel * s.out_plane + i] : b;
        }
      });
    }
    const T* x_block = x + (n * s.channels + g * s.group_in()) * s.in_plane;
    const T* w_block = w + g * group_out * s.depth();
    if (s.group_in() == 1 && s.dims.size() == 2) {
      depthwise_2d(x_block, w_block, y_block, s, group_out, accumulate);
    } else {
      const PackB<T> pack_b =
          s.pointwise() ? pack_matrix(MatrixView<T>{x_block, s.in_plane, 1}) : pack_im2col(x_block, s);
      gemm(group_out, s.out_plane, s.depth(), T(1), MatrixView<T>{w_block, s.depth(), 1}, pack_b,
           accumulate ? T(1) : T(0), y_block, s.out_plane);
    }
    if (activation.kind != Activation::Kind::kNone) {
      parallel_for(block_size, kElementwiseChunk, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) y_block[i] = activation.apply(y_block[i]);
      });
    }
  };

  const std::int64_t blocks = s.batch * s.groups;
  const double block_flops = 2.0 * static_cast<double>(block_size) * static_cast<double>(s.depth());
  if (blocks > 1 && (blocks >= 4 * cpu_thread_count() || block_flops < kSmallBlockFlops)) {
    parallel_for(blocks, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t b = begin; b < end; ++b) run_block(b);
    });
  } else {
    for (std::int64_t b = 0; b < blocks; ++b) run_block(b);
  }
}

Status run_conv_op(KernelContext& ctx) {
  return run_conv(ctx, Activation{});
}

}  // namespace

Status infer_conv(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(kX, {FOVEA_FLOAT_TYPES}));
  for (int i = kW; i < ctx.input_count(); ++i) {
    if (ctx.has_input(i)) FOVEA_TRY(ctx.require_same_dtype(kX, i));
  }
  const DataType dtype = ctx.input_dtype(kX);
  const Dims* x = ctx.input_dims(kX);
  const Dims* w = ctx.input_dims(kW);
  if (x == nullptr && w == nullptr) {
    ctx.set_output(0, dtype, std::nullopt);
    return Status::ok();
  }
  const int rank = static_cast<int>(x != nullptr ? x->size() : w->size());
  if (rank < 3) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("input has rank {}, expected [N, C, spatial...] of rank >= 3", rank));
  }
  FOVEA_TRY(ctx.require_rank(kX, rank, rank));
  FOVEA_TRY(ctx.require_rank(kW, rank, rank));
  FOVEA_ASSIGN_OR_RETURN(std::int64_t groups, ctx.node().attr_int("group", 1));
  if (groups < 1) {
    return ctx.error(StatusCode::kInvalidArgument, fmt::format("group={} must be positive", groups));
  }
  FOVEA_TRY(check_channels(ctx, x, w, groups));

  Dims out{x != nullptr ? (*x)[0] : Dim::unknown(), w != nullptr ? (*w)[0] : Dim::unknown()};
  const auto kernel = weights_kernel_shape(w);
  if (x != nullptr && (kernel || ctx.node().has_attribute("kernel_shape"))) {
    FOVEA_ASSIGN_OR_RETURN(WindowAttributes window, read_window_attributes(ctx, rank - 2, kernel));
    FOVEA_ASSIGN_OR_RETURN(Dims spatial, window_output_spatial_dims(ctx, window, *x));
    out.insert(out.end(), spatial.begin(), spatial.end());
  } else {
    out.resize(static_cast<std::size_t>(rank), Dim::unknown());
  }
  if (ctx.has_input(kZ)) FOVEA_TRY(check_residual(ctx, out));
  ctx.set_output(0, dtype, std::move(out));
  return Status::ok();
}

Status run_conv(KernelContext& ctx, const Activation& activation) {
  const InferContext concrete = ctx.inference();
  FOVEA_ASSIGN_OR_RETURN(ConvShape s, conv_shape(concrete, ctx.input(kX).shape(), ctx.input(kW).shape()));
  dispatch<FOVEA_FLOAT_TYPES>(ctx.input(kX).dtype(), [&](auto tag) {
    run_conv_typed<typename decltype(tag)::type>(ctx, s, activation);
  });
  return Status::ok();
}

double conv_flops(const Node&, const std::vector<Shape>& inputs, const std::vector<Shape>& outputs) {
  // Each output element takes C/group * kernel multiply-adds: the weights' dims after the first.
  const Shape& w = inputs[kW];
  return 2.0 * static_cast<double>(element_count(outputs[0])) *
         static_cast<double>(element_count(Shape(w.begin() + 1, w.end())));
}

FOVEA_REGISTER_OP({.op_type = "Conv",
                   .min_inputs = 2,
                   .max_inputs = 3,
                   .infer = infer_conv,
                   .run = run_conv_op,
                   .flops = conv_flops});

}  // namespace fovea::runtime::ops
