// Which 8-bit paths the GPU's libraries offer for ResNet-50's convolutions, and how fast each is
// against the float16 path fovea runs today (issue 23: "if cuDNN offers no fast INT8/FP8 path for a
// layer shape, say which"). For every distinct convolution of ResNet-50 at 224x224 (batch --batch),
// with the number of times the network runs it:
//   fp16     cuDNN NHWC float16, tensor-op math (fovea's float16 plan)
//   int8     cuDNN NHWC int8 in and out, int32 accumulation (the legacy API's INT8_CONFIG)
//   int8f    cuDNN NHWC int8 in, float out (INT8_EXT_CONFIG)
//   i8x32    cuDNN NCHW_VECT_C int8x32 in and out (the IMMA layout of earlier GPUs)
//   lt8      1x1 stride-1 only: cuBLASLt int8 GEMM, int32 accumulation, a per-output-channel scale
//            vector, bias + ReLU epilogue, int8 out (the requantizing epilogue fovea would use)
//   lt8raw   the same int8 GEMM with a scalar scale and no epilogue (int8 out)
//   lt16     the same GEMM in float16 (what a 1x1 convolution is to cuBLASLt)
//   fp8      1x1 stride-1 only: cuBLASLt E4M3 x E4M3 GEMM, float16 out, bias + ReLU
//   g16      cuDNN's graph API: the float16 convolution, a per-output-channel scale, bias and ReLU
//            fused after it (the same epilogue as the 8-bit graphs below, for a like comparison)
//   g8h      the same graph on E4M3 input and weights (float accumulation), float16 out
//   g8       the same graph with E4M3 out (the scale folding in the next layer's)
//   g8r      g8 with a float16 residual added before the ReLU (a bottleneck's last convolution)
//   fovea8   fovea's own int8 tensor-core kernel (runtime/cuda/int8_conv.h), per-channel scales,
//            bias + ReLU, int8 out: what fovea.Int8Conv runs between two quantized layers (wgmma
//            on Hopper with a 90a build)
//   fovea8h  the same kernel with float16 out (a layer whose consumer stays float)
//   fovea8s  fovea8 on the mma.sync kernel (what runs where wgmma does not)
// Each is the best of cuDNN's (cuBLASLt's) algorithms for the shape, timed with CUDA events over
// --iters runs after a warm-up; "-" where the library has no algorithm. Values are random: only
// time is measured. The table ends with the network's total per path (fp16 where a path has none).
//
// Each measurement is announced on stderr first ("trying LAYER PATH"): a library that crashes on a
// path names it there, and --skip PATH,... leaves such paths out of the next run.
//
//   int8_paths_bench [--batch 256] [--iters 20] [--skip i8x32,...]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "runtime/cuda/cudnn_backend.h"
#include "runtime/cuda/int8_conv.h"

