// Conv and fovea.FusedConv on cuDNN: the convolution, then one epilogue pass (bias + residual +
// activation) when there is one; with a ReLU, cudnnConvolutionBiasActivationForward instead (conv +
// bias + residual + ReLU in one call) where the search timed it faster. float16 runs on tensor cores with
// float32 accumulation; float32 uses FMA math only (no TF32), so it matches the CPU reference to float32
// precision.
//
// The algorithm is searched at plan time (cudnnFindConvolutionForwardAlgorithmEx on the plan's
// real buffers) and cached on disk (conv_algorithm_cache.h), keyed by GPU, driver, cuDNN and the
// exact problem. Find proposes the candidates; each is then timed as the calls the plan will make:
// the plain convolution (plus fovea's epilogue pass, if any) and, with a ReLU epilogue, cuDNN's
// fused call, each replayed as a CUDA graph (shortest_run_ms says why). `fovea -v` logs every
// timing. cuDNN takes symmetric pads only; asymmetric ones (SAME_UPPER with even kernels) are
// applied by copying the input into a padded workspace first.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cuda/conv_algorithm_cache.h"
#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/cudnn_util.h"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/ops/conv_util.h"

namespace fovea::runtime::cuda {

namespace {

constexpr int kX = 0, kW = 1, kB = 2, kZ = 3;

// Scratch the chosen algorithm may use.
constexpr std::size_t kConvWorkspaceLimit = std::size_t{256} << 20;

// Copies x [N, C, spatial...] into the zero-bordered [N, C, spatial + pads] tensor (up to 3
// spatial dims), for the pads cuDNN cannot take.
struct PadGeometry {
  int spatial = 0;
  std::int64_t planes = 0;  // N * C
  std::int64_t in[3] = {1, 1, 1};
  std::int64_t out[3] = {1, 1, 1};
  std::int64_t begin[3] = {0, 0, 0};
};

template <typename T>
__global__ void pad_input_kernel(const T* x, T* padded, PadGeometry g) {
  const std::int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  FOVEA_GRID_STRIDE_LOOP(i, g.planes * out_plane) {
    std::int64_t rest = i % out_plane;
    const std::int64_t plane = i / out_plane;
    std::int64_t source = 0;
    bool inside = true;
    for (int d = 0; d < 3; ++d) {
      std::int64_t divisor = 1;
      for (int e = d + 1; e < 3; ++e) divisor *= g.out[e];
      const std::int64_t coord = rest / divisor - g.begin[d];
      rest %= divisor;
      inside = inside && coord >= 0 && coord < g.in[d];
      source = source * g.in[d] + coord;
    }
    padded[i] = inside ? x[plane * g.in[0] * g.in[1] * g.in[2] + source] : T(0);
  }
}

struct EpilogueParams {
  std::int64_t total = 0;
  std::int64_t plane = 1;     // output elements per channel (1 in NHWC)
  std::int64_t channels = 1;  // the bias is per channel
  ops::Activation activation;
  // The grid-stride loop's step, and what it adds to an element's position in its plane and to
  // its channel (each less than plane and channels), for ChannelCursor.
  std::int64_t stride = 1;
  std::int64_t stride_pos = 0;
  std::int64_t stride_channel = 0;
};

// The bias channel of element i, (i / plane) % channels, followed along the grid-stride loop with
// adds and compares: a 64-bit division per element made this memory-bound pass compute-bound
// (FCN-ResNet101's epilogues ran at ~1/5 of copy bandwidth).
struct ChannelCursor {
  std::int64_t pos;      // i % plane
  std::int64_t channel;  // (i / plane) % channels

