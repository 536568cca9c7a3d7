// fovea.Int8Conv: an 8-bit convolution on channels_last tensors with its float epilogue, the form a
// quantized plan's "DequantizeLinear -> FusedConv (-> QuantizeLinear)" takes for the CUDA
// executor's int8 tensor-core kernel (cuda/int8_conv.h). Shared by the CPU reference
// (int8_conv.cpp) and that kernel, so that both compute the same integers bit for bit.
//
// Inputs (channels_last: X, Z and Y are [N, H, W, C], W is [M, kH, kW, C]; group 1):
//   0 X        int8, symmetric (zero point 0)
//   1 X_scale  float32 scalar
//   2 W        int8 [M, kH, kW, C], symmetric per output channel
//   3 W_scale  float32 [M]
//   4 B        float32 [M] (optional)
//   5 Z        residual with Y's shape (optional): float32, float16, or int8 read at Z_scale
//   6 Y_scale  float32 scalar (optional): Y is int8, quantized at this scale; without it Y is float
//              of attribute `to` (ONNX's TensorProto type, 1 float32 or 10 float16; default 1)
//   7 Z_scale  float32 scalar, with an int8 Z only (symmetric, zero point 0)
// Attributes: strides, pads, dilations, auto_pad, kernel_shape as Conv's; FusedConv's activation.
//
// Per output element, with acc the exact int32 sum of X * W over the window:
//   v = round(round(float(acc) * round(X_scale * W_scale[m])) + B[m])   (one rounding per step)
//   v = activation(v + Z)        (an int8 Z is round(float(Z) * Z_scale) first)
//   Y = int8: saturate(round_half_to_even(v * round(1 / Y_scale))); float: v (float16 rounded)
// The requantization multiplies by the scale's reciprocal, as TensorRT's int8 epilogues do, where
// QuantizeLinear divides: a division costs the memory-bound layers' epilogue a dozen instructions a
// value, and the two differ by one step only where v / Y_scale lands within a float rounding of a
// tie (tests: under 1% of the values of a layer).
#pragma once

#include <math.h>

#include <cstdint>
#include <string>

#include "core/host_device.h"
#include "runtime/op.h"
#include "runtime/ops/conv_util.h"

namespace fovea::runtime::ops {

inline constexpr int kInt8ConvX = 0, kInt8ConvXScale = 1, kInt8ConvW = 2, kInt8ConvWScale = 3, kInt8ConvB = 4,
                     kInt8ConvZ = 5, kInt8ConvYScale = 6, kInt8ConvZScale = 7;

struct Int8ConvGeometry {
  int batch = 0, in_h = 0, in_w = 0, channels = 0;
  int out_h = 0, out_w = 0, out_channels = 0;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;
  int pad_top = 0, pad_left = 0;  // the bottom and right pads follow from the output size

  // The product's dimensions: output pixels x output channels, reduced over the window.
  FOVEA_HD std::int64_t pixels() const { return static_cast<std::int64_t>(batch) * out_h * out_w; }
  FOVEA_HD std::int64_t reduction() const {
    return static_cast<std::int64_t>(kernel_h) * kernel_w * channels;
  }
};

// The node's geometry for concrete X [N, H, W, C] and W [M, kH, kW, C] shapes (shape inference's
// checks already passed).
Result<Int8ConvGeometry> int8_conv_geometry(const InferContext& ctx, const Shape& x, const Shape& w);

// Why the CUDA tensor-core kernel cannot take the geometry, empty when it can: it reads the
// reduction in 16-byte vectors of one pixel (input channels a multiple of 16) and writes channel
// pairs (an even output channel count). The int8 rewrite leaves such layers in float.
std::string int8_conv_unsupported(const Int8ConvGeometry& geometry);
// The same checks for X [N, H, W, C] and W [M, kH, kW, C] before the window is resolved (the
// passes that decide which layers the kernel runs).
std::string int8_conv_unsupported(const Shape& x, const Shape& w);

// Output channel m's scale, X_scale * W_scale[m].
FOVEA_HD float int8_conv_scale(float x_scale, float w_scale) {
  return mul_rn(x_scale, w_scale);
}

// The float value of one output element before the residual: the accumulator at its channel's
// scale (int8_conv_scale), then the bias.
FOVEA_HD float int8_conv_value(std::int32_t acc, float scale, float bias) {
  return add_rn(mul_rn(static_cast<float>(acc), scale), bias);
}

// An int8 residual's float value.
FOVEA_HD float int8_residual(std::int8_t z, float z_scale) {
  return mul_rn(static_cast<float>(z), z_scale);
}

// Y's int8 value for v at the reciprocal of Y_scale.
FOVEA_HD std::int8_t requantize(float v, float inverse_scale) {
  return static_cast<std::int8_t>(fminf(fmaxf(rintf(mul_rn(v, inverse_scale)), -128.0f), 127.0f));
}

}  // namespace fovea::runtime::ops
