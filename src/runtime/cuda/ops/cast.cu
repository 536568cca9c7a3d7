// Cast on CUDA between every pair of the runtime's dtypes, with the CPU reference's rules
// (convert_value in ops/elementwise_util.h): to bool is "nonzero"; floating to integer truncates
// toward zero and saturates, NaN giving 0; between integers it wraps; float16 is reached through
// float (double -> float -> float16 rounds twice, as the reference does), rounding to nearest even.
#include "runtime/cuda/ops/cast.h"

#include "runtime/cuda/elementwise.cuh"

namespace fovea::runtime::cuda {
namespace {

// To is the output's compute type (float for float16: store_compute rounds it).
template <typename To>
struct CastOp {
  template <typename From>
  __device__ To operator()(From x) const {
    if constexpr (std::is_same_v<To, bool>) {
      return x != From{0};
    } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
      return saturate_cast<To>(x);
    } else {
      return static_cast<To>(x);
    }
  }
};

#define FOVEA_CUDA_ALL_TYPES FOVEA_CUDA_NUMERIC_TYPES, ::fovea::DataType::kBool

}  // namespace

Status run_cast(CudaKernelContext& ctx) {
  Tensor& out = ctx.output(0);
  return dispatch_elementwise<FOVEA_CUDA_ALL_TYPES>(ctx, ctx.input(0).dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    return dispatch_elementwise<FOVEA_CUDA_ALL_TYPES>(ctx, out.dtype(), [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      return launch_elementwise<To, From>(ctx, CastOp<ComputeType<To>>{}, out, ctx.input(0));
    });
  });
}

FOVEA_REGISTER_CUDA_OP({.op_type = "Cast", .run = run_cast});

}  // namespace fovea::runtime::cuda
