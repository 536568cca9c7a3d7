// Sliding-window geometry shared by Conv, ConvTranspose, fovea.FusedConv and the pools (kernel_shape,
// strides, dilations, pads, auto_pad, ceil_mode and the output-size arithmetic), plus the Conv
// kernel entry points that fovea.FusedConv reuses.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/op.h"

namespace fovea::runtime::ops {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// The window attributes of one node, validated for its spatial rank.
struct WindowAttributes {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<std::int64_t> kernel;
  std::vector<std::int64_t> strides;
  std::vector<std::int64_t> dilations;
  std::vector<std::int64_t> pads;  // all begins, then all ends (ONNX order)
  bool ceil_mode = false;
};

// Reads the attributes; `kernel_from_weights` stands in for an absent kernel_shape (Conv infers it
// from W), nullopt makes kernel_shape required (pools).
Result<WindowAttributes> read_window_attributes(
    const InferContext& ctx, int spatial_rank,
    const std::optional<std::vector<std::int64_t>>& kernel_from_weights);

// The spatial dims of weights [M, C, spatial...] when all are known: the kernel_shape Conv and
// ConvTranspose infer when the attribute is absent.
std::optional<std::vector<std::int64_t>> weights_kernel_shape(const Dims* weights);

// One spatial dimension of a window op, resolved for a concrete input size.
struct WindowDim {
  std::int64_t in = 0;
  std::int64_t out = 0;
  std::int64_t kernel = 1;
  std::int64_t stride = 1;
  std::int64_t dilation = 1;
  std::int64_t pad_begin = 0;
  std::int64_t pad_end = 0;  // as given or computed; the last window may reach past it in ceil_mode
};

// Output size of spatial dim d (auto_pad and ceil_mode applied) or an error when the window does not
// fit the padded input.
Result<WindowDim> resolve_window_dim(const InferContext& ctx, const WindowAttributes& window, int d,
                                     std::int64_t in);

// Spatial output dims for input dims [N, C, spatial...] whose sizes may be unknown.
Result<Dims> window_output_spatial_dims(const InferContext& ctx, const WindowAttributes& window,
                                        const Dims& input);

// All spatial dims for a concrete input shape [N, C, spatial...].
Result<std::vector<WindowDim>> resolve_window(const InferContext& ctx, const WindowAttributes& window,
                                              const Shape& input);

// The activation fovea.FusedConv applies in the convolution's epilogue.
struct Activation {
  enum class Kind { kNone, kRelu, kLeakyRelu, kClip, kSigmoid, kHardSwish, kSilu };
  Kind kind = Kind::kNone;
  float alpha = 0.01f;  // LeakyRelu
  float min = 0;        // Clip
  float max = 0;        // Clip

  template <typename T>
  T apply(T x) const {
    switch (kind) {
      case Kind::kNone: return x;
      case Kind::kRelu: return std::max(x, T(0));
      case Kind::kLeakyRelu: return x < T(0) ? T(alpha) * x : x;
      case Kind::kClip: return std::min(std::max(x, T(min)), T(max));
      case Kind::kSigmoid: return T(1) / (T(1) + std::exp(-x));
      case Kind::kHardSwish: return x * std::clamp(x / T(6) + T(0.5), T(0), T(1));
      case Kind::kSilu: return x / (T(1) + std::exp(-x));
    }
    return x;
  }
};

// ConvTranspose's attributes, shared by the CPU and CUDA kernels.
struct TransposeAttributes {
  WindowAttributes window;
  std::int64_t groups = 1;
  std::vector<std::int64_t> output_padding;
  std::vector<std::int64_t> output_shape;  // spatial; empty when absent
};

Result<TransposeAttributes> read_transpose_attributes(const InferContext& ctx, int spatial_rank,
                                                      const std::optional<std::vector<std::int64_t>>& kernel);

// Spatial dim d of a ConvTranspose for input size `in`: the output size and the padding, per the
// ONNX spec (pads may come out negative when output_shape asks for more than the full output).
Result<WindowDim> transpose_dim(const InferContext& ctx, const TransposeAttributes& t, int d,
                                std::int64_t in);

// Permutations as Transpose's perm, out[d] = in[perm[d]], at any rank; the two rank-4 ones are the
// channels_last forms of fovea.FusedConv and fovea.MaxPool.
inline const std::vector<std::int64_t> kNhwcToNchw = {0, 3, 1, 2};
inline const std::vector<std::int64_t> kNchwToNhwc = {0, 2, 3, 1};
Dims permute_dims(const Dims& dims, const std::vector<std::int64_t>& perm);
Tensor permute_tensor(const Tensor& tensor, const std::vector<std::int64_t>& perm);
Shape permute_tensor_shape(const Shape& shape, const std::vector<std::int64_t>& perm);

// fovea.FusedConv's "activation" attributes (see fused_conv.cpp); the CPU and CUDA kernels both read
// them here.
Result<Activation> read_activation(const InferContext& ctx);

// Conv and fovea.FusedConv share one implementation: inputs X, W, B (optional), Z (optional residual,
// FusedConv only); output = activation(conv(X, W) + B + Z).
Status infer_conv(InferContext& ctx);
Status run_conv(KernelContext& ctx, const Activation& activation);
double conv_flops(const Node& node, const std::vector<Shape>& inputs, const std::vector<Shape>& outputs);

}  // namespace fovea::runtime::ops