  __device__ ChannelCursor(std::int64_t i, const EpilogueParams& p)
      : pos(i % p.plane), channel((i / p.plane) % p.channels) {}
  // To element i + p.stride. Each sum stays under twice its bound, so one subtraction wraps it.
  __device__ void advance(const EpilogueParams& p) {
    pos += p.stride_pos;
    channel += p.stride_channel;
    if (pos >= p.plane) {
      pos -= p.plane;
      ++channel;
    }
    if (channel >= p.channels) channel -= p.channels;
  }
};

template <typename C>
__device__ __forceinline__ C activate(C v, const ops::Activation& a) {
  switch (a.kind) {
    case ops::Activation::Kind::kNone: return v;
    case ops::Activation::Kind::kRelu: return v > C(0) ? v : C(0);
    case ops::Activation::Kind::kLeakyRelu: return v < C(0) ? C(a.alpha) * v : v;
    case ops::Activation::Kind::kClip: return v < C(a.min) ? C(a.min) : (v > C(a.max) ? C(a.max) : v);
    case ops::Activation::Kind::kSigmoid: return C(1) / (C(1) + exp(-v));
    case ops::Activation::Kind::kHardSwish: {
      const C gate = v / C(6) + C(0.5);
      return v * (gate < C(0) ? C(0) : (gate > C(1) ? C(1) : gate));
    }
  }
  return v;
}

// y = act(y + b[c] + z), one pass, for what cuDNN's fused call does not cover.
template <typename T>
__global__ void conv_epilogue_kernel(T* y, const T* bias, const T* z, EpilogueParams p) {
  std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (ChannelCursor cursor(i, p); i < p.total; i += p.stride, cursor.advance(p)) {
    auto v = load_compute(y, i);
    if (bias != nullptr) v += load_compute(bias, cursor.channel);
    if (z != nullptr) v += load_compute(z, i);
    store_compute(y, i, activate(v, p.activation));
  }
}

class ConvState final : public CudaNodeState {
 public:
  ~ConvState() override {
    if (x_ != nullptr) cudnnDestroyTensorDescriptor(x_);
    if (y_ != nullptr) cudnnDestroyTensorDescriptor(y_);
    if (bias_ != nullptr) cudnnDestroyTensorDescriptor(bias_);
    if (w_ != nullptr) cudnnDestroyFilterDescriptor(w_);
    if (conv_ != nullptr) cudnnDestroyConvolutionDescriptor(conv_);
    if (relu_ != nullptr) cudnnDestroyActivationDescriptor(relu_);
  }

  Result<std::size_t> prepare(CudaKernelContext& ctx, const ops::Activation& activation);
  Status run(CudaKernelContext& ctx) const;

 private:
  Status pad(CudaKernelContext& ctx, void* padded) const;
  Status describe(CudaKernelContext& ctx, const Shape& x, const Shape& w,
                  const std::vector<ops::WindowDim>& window, std::int64_t groups);
  // A shape of this node's tensors in NCHW order (permuted back when the node is channels_last).
  Shape nchw(const Shape& shape) const {
    return channels_last_ ? ops::permute_tensor_shape(shape, ops::kNhwcToNchw) : shape;
  }
  Status choose_algorithm(CudaKernelContext& ctx, const std::string& key);
  Status describe_fused_epilogue(CudaKernelContext& ctx);
  // The fused call with the current algorithm, math type and workspace.
  cudnnStatus_t run_fused(CudaKernelContext& ctx, const void* x, void* scratch) const;
  // The plain convolution with the current algorithm, then the epilogue pass when there is one.
  Status run_plain(CudaKernelContext& ctx, const void* x, void* scratch) const;
  // The fastest way to run this convolution among `candidates`, each timed as the plain call (with
  // the epilogue pass, if any) and, with a ReLU epilogue, as the fused call. `report` gets a line
  // per timing, for the debug log.
  Result<ConvAlgorithm> fastest_form(CudaKernelContext& ctx,
                                     const std::vector<const cudnnConvolutionFwdAlgoPerf_t*>& candidates,
                                     std::string& report);

