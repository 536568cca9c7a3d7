// ConvTranspose on cuDNN: the transposed convolution is cuDNN's backward-data pass. cuDNN computes
// the full, unpadded output into the workspace; one pass then crops the ONNX pads (negative pads
// extend the output with zeros) and adds the bias. This covers asymmetric pads, output_padding and
// output_shape, which cuDNN's symmetric padding cannot express.
#include <algorithm>
#include <chrono>
#include <vector>

#include "runtime/cuda/conv_algorithm_cache.h"
#include "runtime/cuda/cudnn_util.h"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/ops/conv_util.h"

namespace fovea::runtime::cuda {

namespace {

constexpr int kX = 0, kW = 1, kB = 2;

struct CropGeometry {
  std::int64_t planes = 0;  // N * C_out
  std::int64_t channels = 1;
  std::int64_t full[3] = {1, 1, 1};
  std::int64_t out[3] = {1, 1, 1};
  std::int64_t begin[3] = {0, 0, 0};  // pad_begin: where the output starts inside the full result
};

template <typename T>
__global__ void crop_bias_kernel(const T* full, const T* bias, T* y, CropGeometry g) {
  const std::int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  const std::int64_t full_plane = g.full[0] * g.full[1] * g.full[2];
  FOVEA_GRID_STRIDE_LOOP(i, g.planes * out_plane) {
    const std::int64_t plane = i / out_plane;
    std::int64_t rest = i - plane * out_plane;
    std::int64_t source = 0;
    bool inside = true;
    for (int d = 0; d < 3; ++d) {
      std::int64_t divisor = 1;
      for (int e = d + 1; e < 3; ++e) divisor *= g.out[e];
      const std::int64_t coord = rest / divisor + g.begin[d];
      rest %= divisor;
      inside = inside && coord >= 0 && coord < g.full[d];
      source = source * g.full[d] + coord;
    }
    ComputeType<T> v = inside ? load_compute(full, plane * full_plane + source) : ComputeType<T>(0);
    if (bias != nullptr) v += load_compute(bias, plane % g.channels);
    store_compute(y, i, v);
  }
}

class ConvTransposeState final : public CudaNodeState {
 public:
  ~ConvTransposeState() override {
    if (x_ != nullptr) cudnnDestroyTensorDescriptor(x_);
    if (full_ != nullptr) cudnnDestroyTensorDescriptor(full_);
    if (w_ != nullptr) cudnnDestroyFilterDescriptor(w_);
    if (conv_ != nullptr) cudnnDestroyConvolutionDescriptor(conv_);
  }

  Result<std::size_t> prepare(CudaKernelContext& ctx);
  Status run(CudaKernelContext& ctx) const;

 private:
  Result<std::size_t> largest_workspace(CudaKernelContext& ctx, std::size_t limit) const;
  // From the cache, else by a search (or, past the search budget, cuDNN's heuristic) among the
  // algorithms needing at most `limit` bytes of scratch.
  Status choose_algorithm(CudaKernelContext& ctx, const std::string& key, std::size_t limit);

