// fovea's int8 tensor-core convolution (fovea.Int8Conv, ops/int8_conv_util.h) for channels_last
// plans. cuDNN offers no fast 8-bit path on Hopper (bench/int8_paths_bench.cpp: its int8
// convolutions ran 10-60x slower than its float16 ones on the H200), so fovea runs the product
// itself: an implicit GEMM of output pixels x output channels over the window, on mma.sync's
// m16n8k32 int8 tensor-core instruction with int32 accumulators, the input gathered from the NHWC
// image straight into shared memory (cp.async, zero-filled outside the image) through a multi-stage
// pipeline, and the float epilogue (scales, bias, residual, activation, requantization) applied to
// the accumulators in registers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/status.h"
#include "runtime/ops/conv_util.h"
#include "runtime/ops/int8_conv_util.h"
#include "runtime/tensor.h"

namespace fovea::runtime::cuda {

// Device pointers, as fovea.Int8Conv's inputs name them.
struct Int8ConvOperands {
  const std::int8_t* x = nullptr;        // [N, H, W, C]
  const float* x_scale = nullptr;        // scalar
  const std::int8_t* weights = nullptr;  // [M, kH, kW, C]
  const float* w_scale = nullptr;        // [M]
  const float* bias = nullptr;           // [M], or none
  const void* residual = nullptr;        // [N, OH, OW, M] of residual_dtype, or none
  DataType residual_dtype = DataType::kFloat16;
  const float* y_scale = nullptr;  // scalar, when y is int8
  void* y = nullptr;               // [N, OH, OW, M] of y_dtype
  DataType y_dtype = DataType::kInt8;
};

// Y of fovea.Int8Conv on `stream`; y_dtype int8 (with y_scale), float16 or float32. Geometries
// ops::int8_conv_unsupported names are refused.
Status launch_int8_conv(const Int8ConvOperands& operands, const ops::Int8ConvGeometry& geometry,
                        const ops::Activation& activation, cudaStream_t stream);

}  // namespace fovea::runtime::cuda
