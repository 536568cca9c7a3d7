// cuDNN descriptor helpers shared by the convolution kernels (conv.cu, conv_transpose.cu).
#pragma once

#include <vector>

#include "runtime/cuda/cuda_libraries.h"
#include "runtime/cuda/cuda_op.h"

namespace fovea::runtime::cuda {

inline Result<cudnnDataType_t> cudnn_type(const CudaKernelContext& ctx, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return CUDNN_DATA_FLOAT;
    case DataType::kFloat16: return CUDNN_DATA_HALF;
    case DataType::kFloat64: return CUDNN_DATA_DOUBLE;
    default: return ctx.error(StatusCode::kUnsupported, "no cuDNN convolution for ", data_type_name(dtype));
  }
}

// Accumulation: float for float16 and float32 ("half storage, float accumulation"), double for double.
inline cudnnDataType_t cudnn_compute_type(DataType dtype) {
  return dtype == DataType::kFloat64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}

// float16 runs on tensor cores; float32 must not run on TF32 ones, which would differ from the
// reference by ~1e-3.
inline cudnnMathType_t cudnn_math_type(DataType dtype) {
  return dtype == DataType::kFloat16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
}

inline bool math_type_allowed(cudnnMathType_t math, DataType dtype) {
  return dtype == DataType::kFloat16 || math == CUDNN_FMA_MATH || math == CUDNN_DEFAULT_MATH;
}

// cuDNN wants 4 or 5 dims: 1-D problems become 2-D with a height of 1.
inline std::vector<int> as_cudnn_dims(const Shape& shape) {
  std::vector<int> dims(shape.begin(), shape.end());
  if (dims.size() == 3) dims.insert(dims.begin() + 2, 1);
  return dims;
}

// A dense NCHW (NCDHW) tensor descriptor.
inline Status set_tensor(cudnnTensorDescriptor_t desc, cudnnDataType_t type, const std::vector<int>& dims) {
  std::vector<int> strides(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * dims[d + 1];
  FOVEA_CUDNN_TRY(
      cudnnSetTensorNdDescriptor(desc, type, static_cast<int>(dims.size()), dims.data(), strides.data()));
  return Status::ok();
}

// Pads, strides and dilations for `spatial` dims, with the leading 1-D entry cuDNN needs.
struct ConvGeometry {
  std::vector<int> pads, strides, dilations;
};

inline Status set_convolution(cudnnConvolutionDescriptor_t desc, ConvGeometry g, std::int64_t groups,
                              DataType dtype) {
  if (g.pads.size() == 1) {
    g.pads.insert(g.pads.begin(), 0);
    g.strides.insert(g.strides.begin(), 1);
    g.dilations.insert(g.dilations.begin(), 1);
  }
  FOVEA_CUDNN_TRY(cudnnSetConvolutionNdDescriptor(desc, static_cast<int>(g.pads.size()), g.pads.data(),
                                                  g.strides.data(), g.dilations.data(),
                                                  CUDNN_CROSS_CORRELATION, cudnn_compute_type(dtype)));
  FOVEA_CUDNN_TRY(cudnnSetConvolutionGroupCount(desc, static_cast<int>(groups)));
  FOVEA_CUDNN_TRY(cudnnSetConvolutionMathType(desc, cudnn_math_type(dtype)));
  return Status::ok();
}

inline Status set_filter(cudnnFilterDescriptor_t desc, cudnnDataType_t type, const Shape& w) {
  const std::vector<int> dims = as_cudnn_dims(w);
  FOVEA_CUDNN_TRY(
      cudnnSetFilterNdDescriptor(desc, type, CUDNN_TENSOR_NCHW, static_cast<int>(dims.size()), dims.data()));
  return Status::ok();
}

}  // namespace fovea::runtime::cuda
