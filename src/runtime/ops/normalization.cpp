// BatchNormalization (inference only), InstanceNormalization and LayerNormalization; and
// fovea.BatchNormalization: the inference BatchNormalization of an NHWC value (channels_last=1),
// optionally with the ReLU that follows it (activation="Relu"), as the channels_last pass writes a
// pre-activation BatchNorm whose readers are NHWC convolutions (DenseNet's layers).
#include <cmath>

#include <fmt/format.h>

#include "runtime/ops/normalization_util.h"
#include "runtime/ops/op_util.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

// Elements per parallel chunk of the normalization passes.
constexpr std::int64_t kChunkElements = 1 << 15;

// Checks that inputs [first, last] are float, match X's dtype and are 1-D with `channels` entries.
Status check_channel_params(const InferContext& ctx, int first, int last, const Dim& channels) {
  for (int i = first; i <= last; ++i) {
    FOVEA_TRY(ctx.require_same_dtype(0, i));
    FOVEA_TRY(ctx.require_rank(i, 1, 1));
    const Dims* dims = ctx.input_dims(i);
    if (dims != nullptr && (*dims)[0].known() && channels.known() && (*dims)[0].value != channels.value) {
      return ctx.error(StatusCode::kInvalidArgument, fmt::format("input {} has {} entries for {} channels", i,
                                                                 (*dims)[0].value, channels.value));
    }
  }
  return Status::ok();
}

Status infer_batch_norm(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {FOVEA_FLOAT_TYPES}));
  FOVEA_TRY(ctx.require_rank(0, 2, kMaxTensorRank));
  FOVEA_ASSIGN_OR_RETURN(std::int64_t training, ctx.node().attr_int("training_mode", 0));
  if (training != 0 || ctx.output_count() > 1) {
    return ctx.error(StatusCode::kUnsupported,
                     "training_mode and the running-statistics outputs are not supported "
                     "(inference only)");
  }
  const Dims* x = ctx.input_dims(0);
  FOVEA_TRY(check_channel_params(ctx, 1, 4, x != nullptr ? (*x)[1] : Dim::unknown()));
  return infer_same_as_input(ctx);
}

Status infer_nhwc_batch_norm(InferContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(std::int64_t channels_last, ctx.node().attr_int("channels_last", 0));
  if (channels_last != 1) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("channels_last={} is not 1: fovea.BatchNormalization normalizes NHWC only "
                                 "(ONNX's BatchNormalization is NCHW)",
                                 channels_last));
  }
  FOVEA_TRY(batch_norm_activation(ctx.node()).status());
  FOVEA_TRY(ctx.require_dtype(0, {FOVEA_FLOAT_TYPES}));
  FOVEA_TRY(ctx.require_rank(0, 4, 4));
  const Dims* x = ctx.input_dims(0);
  FOVEA_TRY(check_channel_params(ctx, 1, 4, x != nullptr ? (*x)[3] : Dim::unknown()));
  return infer_same_as_input(ctx);
}

// y = x * a + b per channel, with a = scale / sqrt(var + eps) and b = B - mean * a; then the ReLU
// when `relu`. The channel is X's axis 1, or its last axis when `channels_last`.
template <typename T>
void batch_norm_typed(KernelContext& ctx, float epsilon, bool channels_last, bool relu) {
  const Tensor& x = ctx.input(0);
  const std::int64_t channels = channels_last ? x.dim(x.rank() - 1) : x.dim(1);
  const std::int64_t plane = channels_last ? 1 : x.numel() / std::max<std::int64_t>(x.dim(0) * channels, 1);
  std::vector<T> a(static_cast<std::size_t>(channels));
  std::vector<T> b(static_cast<std::size_t>(channels));
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto i = static_cast<std::size_t>(c);
    a[i] = static_cast<T>(static_cast<double>(ctx.input(1).data<T>()[c]) /
                          std::sqrt(static_cast<double>(ctx.input(4).data<T>()[c]) + epsilon));
    b[i] = ctx.input(2).data<T>()[c] - ctx.input(3).data<T>()[c] * a[i];
  }
  const T* in = x.data<T>();
  T* out = ctx.output(0).data<T>();
  const T zero = static_cast<T>(0.0f);
  parallel_for(x.numel(), kChunkElements, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const auto c = static_cast<std::size_t>((i / plane) % channels);
      const T v = in[i] * a[c] + b[c];
      out[i] = relu && v < zero ? zero : v;
    }
  });
}