namespace {

// Aborts with the failing call: a probe, not a library, so there is nothing to recover.
#define CHECK_CUDA(call) check_cuda((call), #call)
#define CHECK_CUDNN(call) check_cudnn((call), #call)

void check(int failed, const char* what, const char* why) {
  if (!failed) return;
  std::fprintf(stderr, "%s failed: %s\n", what, why);
  std::exit(1);
}

// The call is evaluated once (a check that ran it again for the message destroyed each timing
// event twice, and the second destroy crashed the first run).
void check_cuda(cudaError_t status, const char* what) {
  check(status != cudaSuccess, what, cudaGetErrorString(status));
}

void check_cudnn(cudnnStatus_t status, const char* what) {
  check(status != CUDNN_STATUS_SUCCESS, what, cudnnGetErrorString(status));
}

struct ConvShape {
  const char* name;
  int in_c, out_c, kernel, stride, in_hw, count;
  int out_hw() const { return (in_hw + 2 * (kernel / 2) - kernel) / stride + 1; }
};

// ResNet-50 (torchvision, stride in the 3x3) at 224x224, without the 7x7 stem (3 input channels).
const std::vector<ConvShape> kResnet50 = {
    {"l1 1x1 64-64", 64, 64, 1, 1, 56, 1},
    {"l1 1x1 256-64", 256, 64, 1, 1, 56, 2},
    {"l1 3x3 64-64", 64, 64, 3, 1, 56, 3},
    {"l1 1x1 64-256", 64, 256, 1, 1, 56, 4},
    {"l2 1x1 256-128", 256, 128, 1, 1, 56, 1},
    {"l2 3x3 128 s2", 128, 128, 3, 2, 56, 1},
    {"l2 1x1 256-512 s2", 256, 512, 1, 2, 56, 1},
    {"l2 1x1 512-128", 512, 128, 1, 1, 28, 3},
    {"l2 3x3 128-128", 128, 128, 3, 1, 28, 3},
    {"l2 1x1 128-512", 128, 512, 1, 1, 28, 4},
    {"l3 1x1 512-256", 512, 256, 1, 1, 28, 1},
    {"l3 3x3 256 s2", 256, 256, 3, 2, 28, 1},
    {"l3 1x1 512-1024 s2", 512, 1024, 1, 2, 28, 1},
    {"l3 1x1 1024-256", 1024, 256, 1, 1, 14, 5},
    {"l3 3x3 256-256", 256, 256, 3, 1, 14, 5},
    {"l3 1x1 256-1024", 256, 1024, 1, 1, 14, 6},
    {"l4 1x1 1024-512", 1024, 512, 1, 1, 14, 1},
    {"l4 3x3 512 s2", 512, 512, 3, 2, 14, 1},
    {"l4 1x1 1024-2048 s2", 1024, 2048, 1, 2, 14, 1},
    {"l4 1x1 2048-512", 2048, 512, 1, 1, 7, 2},
    {"l4 3x3 512-512", 512, 512, 3, 1, 7, 2},
    {"l4 1x1 512-2048", 512, 2048, 1, 1, 7, 3},
};

struct Buffers {
  void* x = nullptr;
  void* w = nullptr;
  // fovea's int8 kernel reads full-range int8 values, as a network gives it (a tensor core's power
  // depends on the bits it multiplies; on the H200, call 35, the times matched `fill`'s small values).
  void* x8 = nullptr;
  void* w8 = nullptr;
  // E4M3 values of either sign up to 1.9 (0xbf masks out the exponents past 2^0 and so NaN).
  void* x_e4m3 = nullptr;
  void* w_e4m3 = nullptr;
  void* y = nullptr;
  void* z = nullptr;  // a float16 residual
  void* bias = nullptr;
  void* scale = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 256u << 20;
};

// Times `launch` (which returns false when the path cannot run) in ms per call; -1 if it cannot.
template <typename Launch>
float time_ms(int iters, Launch&& launch) {
  if (!launch()) return -1.0f;
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start));
  for (int i = 0; i < iters; ++i) launch();
  CHECK_CUDA(cudaEventRecord(stop));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  return ms / static_cast<float>(iters);
}

// cuDNN configurations: data type of x/w, of y, layout, accumulation, math.
struct CudnnPath {
  cudnnDataType_t xw, y;
  cudnnTensorFormat_t format;
  int vector;  // channels per vector for NCHW_VECT_C (1 otherwise)
  cudnnDataType_t compute;
  cudnnMathType_t math;
};

