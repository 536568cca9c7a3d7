// FOVEA_HD marks small inline functions that CUDA kernels and their CPU references share, so the
// arithmetic that defines an op is written once.
#pragma once

#if defined(__CUDACC__)
#define FOVEA_HD __host__ __device__ __forceinline__
#else
#define FOVEA_HD inline
#endif

namespace fovea {

// Single-rounding float arithmetic: nvcc would otherwise fuse a multiply and a following add into
// one FMA (the host compiler never contracts in ISO C++ mode on baseline x86-64), and the kernels
// whose CPU references promise bit-identical results (NMS, masks, resampling weights) must round
// the same way on both sides.
FOVEA_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
FOVEA_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
FOVEA_HD float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
FOVEA_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

}  // namespace fovea