Status run_batch_norm(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(float epsilon, ctx.node().attr_float("epsilon", 1e-5f));
  dispatch<FOVEA_FLOAT_TYPES>(ctx.input(0).dtype(), [&](auto tag) {
    batch_norm_typed<typename decltype(tag)::type>(ctx, epsilon, false, false);
  });
  return Status::ok();
}

Status run_nhwc_batch_norm(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(float epsilon, ctx.node().attr_float("epsilon", 1e-5f));
  FOVEA_ASSIGN_OR_RETURN(const BatchNormActivation activation, batch_norm_activation(ctx.node()));
  dispatch<FOVEA_FLOAT_TYPES>(ctx.input(0).dtype(), [&](auto tag) {
    batch_norm_typed<typename decltype(tag)::type>(ctx, epsilon, true,
                                                   activation == BatchNormActivation::kRelu);
  });
  return Status::ok();
}

// Normalizes each of `rows` contiguous rows of `length` elements to zero mean and unit variance, then
// applies affine(row, i, normalized); stores each row's mean and 1 / stddev when asked.
template <typename T, typename Affine>
void normalize_rows(const T* x, T* y, std::int64_t rows, std::int64_t length, double epsilon, Affine affine,
                    T* mean_out, T* inv_std_out) {
  parallel_for(rows, std::max<std::int64_t>(1, kChunkElements / std::max<std::int64_t>(length, 1)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t r = begin; r < end; ++r) {
                   const T* in = x + r * length;
                   double sum = 0;
                   for (std::int64_t i = 0; i < length; ++i) sum += static_cast<double>(in[i]);
                   const double mean = sum / static_cast<double>(length);
                   double squares = 0;
                   for (std::int64_t i = 0; i < length; ++i) {
                     const double d = static_cast<double>(in[i]) - mean;
                     squares += d * d;
                   }
                   const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(length) + epsilon);
                   for (std::int64_t i = 0; i < length; ++i) {
                     y[r * length + i] =
                         affine(r, i, static_cast<T>((static_cast<double>(in[i]) - mean) * inv_std));
                   }
                   if (mean_out != nullptr) mean_out[r] = static_cast<T>(mean);
                   if (inv_std_out != nullptr) inv_std_out[r] = static_cast<T>(inv_std);
                 }
               });
}

Status infer_instance_norm(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {FOVEA_FLOAT_TYPES}));
  FOVEA_TRY(ctx.require_rank(0, 3, kMaxTensorRank));
  const Dims* x = ctx.input_dims(0);
  FOVEA_TRY(check_channel_params(ctx, 1, 2, x != nullptr ? (*x)[1] : Dim::unknown()));
  return infer_same_as_input(ctx);
}

Status run_instance_norm(KernelContext& ctx) {
  FOVEA_ASSIGN_OR_RETURN(float epsilon, ctx.node().attr_float("epsilon", 1e-5f));
  const Tensor& x = ctx.input(0);
  const std::int64_t channels = x.dim(1);
  const std::int64_t rows = x.dim(0) * channels;
  const std::int64_t plane = rows == 0 ? 0 : x.numel() / rows;
  dispatch<FOVEA_FLOAT_TYPES>(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* scale = ctx.input(1).data<T>();
    const T* bias = ctx.input(2).data<T>();
    normalize_rows<T>(
        x.data<T>(), ctx.output(0).data<T>(), rows, plane, epsilon,
        [&](std::int64_t r, std::int64_t, T v) { return v * scale[r % channels] + bias[r % channels]; },
        nullptr, nullptr);
  });
  return Status::ok();
}