// The best time over every forward algorithm cuDNN accepts for the shape and path.
float best_cudnn(cudnnHandle_t handle, const ConvShape& s, int batch, const CudnnPath& p, Buffers& b,
                 int iters) {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&x));
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&y));
  CHECK_CUDNN(cudnnCreateFilterDescriptor(&w));
  CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
  float best = -1.0f;
  const int v = p.vector;
  const bool described =
      cudnnSetTensor4dDescriptor(x, p.format, p.xw, batch, s.in_c, s.in_hw, s.in_hw) ==
          CUDNN_STATUS_SUCCESS &&
      cudnnSetTensor4dDescriptor(y, p.format, p.y, batch, s.out_c, s.out_hw(), s.out_hw()) ==
          CUDNN_STATUS_SUCCESS &&
      cudnnSetFilter4dDescriptor(w, p.xw, p.format, s.out_c, s.in_c, s.kernel, s.kernel) ==
          CUDNN_STATUS_SUCCESS &&
      cudnnSetConvolution2dDescriptor(conv, s.kernel / 2, s.kernel / 2, s.stride, s.stride, 1, 1,
                                      CUDNN_CROSS_CORRELATION, p.compute) == CUDNN_STATUS_SUCCESS &&
      cudnnSetConvolutionMathType(conv, p.math) == CUDNN_STATUS_SUCCESS && (v == 1 || s.in_c % v == 0);
  if (described) {
    const float alpha = 1.0f, beta = 0.0f;
    // The algorithms cuDNN lists as supported for the problem, each with its math type.
    int count = 0, listed = 0;
    CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> algos(static_cast<std::size_t>(count));
    if (cudnnGetConvolutionForwardAlgorithm_v7(handle, x, w, conv, y, count, &listed, algos.data()) !=
        CUDNN_STATUS_SUCCESS)
      listed = 0;
    for (int i = 0; i < listed; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& perf = algos[static_cast<std::size_t>(i)];
      if (perf.status != CUDNN_STATUS_SUCCESS || perf.memory > b.workspace_bytes) continue;
      cudnnSetConvolutionMathType(conv, perf.mathType);
      const cudnnConvolutionFwdAlgo_t a = perf.algo;
      const std::size_t bytes = perf.memory;
      const float ms = time_ms(iters, [&] {
        return cudnnConvolutionForward(handle, &alpha, x, b.x, w, b.w, conv, a, b.workspace, bytes, &beta, y,
                                       b.y) == CUDNN_STATUS_SUCCESS;
      });
      if (ms > 0 && (best < 0 || ms < best)) best = ms;
    }
  }
  cudaGetLastError();
  cudnnDestroyTensorDescriptor(x);
  cudnnDestroyTensorDescriptor(y);
  cudnnDestroyFilterDescriptor(w);
  cudnnDestroyConvolutionDescriptor(conv);
  return best;
}

// A convolution with a fused epilogue through cuDNN's graph API: Y = relu(conv(X, W) * scale + bias
// [+ Z]), scale and bias one float per output channel, everything NHWC.
struct GraphPath {
  cudnnDataType_t xw, y;
  bool residual;
};

namespace be = fovea::runtime::cuda::backend;

std::vector<std::int64_t> nhwc_strides(std::int64_t c, std::int64_t h, std::int64_t w) {
  return {c * h * w, 1, w * c, c};
}

fovea::Result<be::Descriptor> pointwise(cudnnPointwiseMode_t mode, const be::Descriptor& x,
                                        const be::Descriptor* b, const be::Descriptor& y,
                                        std::vector<be::Descriptor>& kept) {
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor desc, be::make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise"));
  const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  FOVEA_TRY(be::set(desc, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "mode"));
  FOVEA_TRY(be::set(desc, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision, "precision"));
  FOVEA_TRY(be::finalize(desc, "pointwise"));
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor op,
                         be::make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise operation"));
  FOVEA_TRY(be::set_descriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc, "pointwise"));
  FOVEA_TRY(be::set_descriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x, "pointwise x"));
  if (b) FOVEA_TRY(be::set_descriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b, "pointwise b"));
  FOVEA_TRY(be::set_descriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y, "pointwise y"));
  FOVEA_TRY(be::finalize(op, "pointwise operation"));
  kept.push_back(std::move(desc));
  return op;
}

enum GraphUid : std::int64_t { kX = 1, kW, kScale, kBias, kZ, kY, kConvOut, kScaled, kBiased, kSummed };