  DataType dtype_ = DataType::kFloat32;
  ops::Activation activation_;
  // A ReLU epilogue, which cudnnConvolutionBiasActivationForward can run (algorithm_.fused says
  // whether it does).
  bool cudnn_epilogue_ = false;
  bool padded_ = false;
  bool channels_last_ = false;  // X, Z, Y in NHWC and W in [M, kH, kW, C/group] (channels_last.cpp)
  PadGeometry pad_;
  std::size_t padded_bytes_ = 0;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, bias_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnActivationDescriptor_t relu_ = nullptr;
  DeviceMemory zero_bias_;  // the fused call needs a bias; a Conv without one adds zeros
  ConvAlgorithm algorithm_;
};

Status ConvState::describe(CudaKernelContext& ctx, const Shape& x, const Shape& w,
                           const std::vector<ops::WindowDim>& window, std::int64_t groups) {
  const Shape y = nchw(ctx.output(0).shape());
  FOVEA_ASSIGN_OR_RETURN(cudnnDataType_t type, cudnn_type(ctx, dtype_));
  const int spatial = static_cast<int>(window.size());
  if (spatial < 1 || spatial > 3) {
    return ctx.error(StatusCode::kUnsupported, "cuDNN convolves 1 to 3 spatial dims, not ",
                     std::to_string(spatial));
  }
  // Asymmetric pads: the input is padded into the workspace and cuDNN sees pads of zero.
  padded_ = std::any_of(window.begin(), window.end(),
                        [](const ops::WindowDim& d) { return d.pad_begin != d.pad_end; });
  if (padded_ && channels_last_) {
    return ctx.error(StatusCode::kUnsupported, "channels_last convolutions take symmetric pads only");
  }
  Shape x_shape = x;
  ConvGeometry geometry;
  pad_.spatial = spatial;
  pad_.planes = x[0] * x[1];
  for (int d = 0; d < spatial; ++d) {
    const ops::WindowDim& wd = window[static_cast<std::size_t>(d)];
    pad_.in[3 - spatial + d] = wd.in;
    pad_.out[3 - spatial + d] = wd.in + (padded_ ? wd.pad_begin + wd.pad_end : 0);
    pad_.begin[3 - spatial + d] = padded_ ? wd.pad_begin : 0;
    x_shape[static_cast<std::size_t>(d + 2)] = pad_.out[3 - spatial + d];
    geometry.pads.push_back(padded_ ? 0 : static_cast<int>(wd.pad_begin));
    geometry.strides.push_back(static_cast<int>(wd.stride));
    geometry.dilations.push_back(static_cast<int>(wd.dilation));
  }
  padded_bytes_ = padded_ ? static_cast<std::size_t>(element_count(x_shape)) * data_type_size(dtype_) : 0;
  FOVEA_CUDNN_TRY(cudnnCreateTensorDescriptor(&x_));
  FOVEA_CUDNN_TRY(cudnnCreateTensorDescriptor(&y_));
  FOVEA_CUDNN_TRY(cudnnCreateFilterDescriptor(&w_));
  FOVEA_CUDNN_TRY(cudnnCreateConvolutionDescriptor(&conv_));
  if (channels_last_) {
    const auto i = [](std::int64_t v) { return static_cast<int>(v); };
    FOVEA_CUDNN_TRY(
        cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NHWC, type, i(x[0]), i(x[1]), i(x[2]), i(x[3])));
    FOVEA_CUDNN_TRY(
        cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NHWC, type, i(y[0]), i(y[1]), i(y[2]), i(y[3])));
    FOVEA_CUDNN_TRY(
        cudnnSetFilter4dDescriptor(w_, type, CUDNN_TENSOR_NHWC, i(w[0]), i(w[1]), i(w[2]), i(w[3])));
  } else {
    FOVEA_TRY(set_tensor(x_, type, as_cudnn_dims(x_shape)));
    FOVEA_TRY(set_tensor(y_, type, as_cudnn_dims(y)));
    FOVEA_TRY(set_filter(w_, type, w));
  }
  FOVEA_TRY(set_convolution(conv_, geometry, groups, dtype_));
  return Status::ok();
}

bool acceptable(const cudnnConvolutionFwdAlgoPerf_t& perf, DataType dtype, std::size_t limit) {
  return perf.status == CUDNN_STATUS_SUCCESS && perf.memory <= limit &&
         math_type_allowed(perf.mathType, dtype);
}