Status infer_layer_norm(InferContext& ctx) {
  FOVEA_TRY(ctx.require_dtype(0, {FOVEA_FLOAT_TYPES}));
  for (int i = 1; i < ctx.input_count(); ++i) {
    if (ctx.has_input(i)) FOVEA_TRY(ctx.require_same_dtype(0, i));
  }
  FOVEA_ASSIGN_OR_RETURN(std::int64_t axis_attr, ctx.node().attr_int("axis", -1));
  const Dims* x = ctx.input_dims(0);
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_type(0).dims);
  if (x == nullptr) {
    for (int i = 1; i < ctx.output_count(); ++i) ctx.set_output(i, ctx.input_dtype(0), std::nullopt);
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(int axis, normalize_axis(ctx, axis_attr, static_cast<int>(x->size())));
  const Dims normalized(x->begin() + axis, x->end());
  for (int i = 1; i < ctx.input_count(); ++i) {
    // Scale and B broadcast to the normalized dims.
    if (!ctx.has_input(i) || ctx.input_dims(i) == nullptr) continue;
    const Dims& dims = *ctx.input_dims(i);
    if (dims.size() > normalized.size()) {
      return ctx.error(StatusCode::kInvalidArgument,
                       fmt::format("input {} {} has more dims than the normalized {}", i, dims_string(dims),
                                   dims_string(normalized)));
    }
    FOVEA_TRY(broadcast_dims(ctx, {&normalized, &dims}).status());
  }
  // Mean and InvStdDev keep X's rank with the normalized dims set to 1.
  Dims stats(*x);
  std::fill(stats.begin() + axis, stats.end(), Dim::known_size(1));
  for (int i = 1; i < ctx.output_count(); ++i) ctx.set_output(i, ctx.input_dtype(0), stats);
  return Status::ok();
}

Status run_layer_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FOVEA_ASSIGN_OR_RETURN(std::int64_t axis_attr, ctx.node().attr_int("axis", -1));
  FOVEA_ASSIGN_OR_RETURN(float epsilon, ctx.node().attr_float("epsilon", 1e-5f));
  const std::int64_t axis = axis_attr < 0 ? axis_attr + x.rank() : axis_attr;
  const Shape normalized(x.shape().begin() + axis, x.shape().end());
  const std::int64_t length = element_count(normalized);
  const std::int64_t rows = length == 0 ? 0 : x.numel() / length;
  // Offsets of Scale and B for each normalized element, after broadcasting.
  const auto offsets_of = [&](int i) {
    std::vector<std::int64_t> offsets;
    if (!ctx.has_input(i)) return offsets;
    for_each_broadcast(normalized, {broadcast_strides(ctx.input(i).shape(), normalized)},
                       [&](std::int64_t, const std::vector<std::int64_t>& o) { offsets.push_back(o[0]); });
    return offsets;
  };
  const std::vector<std::int64_t> scale_at = offsets_of(1);
  const std::vector<std::int64_t> bias_at = offsets_of(2);
  dispatch<FOVEA_FLOAT_TYPES>(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* scale = ctx.input(1).data<T>();
    const T* bias = bias_at.empty() ? nullptr : ctx.input(2).data<T>();
    T* mean = ctx.output_count() > 1 ? ctx.output(1).data<T>() : nullptr;
    T* inv_std = ctx.output_count() > 2 ? ctx.output(2).data<T>() : nullptr;
    normalize_rows<T>(
        x.data<T>(), ctx.output(0).data<T>(), rows, length, epsilon,
        [&](std::int64_t, std::int64_t i, T v) {
          const auto at = static_cast<std::size_t>(i);
          return v * scale[scale_at[at]] + (bias != nullptr ? bias[bias_at[at]] : T(0));
        },
        mean, inv_std);
  });
  return Status::ok();
}

double input_elements(const Node&, const std::vector<Shape>& inputs, const std::vector<Shape>&) {
  return static_cast<double>(element_count(inputs[0]));
}

}  // namespace

FOVEA_REGISTER_OP({.op_type = "BatchNormalization",
                   .min_inputs = 5,
                   .max_inputs = 5,
                   .max_outputs = 5,
                   .infer = infer_batch_norm,
                   .run = run_batch_norm,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.domain = "fovea",
                   .op_type = "BatchNormalization",
                   .min_inputs = 5,
                   .max_inputs = 5,
                   .infer = infer_nhwc_batch_norm,
                   .run = run_nhwc_batch_norm,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "InstanceNormalization",
                   .min_inputs = 3,
                   .max_inputs = 3,
                   .infer = infer_instance_norm,
                   .run = run_instance_norm,
                   .flops = input_elements});
FOVEA_REGISTER_OP({.op_type = "LayerNormalization",
                   .min_inputs = 2,
                   .max_inputs = 3,
                   .max_outputs = 3,
                   .infer = infer_layer_norm,
                   .run = run_layer_norm,
                   .flops = input_elements});

}  // namespace fovea::runtime::ops