// The graph's plans (the heuristic's first eight that finalize), or the reason there are none.
fovea::Result<std::vector<std::shared_ptr<be::Plan>>> graph_plans(cudnnHandle_t handle, const ConvShape& s,
                                                                  int batch, const GraphPath& p) {
  const std::int64_t n = batch, c = s.in_c, h = s.in_hw, k = s.out_c, r = s.kernel, o = s.out_hw();
  std::vector<be::Descriptor> kept, ops;
  const auto tensor = [&](cudnnDataType_t type, std::vector<std::int64_t> sizes,
                          std::vector<std::int64_t> strides, std::int64_t uid,
                          bool is_virtual) -> fovea::Result<be::Descriptor> {
    return be::tensor(
        {.type = type, .sizes = sizes, .strides = strides, .uid = uid, .is_virtual = is_virtual}, "tensor");
  };
  const std::vector<std::int64_t> out_sizes = {n, k, o, o}, out_strides = nhwc_strides(k, o, o);
  const std::vector<std::int64_t> channel_sizes = {1, k, 1, 1}, channel_strides = {k, 1, k, k};
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor x, tensor(p.xw, {n, c, h, h}, nhwc_strides(c, h, h), kX, false));
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor w, tensor(p.xw, {k, c, r, r}, nhwc_strides(c, r, r), kW, false));
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor acc,
                         tensor(CUDNN_DATA_FLOAT, out_sizes, out_strides, kConvOut, true));
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor scale,
                         tensor(CUDNN_DATA_FLOAT, channel_sizes, channel_strides, kScale, false));
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor bias,
                         tensor(CUDNN_DATA_FLOAT, channel_sizes, channel_strides, kBias, false));
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor scaled,
                         tensor(CUDNN_DATA_FLOAT, out_sizes, out_strides, kScaled, true));
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor biased,
                         tensor(CUDNN_DATA_FLOAT, out_sizes, out_strides, kBiased, true));
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor z, tensor(CUDNN_DATA_HALF, out_sizes, out_strides, kZ, false));
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor summed,
                         tensor(CUDNN_DATA_FLOAT, out_sizes, out_strides, kSummed, true));
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor y, tensor(p.y, out_sizes, out_strides, kY, false));

  FOVEA_ASSIGN_OR_RETURN(be::Descriptor conv, be::make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "convolution"));
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::int64_t dims = 2, pad = s.kernel / 2;
  const std::int64_t ones[] = {1, 1}, strides[] = {s.stride, s.stride}, pads[] = {pad, pad};
  FOVEA_TRY(be::set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, "compute"));
  FOVEA_TRY(be::set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, "mode"));
  FOVEA_TRY(be::set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims, "dims"));
  FOVEA_TRY(be::set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, ones, "dilations"));
  FOVEA_TRY(be::set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides, "strides"));
  FOVEA_TRY(be::set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads, "pads"));
  FOVEA_TRY(be::set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads, "pads"));
  FOVEA_TRY(be::finalize(conv, "convolution"));
  FOVEA_ASSIGN_OR_RETURN(
      be::Descriptor fprop,
      be::make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "convolution operation"));
  const float alpha = 1.0f, beta = 0.0f;
  FOVEA_TRY(be::set_descriptor(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x, "x"));
  FOVEA_TRY(be::set_descriptor(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w, "w"));
  FOVEA_TRY(be::set_descriptor(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, acc, "y"));
  FOVEA_TRY(be::set_descriptor(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv, "conv"));
  FOVEA_TRY(
      be::set(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha, "alpha"));
  FOVEA_TRY(
      be::set(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta, "beta"));
  FOVEA_TRY(be::finalize(fprop, "convolution operation"));
  ops.push_back(std::move(fprop));
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor mul, pointwise(CUDNN_POINTWISE_MUL, acc, &scale, scaled, kept));
  ops.push_back(std::move(mul));
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor add, pointwise(CUDNN_POINTWISE_ADD, scaled, &bias, biased, kept));
  ops.push_back(std::move(add));
  if (p.residual) {
    FOVEA_ASSIGN_OR_RETURN(be::Descriptor sum, pointwise(CUDNN_POINTWISE_ADD, biased, &z, summed, kept));
    ops.push_back(std::move(sum));
  }
  FOVEA_ASSIGN_OR_RETURN(be::Descriptor relu,
                         pointwise(CUDNN_POINTWISE_RELU_FWD, p.residual ? summed : biased, nullptr, y, kept));
  ops.push_back(std::move(relu));
  for (be::Descriptor* d : {&x, &w, &acc, &scale, &bias, &scaled, &biased, &z, &summed, &y, &conv})
    kept.push_back(std::move(*d));
  return be::plans(handle, std::move(ops), std::move(kept), 8);
}

// The best time over the graph's plans; -1 (with cuDNN's reason on stderr) where none builds.
float best_graph(cudnnHandle_t handle, const ConvShape& s, int batch, const GraphPath& p, Buffers& b,
                 int iters) {
  auto plans = graph_plans(handle, s, batch, p);
  if (!plans.is_ok()) {
    std::fprintf(stderr, "  no plan: %s\n", plans.status().message().c_str());
    return -1.0f;
  }
  float best = -1.0f;
  for (const auto& plan : plans.value()) {
    if (plan->workspace_bytes() > b.workspace_bytes) continue;
    const bool eight = p.xw == CUDNN_DATA_FP8_E4M3;
    // The variant pack names exactly the graph's tensors: cuDNN refuses a pack with one more.
    std::vector<std::int64_t> uids = {kX, kW, kScale, kBias, kY};
    std::vector<void*> pointers = {eight ? b.x_e4m3 : b.x, eight ? b.w_e4m3 : b.w, b.scale, b.bias, b.y};
    if (p.residual) {
      uids.push_back(kZ);
      pointers.push_back(b.z);
    }
    const auto run = [&] {
      const fovea::Status status = plan->execute(handle, uids, pointers, b.workspace);
      if (!status.is_ok()) std::fprintf(stderr, "  plan failed: %s\n", status.message().c_str());
      return status.is_ok();
    };
    const float ms = time_ms(iters, run);
    if (ms > 0 && (best < 0 || ms < best)) best = ms;
  }
  cudaGetLastError();
  return best;
}