Status ConvState::choose_algorithm(CudaKernelContext& ctx, const std::string& key) {
  ConvAlgorithmCache& cache = ConvAlgorithmCache::instance();
  if (auto cached = cache.find(key)) {
    algorithm_ = *cached;
  } else {
    std::vector<cudnnConvolutionFwdAlgoPerf_t> results(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    int returned = 0;
    const std::size_t limit = std::min(kConvWorkspaceLimit, ctx.workspace_bytes() - padded_bytes_);
    void* x = padded_ ? ctx.workspace() : const_cast<void*>(ctx.input(kX).raw());
    void* scratch = static_cast<std::byte*>(ctx.workspace()) + padded_bytes_;
    const bool search = cache.search_allowed();
    const auto started = std::chrono::steady_clock::now();
    if (search) {
      FOVEA_CUDNN_TRY(cudnnFindConvolutionForwardAlgorithmEx(
          ctx.libraries().cudnn, x_, x, w_, ctx.input(kW).raw(), conv_, y_, ctx.output(0).raw(),
          static_cast<int>(results.size()), &returned, results.data(), scratch, limit));
    } else {
      FOVEA_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(ctx.libraries().cudnn, x_, w_, conv_, y_,
                                                             static_cast<int>(results.size()), &returned,
                                                             results.data()));
    }
    std::vector<const cudnnConvolutionFwdAlgoPerf_t*> candidates;
    for (int i = 0; i < returned; ++i) {
      if (acceptable(results[static_cast<std::size_t>(i)], dtype_, limit)) candidates.push_back(&results[i]);
    }
    if (candidates.empty()) {
      return ctx.error(StatusCode::kUnsupported, "cuDNN has no convolution algorithm for this problem");
    }
    const cudnnConvolutionFwdAlgoPerf_t* first = candidates.front();
    algorithm_ = ConvAlgorithm{.algo = static_cast<int>(first->algo),
                               .math_type = static_cast<int>(first->mathType),
                               .workspace_bytes = first->memory,
                               .fused = cudnn_epilogue_};
    if (search) {
      std::string report;
      FOVEA_ASSIGN_OR_RETURN(algorithm_, fastest_form(ctx, candidates, report));
      log_conv_search(ctx.node().name, key, report);
      cache.charge_search(std::chrono::steady_clock::now() - started);
    }
    cache.insert(key, algorithm_);
  }
  FOVEA_CUDNN_TRY(cudnnSetConvolutionMathType(conv_, static_cast<cudnnMathType_t>(algorithm_.math_type)));
  return Status::ok();
}

// The shortest of three replays of `work` captured as a CUDA graph, on the node's stream (`work`
// has run once eagerly: warm). A graph, as the plan runs it: timed eagerly, cuDNN's host-side work
// per call (tens of microseconds) lies between the events and swamps small problems; at batch 1 it
// made every ResNet-50 convolution look 30-90 us long and ranked cuDNN's legacy kernels first.
template <typename Work>
Result<float> shortest_run_ms(CudaKernelContext& ctx, Work&& work) {
  FOVEA_ASSIGN_OR_RETURN(CudaGraph graph, CudaGraph::capture(ctx.stream(), work));
  FOVEA_ASSIGN_OR_RETURN(CudaEvent begin, CudaEvent::create(true));
  FOVEA_ASSIGN_OR_RETURN(CudaEvent end, CudaEvent::create(true));
  FOVEA_TRY(graph.launch(ctx.stream()));
  float shortest = 0.0f;
  for (int run = 0; run < 3; ++run) {
    FOVEA_TRY(begin.record(ctx.stream()));
    FOVEA_TRY(graph.launch(ctx.stream()));
    FOVEA_TRY(end.record(ctx.stream()));
    FOVEA_TRY(end.synchronize());
    FOVEA_ASSIGN_OR_RETURN(const float ms, end.elapsed_ms_since(begin));
    shortest = run == 0 ? ms : std::min(shortest, ms);
  }
  return shortest;
}

Result<ConvAlgorithm> ConvState::fastest_form(
    CudaKernelContext& ctx, const std::vector<const cudnnConvolutionFwdAlgoPerf_t*>& candidates,
    std::string& report) {
  const void* x = padded_ ? ctx.workspace() : ctx.input(kX).raw();
  void* scratch = static_cast<std::byte*>(ctx.workspace()) + padded_bytes_;
  const auto run_form = [&]() -> Status {
    if (!algorithm_.fused) return run_plain(ctx, x, scratch);
    FOVEA_CUDNN_TRY(run_fused(ctx, x, scratch));
    return Status::ok();
  };
  std::optional<ConvAlgorithm> best;
  float best_ms = 0.0f;
  for (const cudnnConvolutionFwdAlgoPerf_t* candidate : candidates) {
    for (const bool fused : {false, true}) {
      if (fused && !cudnn_epilogue_) continue;
      algorithm_ = ConvAlgorithm{.algo = static_cast<int>(candidate->algo),
                                 .math_type = static_cast<int>(candidate->mathType),
                                 .workspace_bytes = candidate->memory,
                                 .fused = fused};
      FOVEA_CUDNN_TRY(cudnnSetConvolutionMathType(conv_, candidate->mathType));
      report += "algo " + std::to_string(candidate->algo) + " math " + std::to_string(candidate->mathType) +
                (fused ? " fused" : " plain") + ": Find " + std::to_string(candidate->time) + " ms, ";
      if (!run_form().is_ok()) {  // this form does not take this algorithm
        report += "does not run\n";
        continue;
      }
      FOVEA_ASSIGN_OR_RETURN(const float ms, shortest_run_ms(ctx, run_form));
      report += "measured " + std::to_string(ms) + " ms\n";
      if (!best || ms < best_ms) {
        best = algorithm_;
        best_ms = ms;
      }
    }
  }
  if (!best) return ctx.error(StatusCode::kUnsupported, "cuDNN runs none of its convolution algorithms here");
  return *best;
}