  DataType dtype_ = DataType::kFloat32;
  CropGeometry crop_;
  std::size_t full_bytes_ = 0;
  cudnnTensorDescriptor_t x_ = nullptr, full_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  ConvAlgorithm algorithm_;
};

Result<std::size_t> ConvTransposeState::prepare(CudaKernelContext& ctx) {
  const InferContext inference = ctx.inference();
  const Tensor& x = ctx.input(kX);
  const Tensor& w = ctx.input(kW);
  const Tensor& y = ctx.output(0);
  dtype_ = x.dtype();
  const int spatial = x.rank() - 2;
  if (spatial < 1 || spatial > 3) {
    return ctx.error(StatusCode::kUnsupported, "cuDNN convolves 1 to 3 spatial dims, not ",
                     std::to_string(spatial));
  }
  FOVEA_ASSIGN_OR_RETURN(ops::TransposeAttributes attributes,
                         ops::read_transpose_attributes(inference, spatial,
                                                        ops::weights_kernel_shape(inference.input_dims(kW))));
  Shape full_shape = y.shape();
  ConvGeometry geometry;
  std::vector<ops::WindowDim> window;
  for (int d = 0; d < spatial; ++d) {
    FOVEA_ASSIGN_OR_RETURN(ops::WindowDim dim, ops::transpose_dim(inference, attributes, d, x.dim(d + 2)));
    const std::int64_t full = dim.stride * (dim.in - 1) + (dim.kernel - 1) * dim.dilation + 1 +
                              attributes.output_padding[static_cast<std::size_t>(d)];
    full_shape[static_cast<std::size_t>(d + 2)] = full;
    crop_.full[3 - spatial + d] = full;
    crop_.out[3 - spatial + d] = dim.out;
    crop_.begin[3 - spatial + d] = dim.pad_begin;
    geometry.pads.push_back(0);
    geometry.strides.push_back(static_cast<int>(dim.stride));
    geometry.dilations.push_back(static_cast<int>(dim.dilation));
    window.push_back(dim);
  }
  crop_.planes = y.dim(0) * y.dim(1);
  crop_.channels = y.dim(1);
  full_bytes_ =
      (static_cast<std::size_t>(element_count(full_shape)) * data_type_size(dtype_) + 255) / 256 * 256;

  FOVEA_ASSIGN_OR_RETURN(cudnnDataType_t type, cudnn_type(ctx, dtype_));
  FOVEA_CUDNN_TRY(cudnnCreateTensorDescriptor(&x_));
  FOVEA_CUDNN_TRY(cudnnCreateTensorDescriptor(&full_));
  FOVEA_CUDNN_TRY(cudnnCreateFilterDescriptor(&w_));
  FOVEA_CUDNN_TRY(cudnnCreateConvolutionDescriptor(&conv_));
  FOVEA_TRY(set_tensor(x_, type, as_cudnn_dims(x.shape())));
  FOVEA_TRY(set_tensor(full_, type, as_cudnn_dims(full_shape)));
  FOVEA_TRY(set_filter(w_, type, w.shape()));
  FOVEA_TRY(set_convolution(conv_, geometry, attributes.groups, dtype_));
  FOVEA_ASSIGN_OR_RETURN(const std::size_t limit, algorithm_workspace_limit());
  FOVEA_TRY(choose_algorithm(
      ctx, conv_problem_key(ctx.node(), dtype_, x.shape(), w.shape(), window, attributes.groups, limit),
      limit));
  return full_bytes_ + algorithm_.workspace_bytes;
}

// The most scratch any of cuDNN's backward-data algorithms for this problem needs, within `limit`.
Result<std::size_t> ConvTransposeState::largest_workspace(CudaKernelContext& ctx, std::size_t limit) const {
  std::size_t largest = 0;
  for (int algo = 0; algo < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT; ++algo) {
    std::size_t bytes = 0;
    const cudnnStatus_t status = cudnnGetConvolutionBackwardDataWorkspaceSize(
        ctx.libraries().cudnn, w_, x_, conv_, full_, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo),
        &bytes);
    if (status == CUDNN_STATUS_NOT_SUPPORTED) continue;  // no such algorithm for this problem
    FOVEA_CUDNN_TRY(status);
    if (bytes <= limit) largest = std::max(largest, bytes);
  }
  return largest;
}

Status ConvTransposeState::choose_algorithm(CudaKernelContext& ctx, const std::string& key,
                                            std::size_t limit) {
  ConvAlgorithmCache& cache = ConvAlgorithmCache::instance();
  if (auto cached = cache.find(key)) {
    algorithm_ = *cached;
  } else {
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> results(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
    int returned = 0;
    SearchScratch scratch{.bytes = limit};
    const bool search = cache.search_allowed();
    if (search) {
      const auto started = std::chrono::steady_clock::now();
      FOVEA_ASSIGN_OR_RETURN(const std::size_t wanted, largest_workspace(ctx, limit));
      // The full output goes in front of the scratch.
      FOVEA_ASSIGN_OR_RETURN(scratch, reserve_search_scratch(ctx, full_bytes_, wanted));
      FOVEA_CUDNN_TRY(cudnnFindConvolutionBackwardDataAlgorithmEx(
          ctx.libraries().cudnn, w_, ctx.input(kW).raw(), x_, ctx.input(kX).raw(), conv_, full_,
          ctx.workspace(), static_cast<int>(results.size()), &returned, results.data(),
          static_cast<std::byte*>(ctx.workspace()) + full_bytes_, scratch.bytes));
      cache.charge_search(std::chrono::steady_clock::now() - started);
    } else {
      FOVEA_CUDNN_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx.libraries().cudnn, w_, x_, conv_, full_,
                                                                  static_cast<int>(results.size()), &returned,
                                                                  results.data()));
    }
    const auto best = std::find_if(results.begin(), results.begin() + returned, [&](const auto& perf) {
      return perf.status == CUDNN_STATUS_SUCCESS && perf.memory <= scratch.bytes &&
             math_type_allowed(perf.mathType, dtype_);
    });
    if (best == results.begin() + returned) {
      return ctx.error(StatusCode::kUnsupported,
                       "cuDNN has no transposed-convolution algorithm for this problem");
    }
    algorithm_ = ConvAlgorithm{static_cast<int>(best->algo), static_cast<int>(best->mathType), best->memory};
    // A heuristic pick is not cached: the next process, with a budget of its own, searches it.
    if (search && scratch.complete) cache.insert(key, algorithm_);
  }
  FOVEA_CUDNN_TRY(cudnnSetConvolutionMathType(conv_, static_cast<cudnnMathType_t>(algorithm_.math_type)));
  return Status::ok();
}

