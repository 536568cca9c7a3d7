// fovea's int8 tensor-core convolution (fovea.Int8Conv, ops/int8_conv_util.h) for channels_last
// plans. cuDNN offers no fast 8-bit path on Hopper (bench/int8_paths_bench.cpp: its int8
// convolutions ran 10-60x slower than its float16 ones on the H200), so fovea runs the product
// itself: an implicit GEMM of output pixels x output channels over the window with int32
// accumulators, the input gathered from the NHWC image straight into shared memory (cp.async,
// zero-filled outside the image) through a multi-stage pipeline, and the float epilogue (scales,
// bias, residual, activation, requantization) applied to the accumulators. The products run on
// Hopper's warpgroup instructions (wgmma, twice mma.sync's int8 rate) where the binary holds sm_90a
// code (CMAKE_CUDA_ARCHITECTURES 90a, the default) and the device is compute capability 9.0, and on
// mma.sync's m16n8k32 elsewhere; both read the same tiles and share the epilogue.
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
  const std::int8_t* x = nullptr;                // [N, H, W, C]
  const float* x_scale = nullptr;                // scalar
  const std::int8_t* weights = nullptr;          // [M, kH, kW, C]
  const float* w_scale = nullptr;                // [M]
  const float* bias = nullptr;                   // [M], or none
  const void* residual = nullptr;                // [N, OH, OW, M] of residual_dtype, or none
  DataType residual_dtype = DataType::kFloat16;  // float16, float32, or int8 at residual_scale
  const float* residual_scale = nullptr;         // scalar, when the residual is int8
  const float* y_scale = nullptr;                // scalar, when y is int8
  void* y = nullptr;                             // [N, OH, OW, M] of y_dtype
  DataType y_dtype = DataType::kInt8;
};

// Y of fovea.Int8Conv on `stream`; y_dtype int8 (with y_scale), float16 or float32. Geometries
// ops::int8_conv_unsupported names are refused.
Status launch_int8_conv(const Int8ConvOperands& operands, const ops::Int8ConvGeometry& geometry,
                        const ops::Activation& activation, cudaStream_t stream);

// Whether launch_int8_conv on the current device takes the wgmma kernel: built with sm_90a code, a
// compute capability 9.0 device, and not turned off by allow_warpgroup_int8_conv.
bool warpgroup_int8_conv_runs();

// Lets (the default) or keeps the wgmma kernel from running, so that tests and benchmarks can run
// the mma.sync kernel on Hopper too.
void allow_warpgroup_int8_conv(bool allowed);

}  // namespace fovea::runtime::cuda