Result<std::size_t> ConvState::prepare(CudaKernelContext& ctx, const ops::Activation& activation) {
  const InferContext inference = ctx.inference();
  dtype_ = ctx.input(kX).dtype();
  activation_ = activation;
  FOVEA_ASSIGN_OR_RETURN(std::int64_t channels_last, ctx.node().attr_int("channels_last", 0));
  channels_last_ = channels_last != 0;
  // The window arithmetic is NCHW's; channels_last tensors are permuted views of the same problem.
  const Shape x = nchw(ctx.input(kX).shape());
  const Shape w = nchw(ctx.input(kW).shape());
  const Dims w_dims = dims_of(w);
  FOVEA_ASSIGN_OR_RETURN(ops::WindowAttributes attributes,
                         ops::read_window_attributes(inference, static_cast<int>(x.size()) - 2,
                                                     ops::weights_kernel_shape(&w_dims)));
  FOVEA_ASSIGN_OR_RETURN(std::vector<ops::WindowDim> window, ops::resolve_window(inference, attributes, x));
  FOVEA_ASSIGN_OR_RETURN(std::int64_t groups, ctx.node().attr_int("group", 1));
  FOVEA_TRY(describe(ctx, x, w, window, groups));
  if (padded_) {
    FOVEA_TRY(pad(ctx, ctx.workspace()));
  }
  cudnn_epilogue_ = dtype_ != DataType::kFloat64 && activation.kind == ops::Activation::Kind::kRelu;
  if (cudnn_epilogue_) FOVEA_TRY(describe_fused_epilogue(ctx));
  // A ReLU convolution's entry also says whether it runs fused: its own key.
  const std::string key = conv_problem_key(ctx.node(), dtype_, x, w, window, groups) +
                          (channels_last_ ? "|nhwc" : "") + (cudnn_epilogue_ ? "|relu" : "");
  FOVEA_TRY(choose_algorithm(ctx, key));
  return padded_bytes_ + algorithm_.workspace_bytes;
}

