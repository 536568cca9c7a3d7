// fovea.Gemm's GELU inside the product, on fovea's own Hopper GEMM (hopper_gemm.cuh): a linear
// layer and the exact (erf) or tanh GELU after it in one kernel, where cuBLASLt's epilogues offer
// only the tanh form and the erf form otherwise takes a pass of its own over the product.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include "core/status.h"

namespace fovea::runtime::cuda {

// Y[M, N] = GELU(alpha * A[M, K] . B[N, K]^T + bias) in float16: A and B K-major (transB = 1, as
// fuse_gemm_epilogues stores a fused layer's weights), the bias a row of N float16 values or none.
struct HopperGemmGelu {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* bias = nullptr;
  void* y = nullptr;
  int m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  bool tanh_form = false;
};

// Whether fovea's Hopper GEMM (hopper_gemm.cuh) can run here: a build with sm_90a code, a compute
// capability 9.0 device, and the driver's TMA descriptor encoder.
bool hopper_gemm_supported();

// A row-major matrix of 1- or 2-byte elements (int8, float16) as the kernel's TMA boxes: `box_rows`
// rows by 128 bytes, stored with the 128-byte swizzle; boxes past the matrix read zeros, and their
// stores are dropped. The row length must be a multiple of 16 bytes, the matrix 16-byte aligned.
Result<CUtensorMap> hopper_row_boxes(const void* matrix, int element_bytes, int rows, int cols, int box_rows);
// Whether it takes the problem: K and N multiples of 8 (TMA's rows are whole 16-byte units), the
// operands 16-byte aligned, every dimension positive.
bool hopper_gemm_takes(const HopperGemmGelu& problem);
Status launch_hopper_gemm_gelu(const HopperGemmGelu& problem, cudaStream_t stream);

// Which of the two a fovea.Gemm with a GELU runs where both can (hopper_gemm_supported): kTimed (the default)
// times both as the plan runs them and keeps the faster; tests force one with kAlways or kNever.
enum class HopperGemmPolicy { kTimed, kAlways, kNever };
void set_hopper_gemm_policy(HopperGemmPolicy policy);
HopperGemmPolicy hopper_gemm_policy();
// How many nodes' plans in this process chose the Hopper GEMM (tests check that a case took it).
int hopper_gemm_plans();
void count_hopper_gemm_plan();

}  // namespace fovea::runtime::cuda
