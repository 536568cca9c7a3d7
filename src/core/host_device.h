// FOVEA_HD marks small inline functions that CUDA kernels and their CPU references share, so the
// arithmetic that defines an op is written once.
#pragma once

#if defined(__CUDACC__)
#define FOVEA_HD __host__ __device__ __forceinline__
#else
#define FOVEA_HD inline
#endif