Status ConvTransposeState::run(CudaKernelContext& ctx) const {
  const float one = 1.0f, zero = 0.0f;
  const double one64 = 1.0, zero64 = 0.0;
  const bool wide = dtype_ == DataType::kFloat64;
  void* full = ctx.workspace();
  void* scratch = static_cast<std::byte*>(ctx.workspace()) + full_bytes_;
  FOVEA_CUDNN_TRY(cudnnConvolutionBackwardData(
      ctx.libraries().cudnn, wide ? static_cast<const void*>(&one64) : &one, w_, ctx.input(kW).raw(), x_,
      ctx.input(kX).raw(), conv_, static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm_.algo), scratch,
      algorithm_.workspace_bytes, wide ? static_cast<const void*>(&zero64) : &zero, full_, full));
  Tensor& y = ctx.output(0);
  const bool ok =
      dispatch_device<DataType::kFloat32, DataType::kFloat16, DataType::kFloat64>(dtype_, [&](auto tag) {
        using T = typename decltype(tag)::type;
        crop_bias_kernel<T><<<grid_for(y.numel()), kBlockSize, 0, ctx.stream()>>>(
            static_cast<const T*>(full),
            ctx.has_input(kB) ? static_cast<const T*>(ctx.input(kB).raw()) : nullptr,
            static_cast<T*>(y.raw()), crop_);
      });
  FOVEA_CHECK(ok);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

Result<CudaPrepared> prepare_conv_transpose(CudaKernelContext& ctx) {
  auto state = std::make_unique<ConvTransposeState>();
  FOVEA_ASSIGN_OR_RETURN(std::size_t workspace, state->prepare(ctx));
  return CudaPrepared{std::move(state), workspace};
}

Status run_conv_transpose(CudaKernelContext& ctx) {
  return ctx.state<ConvTransposeState>().run(ctx);
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "ConvTranspose",
                        .prepare = prepare_conv_transpose,
                        .run = run_conv_transpose});

}  // namespace fovea::runtime::cuda