// A 1x1 stride-1 convolution as cuBLASLt's D[Cout, M] = epilogue(scale ⊙ (W[Cout, K] · X[M, K]^T)),
// column-major (so D is NHWC's [M, Cout] row-major): the "TN" form the 8-bit tensor-core kernels need.
struct LtPath {
  cudaDataType_t ab, d;
  cublasComputeType_t compute;
  cudaDataType_t scale;
  bool per_channel_scale;  // an alpha vector over Cout (int8 requantization)
  bool fp8;                // per-tensor A/B scale pointers
  cublasLtEpilogue_t epilogue;
};

float best_lt(cublasLtHandle_t lt, const ConvShape& s, int batch, const LtPath& p, Buffers& b, int iters) {
  const std::int64_t m = s.out_c, n = static_cast<std::int64_t>(batch) * s.in_hw * s.in_hw, k = s.in_c;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, bl, d;
  if (cublasLtMatmulDescCreate(&desc, p.compute, p.scale) != CUBLAS_STATUS_SUCCESS) return -1.0f;
  const cublasOperation_t trans = CUBLAS_OP_T, none = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &p.epilogue, sizeof p.epilogue);
  if (p.epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b.bias, sizeof b.bias);
  if (p.per_channel_scale) {
    const cublasLtPointerMode_t mode = CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode, sizeof mode);
  }
  if (p.fp8) {
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &b.scale, sizeof b.scale);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b.scale, sizeof b.scale);
  }
  cublasLtMatrixLayoutCreate(&a, p.ab, k, m, k);
  cublasLtMatrixLayoutCreate(&bl, p.ab, k, n, k);
  cublasLtMatrixLayoutCreate(&d, p.d, m, n, m);
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &b.workspace_bytes,
                                       sizeof b.workspace_bytes);
  cublasLtMatmulHeuristicResult_t results[8];
  int found = 0;
  cublasLtMatmulAlgoGetHeuristic(lt, desc, a, bl, d, d, pref, 8, results, &found);
  float best = -1.0f;
  const float alpha = 1.0f, beta = 0.0f;
  const void* alpha_ptr = p.per_channel_scale ? b.scale : &alpha;
  for (int i = 0; i < found; ++i) {
    const float ms = time_ms(iters, [&] {
      return cublasLtMatmul(lt, desc, alpha_ptr, b.w, a, b.x, bl, &beta, b.y, d, b.y, d, &results[i].algo,
                            b.workspace, b.workspace_bytes, nullptr) == CUBLAS_STATUS_SUCCESS;
    });
    if (ms > 0 && (best < 0 || ms < best)) best = ms;
  }
  cudaGetLastError();
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatrixLayoutDestroy(bl);
  cublasLtMatrixLayoutDestroy(d);
  cublasLtMatmulDescDestroy(desc);
  return best;
}

// fovea's int8 kernel with per-channel scales, bias and ReLU, int8 or float16 out; on the wgmma
// kernel where it runs, unless `warpgroup` is false.
float time_fovea(const ConvShape& s, int batch, fovea::DataType out, Buffers& b, int iters,
                 bool warpgroup = true) {
  namespace rt = fovea::runtime;
  rt::cuda::allow_warpgroup_int8_conv(warpgroup);
  const int pad = s.kernel / 2;
  const rt::ops::Int8ConvGeometry g{.batch = batch,
                                    .in_h = s.in_hw,
                                    .in_w = s.in_hw,
                                    .channels = s.in_c,
                                    .out_h = s.out_hw(),
                                    .out_w = s.out_hw(),
                                    .out_channels = s.out_c,
                                    .kernel_h = s.kernel,
                                    .kernel_w = s.kernel,
                                    .stride_h = s.stride,
                                    .stride_w = s.stride,
                                    .pad_top = pad,
                                    .pad_left = pad};
  const auto* scale = static_cast<const float*>(b.scale);
  const rt::cuda::Int8ConvOperands o{.x = static_cast<const std::int8_t*>(b.x8),
                                     .x_scale = scale,
                                     .weights = static_cast<const std::int8_t*>(b.w8),
                                     .w_scale = scale,
                                     .bias = static_cast<const float*>(b.bias),
                                     .y_scale = scale,
                                     .y = b.y,
                                     .y_dtype = out};
  const rt::ops::Activation relu{.kind = rt::ops::Activation::Kind::kRelu};
  const float ms = time_ms(iters, [&] { return rt::cuda::launch_int8_conv(o, g, relu, nullptr).is_ok(); });
  rt::cuda::allow_warpgroup_int8_conv(true);
  return ms;
}

