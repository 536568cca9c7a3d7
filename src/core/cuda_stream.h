// cudaStream_t for interfaces that must compile in CPU-only builds too: the real type with CUDA,
// the same opaque pointer type without it (CPU-only callers pass nullptr).
#pragma once

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime_api.h>
#else
using cudaStream_t = struct CUstream_st*;
#endif
