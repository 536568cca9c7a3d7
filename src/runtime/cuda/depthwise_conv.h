// fovea's own depthwise convolution for channels_last plans: x [N, H, W, C] and y [N, OH, OW, C]
// (NHWC), one filter per channel (group == C, one output channel per group), with the epilogue
// (bias, residual, activation) in the same pass. Conv times it against cuDNN's algorithms and
// keeps the faster (conv.cu): on the H200, cuDNN ran ConvNeXt-Tiny's 7x7 depthwise convolutions at
// batch 64 with conv2d_grouped_direct_kernel, 0.3-2.4 ms each and 78% of the model's time, where
// the data they move takes tens of microseconds.
//
// Each thread computes a run of outputs along a row for a vector of channels (16 bytes where the
// channel count allows), accumulating in float: consecutive threads read consecutive vectors of one
// pixel, and for 3x3, 5x5 and 7x7 windows at stride 1 or 2 each row's input is loaded once into
// registers for the whole run (other geometries re-read the overlap from L1).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "core/status.h"
#include "runtime/ops/conv_util.h"
#include "runtime/tensor.h"

namespace fovea::runtime::cuda {

struct DepthwiseGeometry {
  int batch = 0, in_h = 0, in_w = 0, channels = 0;
  int out_h = 0, out_w = 0;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;
  int pad_top = 0, pad_left = 0;  // the bottom and right pads follow from the output size
};

struct DepthwiseOperands {
  const void* x = nullptr;         // [N, in_h, in_w, C]
  const void* weights = nullptr;   // [kernel_h, kernel_w, C]: depthwise_weights_by_tap's order
  const void* bias = nullptr;      // [C], or none
  const void* residual = nullptr;  // [N, out_h, out_w, C], or none
  void* y = nullptr;               // [N, out_h, out_w, C]
};

// ONNX's depthwise weights, [C, 1, kH, kW] (channels_last's [C, kH, kW, 1] is the same memory), as
// the kernel reads them: [kH, kW, C], so that one tap's weights for a vector of channels are one
// load. Float32 and float16.
std::vector<std::byte> depthwise_weights_by_tap(const Tensor& weights);

// y = activation(depthwise(x) + bias + residual) on `stream`. Float32 and float16.
Status launch_depthwise_conv(DataType dtype, const DepthwiseOperands& operands,
                             const DepthwiseGeometry& geometry, const ops::Activation& activation,
                             cudaStream_t stream);

}  // namespace fovea::runtime::cuda