// Random bytes from a fixed seed, each masked by `mask`: 0x1f keeps small values, valid int8,
// float16 and E4M3 in every type's reading; 0xff gives int8 values over their whole range.
void fill(void* p, std::size_t bytes, std::uint8_t mask) {
  std::vector<std::uint8_t> host(bytes);
  std::uint32_t state = 12345;
  for (auto& byte : host) {
    state = state * 1664525u + 1013904223u;
    byte = static_cast<std::uint8_t>((state >> 24) & mask);
  }
  CHECK_CUDA(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice));
}

}  // namespace

int main(int argc, char** argv) {
  int batch = 256, iters = 20;
  std::string skip;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batch")) {
      batch = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--iters")) {
      iters = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--skip")) {
      skip = std::string(",") + argv[i + 1] + ",";
    } else {
      std::fprintf(stderr, "usage: int8_paths_bench [--batch 256] [--iters 20] [--skip PATH,...]\n");
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  cudnnHandle_t handle;
  cublasLtHandle_t lt;
  CHECK_CUDNN(cudnnCreate(&handle));
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return 1;
  std::size_t largest = 0;
  for (const ConvShape& s : kResnet50) {
    const std::size_t in = static_cast<std::size_t>(batch) * s.in_c * s.in_hw * s.in_hw;
    const std::size_t out = static_cast<std::size_t>(batch) * s.out_c * s.out_hw() * s.out_hw();
    largest = std::max({largest, in, out, static_cast<std::size_t>(s.in_c) * s.out_c * s.kernel * s.kernel});
  }
  Buffers b;
  for (void** p : {&b.x, &b.w, &b.y, &b.z}) {
    CHECK_CUDA(cudaMalloc(p, largest * 4));  // float out is the widest
    fill(*p, largest * 4, 0x1f);
  }
  for (void** p : {&b.x8, &b.w8}) {
    CHECK_CUDA(cudaMalloc(p, largest));
    fill(*p, largest, 0xff);
  }
  for (void** p : {&b.x_e4m3, &b.w_e4m3}) {
    CHECK_CUDA(cudaMalloc(p, largest));
    fill(*p, largest, 0xbf);
  }
  CHECK_CUDA(cudaMalloc(&b.bias, 2048 * 4));
  CHECK_CUDA(cudaMalloc(&b.scale, 2048 * 4));
  std::vector<float> ones(2048, 1.0f / 64);
  CHECK_CUDA(cudaMemcpy(b.scale, ones.data(), ones.size() * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(b.bias, 0, 2048 * 4));
  CHECK_CUDA(cudaMalloc(&b.workspace, b.workspace_bytes));

  const CudnnPath fp16{CUDNN_DATA_HALF,  CUDNN_DATA_HALF,     CUDNN_TENSOR_NHWC, 1,
                       CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH};
  const CudnnPath int8{CUDNN_DATA_INT8,  CUDNN_DATA_INT8,   CUDNN_TENSOR_NHWC, 1,
                       CUDNN_DATA_INT32, CUDNN_DEFAULT_MATH};
  const CudnnPath int8f{CUDNN_DATA_INT8,  CUDNN_DATA_FLOAT,  CUDNN_TENSOR_NHWC, 1,
                        CUDNN_DATA_INT32, CUDNN_DEFAULT_MATH};
  const CudnnPath i8x32{CUDNN_DATA_INT8x32, CUDNN_DATA_INT8x32,  CUDNN_TENSOR_NCHW_VECT_C, 32,
                        CUDNN_DATA_INT32,   CUDNN_TENSOR_OP_MATH};
  const auto relu_bias = CUBLASLT_EPILOGUE_RELU_BIAS;
  const LtPath lt8{CUDA_R_8I, CUDA_R_8I, CUBLAS_COMPUTE_32I, CUDA_R_32F, true, false, relu_bias};
  const LtPath lt8raw{CUDA_R_8I, CUDA_R_8I, CUBLAS_COMPUTE_32I,       CUDA_R_32F,
                      false,     false,     CUBLASLT_EPILOGUE_DEFAULT};
  const LtPath lt16{CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, false, false, relu_bias};
  const LtPath fp8{CUDA_R_8F_E4M3, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, false, true, relu_bias};
  const GraphPath g16{CUDNN_DATA_HALF, CUDNN_DATA_HALF, false};
  const GraphPath g8h{CUDNN_DATA_FP8_E4M3, CUDNN_DATA_HALF, false};
  const GraphPath g8{CUDNN_DATA_FP8_E4M3, CUDNN_DATA_FP8_E4M3, false};
  const GraphPath g8r{CUDNN_DATA_FP8_E4M3, CUDNN_DATA_FP8_E4M3, true};

  std::printf("%s, cuDNN %zu, cuBLASLt %zu, batch %d, ms per call (best algorithm)\n", prop.name,
              cudnnGetVersion(), cublasLtGetVersion(), batch);
  const char* names[] = {"fp16",   "int8",    "int8f",   "i8x32", "lt8", "lt8raw", "lt16", "fp8",
                         "fovea8", "fovea8h", "fovea8s", "g16",   "g8h", "g8",     "g8r"};
  constexpr int kPaths = sizeof(names) / sizeof(names[0]);
  std::printf("%-22s %5s", "layer", "runs");
  for (const char* n : names) std::printf(" %8s", n);
  std::printf("\n");
  double total[kPaths] = {};
  for (const ConvShape& s : kResnet50) {
    const bool gemm = s.kernel == 1 && s.stride == 1;
    // The measurement of path i, or -1 where the path does not apply or is skipped.
    const auto measure = [&](int i) -> float {
      if (skip.find(std::string(",") + names[i] + ",") != std::string::npos) return -1.0f;
      std::fprintf(stderr, "trying %s %s\n", s.name, names[i]);
      switch (i) {
        case 0: return best_cudnn(handle, s, batch, fp16, b, iters);
        case 1: return best_cudnn(handle, s, batch, int8, b, iters);
        case 2: return best_cudnn(handle, s, batch, int8f, b, iters);
        case 3: return best_cudnn(handle, s, batch, i8x32, b, iters);
        case 4: return gemm ? best_lt(lt, s, batch, lt8, b, iters) : -1.0f;
        case 5: return gemm ? best_lt(lt, s, batch, lt8raw, b, iters) : -1.0f;
        case 6: return gemm ? best_lt(lt, s, batch, lt16, b, iters) : -1.0f;
        case 7: return gemm ? best_lt(lt, s, batch, fp8, b, iters) : -1.0f;
        case 8: return time_fovea(s, batch, fovea::DataType::kInt8, b, iters);
        case 9: return time_fovea(s, batch, fovea::DataType::kFloat16, b, iters);
        case 10: return time_fovea(s, batch, fovea::DataType::kInt8, b, iters, false);
        case 11: return best_graph(handle, s, batch, g16, b, iters);
        case 12: return best_graph(handle, s, batch, g8h, b, iters);
        case 13: return best_graph(handle, s, batch, g8, b, iters);
        default: return best_graph(handle, s, batch, g8r, b, iters);
      }
    };
    float ms[kPaths];
    for (int i = 0; i < kPaths; ++i) ms[i] = measure(i);
    std::printf("%-22s %5d", s.name, s.count);
    for (int i = 0; i < kPaths; ++i) {
      if (ms[i] < 0)
        std::printf(" %8s", "-");
      else
        std::printf(" %8.3f", ms[i]);
      total[i] += static_cast<double>(s.count) * (ms[i] < 0 ? ms[0] : ms[i]);
    }
    std::printf("\n");
  }
  std::printf("%-22s %5s", "total (fp16 where -)", "");
  for (double t : total) std::printf(" %8.2f", t);
  std::printf("\n");
  return 0;
}
