#include "runtime/cuda/hopper_gemm.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "core/cuda_check.h"
#include "runtime/cuda/gelu.cuh"
#include "runtime/cuda/hopper_gemm.cuh"
#include "runtime/cuda/kernel_util.cuh"

namespace fovea::runtime::cuda {

namespace {

// 128 x 128 a consumer, 4 stages: on ViT-B's MLP (H200) the fastest of 128 x 128 at 4 to 6 stages
// and 64 x 256 at 3 to 5; the output tiles take the shared memory more stages would.
using Tile = HopperGemmTile<128, 128, 4>;

std::atomic<HopperGemmPolicy> policy{HopperGemmPolicy::kTimed};
std::atomic<int> plans_chosen{0};

// The bias and the GELU on the float sums, before the one rounding to float16 (cuBLASLt and a pass
// round the pre-activation too). HalfGeluOp is the Gelu op's float16 form: Phi through a Chebyshev
// fit of erfc, relative error under 1.2e-7 for every argument (gelu.cuh).
struct BiasGelu {
  const __half* bias;
  int n;
  float alpha;
  HalfGeluOp gelu;

  __device__ __half2 operator()(int, int col, float v0, float v1) const {
    float2 b = make_float2(0.0f, 0.0f);
    if (bias != nullptr && col < n) b = __half22float2(*reinterpret_cast<const __half2*>(bias + col));
    return __floats2half2_rn(gelu(fmaf(alpha, v0, b.x)), gelu(fmaf(alpha, v1, b.y)));
  }
};

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  }();
  return encode;
}

}  // namespace

bool hopper_gemm_supported() {
#if defined(FOVEA_CUDA_SM90A)
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    return false;
  }
  return major == 9 && minor == 0 && tensor_map_encoder() != nullptr;
#else
  return false;
#endif
}

Result<CUtensorMap> hopper_row_boxes(const void* matrix, int element_bytes, int rows, int cols,
                                     int box_rows) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t row_bytes[1] = {static_cast<cuuint64_t>(cols) * static_cast<cuuint64_t>(element_bytes)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(kHopperRowBytes / element_bytes),
                             static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult result = tensor_map_encoder()(
      &map, element_bytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
      const_cast<void*>(matrix), dims, row_bytes, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    return make_error(StatusCode::kInternal, "Hopper GEMM: cuTensorMapEncodeTiled failed (",
                      std::to_string(static_cast<int>(result)), ") for a ", std::to_string(rows), " x ",
                      std::to_string(cols), " matrix");
  }
  return map;
}

bool hopper_gemm_takes(const HopperGemmGelu& p) {
  return p.m > 0 && p.n > 0 && p.k > 0 && p.n % 8 == 0 && p.k % 8 == 0 && aligned_to(p.a, 16) &&
         aligned_to(p.b, 16) && aligned_to(p.y, 16) && (p.bias == nullptr || aligned_to(p.bias, 4));
}

Status launch_hopper_gemm_gelu(const HopperGemmGelu& p, cudaStream_t stream) {
  FOVEA_ASSIGN_OR_RETURN(const CUtensorMap a, hopper_row_boxes(p.a, 2, p.m, p.k, Tile::kBM));
  FOVEA_ASSIGN_OR_RETURN(const CUtensorMap b, hopper_row_boxes(p.b, 2, p.n, p.k, Tile::kBN));
  FOVEA_ASSIGN_OR_RETURN(const CUtensorMap y, hopper_row_boxes(p.y, 2, p.m, p.n, Tile::kBM));
  const BiasGelu epilogue{static_cast<const __half*>(p.bias), p.n, p.alpha, HalfGeluOp{GeluOp{p.tanh_form}}};
  return launch_hopper_gemm<Tile>(a, b, y, HopperGemmShape{p.m, p.n, p.k}, epilogue, stream);
}

void set_hopper_gemm_policy(HopperGemmPolicy value) {
  policy.store(value, std::memory_order_relaxed);
}

HopperGemmPolicy hopper_gemm_policy() {
  return policy.load(std::memory_order_relaxed);
}

int hopper_gemm_plans() {
  return plans_chosen.load(std::memory_order_relaxed);
}

void count_hopper_gemm_plan() {
  plans_chosen.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace fovea::runtime::cuda