Status ConvState::describe_fused_epilogue(CudaKernelContext& ctx) {
  const std::int64_t channels = ctx.output(0).dim(channels_last_ ? 3 : 1);
  std::vector<int> bias_dims(static_cast<std::size_t>(std::max(4, ctx.output(0).rank())), 1);
  bias_dims[1] = static_cast<int>(channels);
  FOVEA_CUDNN_TRY(cudnnCreateTensorDescriptor(&bias_));
  FOVEA_ASSIGN_OR_RETURN(cudnnDataType_t type, cudnn_type(ctx, dtype_));
  FOVEA_TRY(set_tensor(bias_, type, bias_dims));
  FOVEA_CUDNN_TRY(cudnnCreateActivationDescriptor(&relu_));
  FOVEA_CUDNN_TRY(cudnnSetActivationDescriptor(relu_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  if (!ctx.has_input(kB)) {
    const std::size_t bytes = static_cast<std::size_t>(channels) * data_type_size(dtype_);
    FOVEA_ASSIGN_OR_RETURN(zero_bias_,
                           DeviceMemory::allocate(bytes));  // plan time: this node's one allocation
    // On the node's stream: a plain cudaMemset runs on the legacy stream, which fovea's
    // non-blocking streams are not ordered after.
    FOVEA_CUDA_TRY(cudaMemsetAsync(zero_bias_.get(), 0, bytes, ctx.stream()));
  }
  return Status::ok();
}

Status ConvState::pad(CudaKernelContext& ctx, void* padded) const {
  const bool ok =
      dispatch_device<DataType::kFloat32, DataType::kFloat16, DataType::kFloat64>(dtype_, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const std::int64_t total = pad_.planes * pad_.out[0] * pad_.out[1] * pad_.out[2];
        pad_input_kernel<T><<<grid_for(total), kBlockSize, 0, ctx.stream()>>>(
            static_cast<const T*>(ctx.input(kX).raw()), static_cast<T*>(padded), pad_);
      });
  FOVEA_CHECK(ok);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

cudnnStatus_t ConvState::run_fused(CudaKernelContext& ctx, const void* x, void* scratch) const {
  // cuDNN reads alpha and beta as float for half and float data (double is never fused).
  const float one = 1.0f, zero = 0.0f;
  const bool residual = ctx.has_input(kZ);
  const void* bias = ctx.has_input(kB) ? ctx.input(kB).raw() : zero_bias_.get();
  void* y = ctx.output(0).raw();
  return cudnnConvolutionBiasActivationForward(
      ctx.libraries().cudnn, &one, x_, x, w_, ctx.input(kW).raw(), conv_,
      static_cast<cudnnConvolutionFwdAlgo_t>(algorithm_.algo), scratch, algorithm_.workspace_bytes,
      residual ? &one : &zero, y_, residual ? ctx.input(kZ).raw() : y, bias_, bias, relu_, y_, y);
}

Status ConvState::run(CudaKernelContext& ctx) const {
  const void* x = ctx.input(kX).raw();
  if (padded_) {
    FOVEA_TRY(pad(ctx, ctx.workspace()));
    x = ctx.workspace();
  }
  void* scratch = static_cast<std::byte*>(ctx.workspace()) + padded_bytes_;
  if (cudnn_epilogue_ && algorithm_.fused) {
    FOVEA_CUDNN_TRY(run_fused(ctx, x, scratch));
    return Status::ok();
  }
  return run_plain(ctx, x, scratch);
}

Status ConvState::run_plain(CudaKernelContext& ctx, const void* x, void* scratch) const {
  const auto algo = static_cast<cudnnConvolutionFwdAlgo_t>(algorithm_.algo);
  Tensor& y = ctx.output(0);
  const float one = 1.0f, zero = 0.0f;
  const double one64 = 1.0, zero64 = 0.0;
  const bool wide = dtype_ == DataType::kFloat64;
  const void* alpha = wide ? static_cast<const void*>(&one64) : &one;
  const void* beta = wide ? static_cast<const void*>(&zero64) : &zero;
  FOVEA_CUDNN_TRY(cudnnConvolutionForward(ctx.libraries().cudnn, alpha, x_, x, w_, ctx.input(kW).raw(), conv_,
                                          algo, scratch, algorithm_.workspace_bytes, beta, y_, y.raw()));
  const bool has_bias = ctx.has_input(kB);
  const bool has_residual = ctx.input_count() > kZ && ctx.has_input(kZ);
  if (!has_bias && !has_residual && activation_.kind == ops::Activation::Kind::kNone) return Status::ok();
  EpilogueParams params;
  params.total = y.numel();
  params.channels = y.dim(channels_last_ ? 3 : 1);
  params.plane = channels_last_ ? 1 : params.total / (y.dim(0) * params.channels);
  params.activation = activation_;
  const unsigned grid = grid_for(params.total);
  params.stride = static_cast<std::int64_t>(grid) * kBlockSize;
  params.stride_pos = params.stride % params.plane;
  params.stride_channel = (params.stride / params.plane) % params.channels;
  const bool ok =
      dispatch_device<DataType::kFloat32, DataType::kFloat16, DataType::kFloat64>(dtype_, [&](auto tag) {
        using T = typename decltype(tag)::type;
        conv_epilogue_kernel<T><<<grid, kBlockSize, 0, ctx.stream()>>>(
            static_cast<T*>(y.raw()), has_bias ? static_cast<const T*>(ctx.input(kB).raw()) : nullptr,
            has_residual ? static_cast<const T*>(ctx.input(kZ).raw()) : nullptr, params);
      });
  FOVEA_CHECK(ok);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

Result<CudaPrepared> prepare_conv(CudaKernelContext& ctx) {
  auto state = std::make_unique<ConvState>();
  ops::Activation activation;
  if (ctx.node().op_type == "FusedConv") {
    FOVEA_ASSIGN_OR_RETURN(activation, ops::read_activation(ctx.inference()));
  }
  FOVEA_ASSIGN_OR_RETURN(std::size_t workspace, state->prepare(ctx, activation));
  return CudaPrepared{std::move(state), workspace};
}

Status run_conv(CudaKernelContext& ctx) {
  return ctx.state<ConvState>().run(ctx);
}

}  // namespace

FOVEA_REGISTER_CUDA_OP({.op_type = "Conv", .prepare = prepare_conv, .run = run_conv});
FOVEA_REGISTER_CUDA_OP({.domain = "fovea", .op_type = "FusedConv", .prepare = prepare_conv, .run = run_conv});

}  // namespace fovea::runtime::cuda
