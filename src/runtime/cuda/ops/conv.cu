// Conv and fovea.FusedConv on cuDNN: the convolution, then one epilogue pass (bias + residual +
// activation) when there is one; with a ReLU, cudnnConvolutionBiasActivationForward instead (conv +
// bias + residual + ReLU in one call) where the search timed it faster. float16 runs on tensor cores with
// float32 accumulation; float32 uses FMA math only (no TF32), so it matches the CPU reference to float32
// precision.
//
// The algorithm is searched at plan time (cudnnFindConvolutionForwardAlgorithmEx on the plan's
// real buffers) and cached on disk (conv_algorithm_cache.h), keyed by GPU, driver, cuDNN and the
// exact problem. Find proposes the candidates (and times each once: those far over the fastest are
// dropped, fastest_form says why); each is then timed as the calls the plan will make:
// the plain convolution (plus fovea's epilogue pass, if any) and, with a ReLU epilogue, cuDNN's
// fused call, each replayed as a CUDA graph (shortest_run_ms says why). `fovea -v` logs every
// timing. The search may hand an algorithm up to an eighth of the device's memory as scratch
// (algorithm_workspace_limit), growing the plan's search buffer to what the problem's algorithms
// need: the fastest need scratch in proportion to the batch, and a fixed 256 MiB cap left large
// batches to kernels without tensor cores (issue 25). A strided 1x1 convolution is also timed as a
// dense copy of the pixels it reads plus a stride-1 convolution (ConvState::can_subsample_ says why).
// cuDNN takes symmetric pads only; asymmetric ones (SAME_UPPER with even kernels) are applied by
// copying the input into a padded workspace first. A depthwise convolution in NHWC with constant
// weights is also timed on fovea's own kernel (depthwise_conv.h), epilogue included, and a 1x1
// convolution in NHWC as a cuBLASLt GEMM (ConvState::describe_gemm says why), as is a patch
// convolution (kernel == stride) on a dense copy of its patches: cuDNN ran ViT-B's 16x16 patch
// embedding of 3 channels at 0.46 ms a batch of 64 (padding the channels to 8 first), 30 TFLOPS.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda/conv_algorithm_cache.h"
#include "runtime/cuda/conv_epilogue.cuh"
#include "runtime/cuda/cuda_op.h"
#include "runtime/cuda/cudnn_util.h"
#include "runtime/cuda/depthwise_conv.h"
#include "runtime/cuda/kernel_util.cuh"
#include "runtime/cuda/lt_matmul.h"
#include "runtime/ops/conv_util.h"

namespace fovea::runtime::cuda {

namespace {

constexpr int kX = 0, kW = 1, kB = 2, kZ = 3;

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

// The input pixels a convolution without overlap reads, copied densely (NHWC): a strided 1x1
// convolution's every stride-th pixel, [N, out_h, out_w, C]; a patch convolution's (kernel ==
// stride: ViT's and Swin's patch embedding, ConvNeXt's stem) kH x kW patches, [N, out_h, out_w, kH,
// kW, C], which makes it a product with its weights [M, kH, kW, C]. Each of a patch's kH rows is a
// run of kW pixels contiguous in the input. Copied in units of up to 16 bytes (runs, pixel steps and
// input rows are whole units), one row of output pixels per grid row.
struct SubsampleGeometry {
  std::int64_t rows = 0;  // N * out_h
  int out_h = 1, in_h = 1;
  int kernel_h = 1, stride_h = 1;
  int input_row_units = 0;  // one row of the input
  int step_units = 0;       // from one output pixel's patch to the next: stride_w pixels
  int run_units = 0;        // one of a patch's rows: kernel_w pixels
  int patch_units = 0;      // kernel_h * run_units
  int row_units = 0;        // out_w * patch_units: one row of the copy
  int unit_bytes = 1;
};

template <typename Unit>
__global__ void subsample_kernel(const Unit* x, Unit* dense, SubsampleGeometry g) {
  for (std::int64_t row = blockIdx.y; row < g.rows; row += gridDim.y) {
    const std::int64_t n = row / g.out_h, h = row % g.out_h;
    const Unit* in = x + (n * g.in_h + h * g.stride_h) * g.input_row_units;
    Unit* out = dense + row * g.row_units;
    for (int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); j < g.row_units;
         j += static_cast<int>(gridDim.x * blockDim.x)) {
      const int w = j / g.patch_units;
      const int in_patch = j - w * g.patch_units;
      const int patch_row = in_patch / g.run_units;
      out[j] = in[static_cast<std::int64_t>(patch_row) * g.input_row_units +
                  static_cast<std::int64_t>(w) * g.step_units + (in_patch - patch_row * g.run_units)];
    }
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
    if (dense_x_ != nullptr) cudnnDestroyTensorDescriptor(dense_x_);
    if (dense_conv_ != nullptr) cudnnDestroyConvolutionDescriptor(dense_conv_);
  }

  Result<std::size_t> prepare(CudaKernelContext& ctx, const ops::Activation& activation);
  Status run(CudaKernelContext& ctx) const;

 private:
  Status pad(CudaKernelContext& ctx, void* padded) const;
  // Whether fovea's depthwise kernel takes this problem, and its geometry.
  void describe_depthwise(CudaKernelContext& ctx, const Shape& x, const Shape& w,
                          const std::vector<ops::WindowDim>& window, std::int64_t groups);
  // The weights in the kernel's order, on the device; once, when the kernel is timed or chosen.
  Status upload_depthwise_weights(CudaKernelContext& ctx);
  Status run_depthwise(CudaKernelContext& ctx) const;
  // Whether the convolution is a product cuBLASLt can run, and that product, planned.
  void describe_gemm(CudaKernelContext& ctx, const Shape& x, const std::vector<ops::WindowDim>& window,
                     std::int64_t groups);
  // The product's operands: the input (or its dense copy), the weights, the residual as C.
  LtCall gemm_call(CudaKernelContext& ctx) const;
  Status run_gemm(CudaKernelContext& ctx) const;
  // y = act(y + bias + residual) in one pass; bias and residual may be null.
  Status launch_epilogue(CudaKernelContext& ctx, const void* bias, const void* residual) const;
  Status describe_subsampled(const Shape& x, const std::vector<ops::WindowDim>& window, std::int64_t groups,
                             cudnnDataType_t type);
  Status subsample(CudaKernelContext& ctx, void* dense) const;
  // What the current algorithm convolves: the strided problem, or the stride-1 one on the dense copy.
  // Whether cuDNN is also searched on the dense copy (a strided 1x1 convolution's; a patch
  // convolution's copy runs as a product only).
  bool cudnn_on_dense() const { return can_subsample_ && !patches_; }
  bool cudnn_runs_dense() const { return algorithm_.subsampled && cudnn_on_dense(); }
  cudnnTensorDescriptor_t x_desc() const { return cudnn_runs_dense() ? dense_x_ : x_; }
  cudnnConvolutionDescriptor_t conv_desc() const { return cudnn_runs_dense() ? dense_conv_ : conv_; }
  // The bytes at the front of the workspace that the current algorithm's input copy takes.
  std::size_t front_bytes() const { return algorithm_.subsampled ? subsampled_bytes_ : padded_bytes_; }
  // The input cuDNN reads with the current algorithm (the tensor, or its padded or subsampled copy
  // in the workspace) and the scratch after that copy.
  std::pair<const void*, void*> operands(CudaKernelContext& ctx) const;
  Status describe(CudaKernelContext& ctx, const Shape& x, const Shape& w,
                  const std::vector<ops::WindowDim>& window, std::int64_t groups);
  // A shape of this node's tensors in NCHW order (permuted back when the node is channels_last).
  Shape nchw(const Shape& shape) const {
    return channels_last_ ? ops::permute_tensor_shape(shape, ops::kNhwcToNchw) : shape;
  }
  Result<std::size_t> largest_workspace(CudaKernelContext& ctx, std::size_t limit) const;
  // From the cache, else by a search (or, past the search budget, cuDNN's heuristic) among the
  // algorithms needing at most `limit` bytes of scratch.
  Status choose_algorithm(CudaKernelContext& ctx, const std::string& key, std::size_t limit);
  Status describe_fused_epilogue(CudaKernelContext& ctx);
  // The fused call with the current algorithm, math type and workspace.
  cudnnStatus_t run_fused(CudaKernelContext& ctx, const void* x, void* scratch) const;
  // The plain convolution with the current algorithm, then the epilogue pass when there is one.
  Status run_plain(CudaKernelContext& ctx, const void* x, void* scratch) const;
  // The fastest way to run this convolution among `candidates`, each timed as the plain call (with
  // the epilogue pass, if any) and, with a ReLU epilogue, as the fused call. `report` gets a line
  // per timing, for the debug log.
  struct Candidate {
    const cudnnConvolutionFwdAlgoPerf_t* perf;
    bool subsampled;
  };
  Result<ConvAlgorithm> fastest_form(CudaKernelContext& ctx, const std::vector<Candidate>& candidates,
                                     std::string& report);
  // cuDNN's Find on one of the two problems, its usable results into `candidates`.
  Status find(CudaKernelContext& ctx, bool subsampled, std::size_t scratch_bytes,
              std::vector<cudnnConvolutionFwdAlgoPerf_t>& results, std::vector<Candidate>& candidates,
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
  // A 1x1 convolution with strides and no pads (a ResNet shortcut's) can also run as a dense copy of
  // the pixels it reads and a stride-1 convolution on the copy. cuDNN's strided kernels for it fall
  // off at large batches: ResNet-34's first shortcut at 544x960, batch 32, ran a kernel without
  // tensor cores, 8x the time per image of batch 16's (issue 25). The search times both forms.
  bool can_subsample_ = false;
  bool patches_ = false;  // the copy holds patches (kernel == stride > 1) rather than pixels
  SubsampleGeometry subsample_;
  std::size_t subsampled_bytes_ = 0;  // the dense copy, rounded up to keep the scratch after it aligned
  cudnnTensorDescriptor_t dense_x_ = nullptr;
  cudnnConvolutionDescriptor_t dense_conv_ = nullptr;
  // A depthwise convolution (group == C, one filter each) in NHWC whose weights are plan-time
  // constants: fovea's kernel is a candidate beside cuDNN's algorithms.
  bool can_depthwise_ = false;
  DepthwiseGeometry depthwise_;
  DeviceMemory depthwise_weights_;  // [kH, kW, C]; kept only when the kernel is chosen
  // A 1x1 convolution in NHWC as a product (describe_gemm); kept only when it is chosen.
  bool can_gemm_ = false;
  std::unique_ptr<LtMatmul> gemm_;
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
  return describe_subsampled(x, window, groups, type);
}

Status ConvState::describe_subsampled(const Shape& x, const std::vector<ops::WindowDim>& window,
                                      std::int64_t groups, cudnnDataType_t type) {
  // Patches that neither overlap nor leave gaps, or single pixels at strides.
  const auto plain = [](const ops::WindowDim& d) {
    return (d.kernel == 1 || d.kernel == d.stride) && d.dilation == 1 && d.pad_begin == 0 && d.pad_end == 0;
  };
  patches_ = window.size() == 2 && (window[0].kernel > 1 || window[1].kernel > 1);
  can_subsample_ =
      channels_last_ && window.size() == 2 && std::all_of(window.begin(), window.end(), plain) &&
      std::any_of(window.begin(), window.end(), [](const ops::WindowDim& d) { return d.stride > 1; }) &&
      (!patches_ || groups == 1);  // patches run as a product only, which takes no groups
  if (!can_subsample_) {
    patches_ = false;
    return Status::ok();
  }
  const std::size_t pixel_bytes = static_cast<std::size_t>(x[1]) * data_type_size(dtype_);
  const std::size_t run_bytes = pixel_bytes * static_cast<std::size_t>(window[1].kernel);
  const std::size_t step_bytes = pixel_bytes * static_cast<std::size_t>(window[1].stride);
  const std::size_t input_row_bytes = pixel_bytes * static_cast<std::size_t>(window[1].in);
  subsample_.unit_bytes = 16;
  while (subsample_.unit_bytes > 1 &&
         (run_bytes | step_bytes | input_row_bytes) % static_cast<std::size_t>(subsample_.unit_bytes) != 0) {
    subsample_.unit_bytes /= 2;
  }
  const auto units = [&](std::size_t bytes) {
    return static_cast<int>(bytes / static_cast<std::size_t>(subsample_.unit_bytes));
  };
  subsample_.in_h = static_cast<int>(window[0].in);
  subsample_.out_h = static_cast<int>(window[0].out);
  subsample_.kernel_h = static_cast<int>(window[0].kernel);
  subsample_.stride_h = static_cast<int>(window[0].stride);
  subsample_.input_row_units = units(input_row_bytes);
  subsample_.step_units = units(step_bytes);
  subsample_.run_units = units(run_bytes);
  subsample_.patch_units = subsample_.kernel_h * subsample_.run_units;
  subsample_.row_units = static_cast<int>(window[1].out) * subsample_.patch_units;
  subsample_.rows = x[0] * window[0].out;
  subsampled_bytes_ =
      (static_cast<std::size_t>(subsample_.rows) * static_cast<std::size_t>(subsample_.row_units) *
           static_cast<std::size_t>(subsample_.unit_bytes) +
       255) /
      256 * 256;
  if (patches_) return Status::ok();
  const auto i = [](std::int64_t v) { return static_cast<int>(v); };
  FOVEA_CUDNN_TRY(cudnnCreateTensorDescriptor(&dense_x_));
  FOVEA_CUDNN_TRY(cudnnSetTensor4dDescriptor(dense_x_, CUDNN_TENSOR_NHWC, type, i(x[0]), i(x[1]),
                                             i(window[0].out), i(window[1].out)));
  FOVEA_CUDNN_TRY(cudnnCreateConvolutionDescriptor(&dense_conv_));
  return set_convolution(dense_conv_, ConvGeometry{{0, 0}, {1, 1}, {1, 1}}, groups, dtype_);
}

void ConvState::describe_depthwise(CudaKernelContext& ctx, const Shape& x, const Shape& w,
                                   const std::vector<ops::WindowDim>& window, std::int64_t groups) {
  const Tensor* weights = ctx.host_constant(kW);
  can_depthwise_ = channels_last_ && !padded_ && window.size() == 2 && groups == x[1] && w[0] == x[1] &&
                   w[1] == 1 && (dtype_ == DataType::kFloat16 || dtype_ == DataType::kFloat32) &&
                   weights != nullptr && weights->dtype() == dtype_;
  if (!can_depthwise_) return;
  const Shape y = nchw(ctx.output(0).shape());
  const auto i = [](std::int64_t v) { return static_cast<int>(v); };
  depthwise_ = DepthwiseGeometry{.batch = i(x[0]),
                                 .in_h = i(x[2]),
                                 .in_w = i(x[3]),
                                 .channels = i(x[1]),
                                 .out_h = i(y[2]),
                                 .out_w = i(y[3]),
                                 .kernel_h = i(window[0].kernel),
                                 .kernel_w = i(window[1].kernel),
                                 .stride_h = i(window[0].stride),
                                 .stride_w = i(window[1].stride),
                                 .dilation_h = i(window[0].dilation),
                                 .dilation_w = i(window[1].dilation),
                                 .pad_top = i(window[0].pad_begin),
                                 .pad_left = i(window[1].pad_begin)};
}

Status ConvState::upload_depthwise_weights(CudaKernelContext& ctx) {
  if (depthwise_weights_.get() != nullptr) return Status::ok();
  const std::vector<std::byte> by_tap = depthwise_weights_by_tap(*ctx.host_constant(kW));
  FOVEA_ASSIGN_OR_RETURN(depthwise_weights_, DeviceMemory::allocate(by_tap.size()));  // plan time
  FOVEA_CUDA_TRY(cudaMemcpyAsync(depthwise_weights_.get(), by_tap.data(), by_tap.size(),
                                 cudaMemcpyHostToDevice, ctx.stream()));
  // by_tap goes out of scope here: the copy must be done first.
  FOVEA_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
  return Status::ok();
}

Status ConvState::run_depthwise(CudaKernelContext& ctx) const {
  const DepthwiseOperands operands{
      .x = ctx.input(kX).raw(),
      .weights = depthwise_weights_.get(),
      .bias = ctx.has_input(kB) ? ctx.input(kB).raw() : nullptr,
      .residual = ctx.input_count() > kZ && ctx.has_input(kZ) ? ctx.input(kZ).raw() : nullptr,
      .y = ctx.output(0).raw()};
  return launch_depthwise_conv(dtype_, operands, depthwise_, activation_, ctx.stream());
}

// A 1x1 convolution without pads or dilation in NHWC is a product, Y[N*H*W, M] = X[N*H*W, C] W^T
// (strided: on the dense copy of the pixels it reads). On ResNet-50's 1x1 layers at batch 256,
// cuBLASLt's float16 GEMMs (bias and ReLU in their epilogue) took a third to a half of the time of
// the best algorithm cuDNN lists (bench/int8_paths_bench, H200, call 26), so the search times the
// product beside cuDNN's algorithms; in seven CNNs it won 150 of the 334 problems it was timed on
// (call 27). cuBLASLt adds the bias and the residual (as beta * C) and applies a ReLU; another
// activation takes fovea's epilogue pass after it.
void ConvState::describe_gemm(CudaKernelContext& ctx, const Shape& x,
                              const std::vector<ops::WindowDim>& window, std::int64_t groups) {
  const auto pointwise = [](const ops::WindowDim& d) {
    return d.kernel == 1 && d.stride == 1 && d.dilation == 1 && d.pad_begin == 0 && d.pad_end == 0;
  };
  if (!channels_last_ || padded_ || window.size() != 2 || groups != 1 ||
      !(can_subsample_ || std::all_of(window.begin(), window.end(), pointwise)) ||
      (dtype_ != DataType::kFloat16 && dtype_ != DataType::kFloat32)) {
    return;
  }
  const Shape y = nchw(ctx.output(0).shape());
  // A patch convolution's reduction runs over the patch: [kH, kW, C], the weights' own order.
  const MatmulShape shape{
      .m = y[0] * y[2] * y[3], .n = y[1], .k = x[1] * window[0].kernel * window[1].kernel, .trans_b = true};
  const LtEpilogue epilogue{.bias = ctx.has_input(kB) ? ctx.input(kB).raw() : nullptr,
                            .relu = activation_.kind == ops::Activation::Kind::kRelu};
  auto gemm = std::make_unique<LtMatmul>();
  if (!gemm->create(ctx, dtype_, shape, epilogue).is_ok()) return;  // no cuBLASLt algorithm: cuDNN's only
  gemm_ = std::move(gemm);
  can_gemm_ = true;
}

LtCall ConvState::gemm_call(CudaKernelContext& ctx) const {
  const auto [x, scratch] = operands(ctx);
  const bool residual = ctx.input_count() > kZ && ctx.has_input(kZ);
  return LtCall{.a = x,
                .b = ctx.input(kW).raw(),
                .y = ctx.output(0).raw(),
                .beta = residual ? 1.0f : 0.0f,
                .c = residual ? ctx.input(kZ).raw() : nullptr,
                .scratch = scratch,
                .scratch_bytes = kLtWorkspaceBytes};
}

Status ConvState::run_gemm(CudaKernelContext& ctx) const {
  FOVEA_TRY(gemm_->run(ctx, gemm_call(ctx)));
  const ops::Activation::Kind kind = activation_.kind;
  if (kind == ops::Activation::Kind::kNone || kind == ops::Activation::Kind::kRelu) return Status::ok();
  return launch_epilogue(ctx, nullptr, nullptr);
}

bool acceptable(const cudnnConvolutionFwdAlgoPerf_t& perf, DataType dtype, std::size_t limit) {
  return perf.status == CUDNN_STATUS_SUCCESS && perf.memory <= limit &&
         math_type_allowed(perf.mathType, dtype);
}

// The most scratch any of cuDNN's algorithms for this problem (or its stride-1 form on the dense
// copy, a strided 1x1 convolution's) needs, in the descriptor's math type (tensor cores for float16), within
// `limit`.
Result<std::size_t> ConvState::largest_workspace(CudaKernelContext& ctx, std::size_t limit) const {
  std::size_t largest = 0;
  for (const bool subsampled : {false, true}) {
    if (subsampled && !cudnn_on_dense()) continue;
    for (int algo = 0; algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++algo) {
      std::size_t bytes = 0;
      const cudnnStatus_t status = cudnnGetConvolutionForwardWorkspaceSize(
          ctx.libraries().cudnn, subsampled ? dense_x_ : x_, w_, subsampled ? dense_conv_ : conv_, y_,
          static_cast<cudnnConvolutionFwdAlgo_t>(algo), &bytes);
      if (status == CUDNN_STATUS_NOT_SUPPORTED) continue;  // no such algorithm for this problem
      FOVEA_CUDNN_TRY(status);
      if (bytes <= limit) largest = std::max(largest, bytes);
    }
  }
  return largest;
}

Status ConvState::find(CudaKernelContext& ctx, bool subsampled, std::size_t scratch_bytes,
                       std::vector<cudnnConvolutionFwdAlgoPerf_t>& results,
                       std::vector<Candidate>& candidates, std::string& report) {
  std::byte* workspace = static_cast<std::byte*>(ctx.workspace());
  const std::size_t front = padded_ ? padded_bytes_ : subsampled_bytes_;
  const void* x = padded_ || subsampled ? workspace : ctx.input(kX).raw();
  int returned = 0;
  FOVEA_CUDNN_TRY(cudnnFindConvolutionForwardAlgorithmEx(
      ctx.libraries().cudnn, subsampled ? dense_x_ : x_, x, w_, ctx.input(kW).raw(),
      subsampled ? dense_conv_ : conv_, y_, ctx.output(0).raw(), static_cast<int>(results.size()), &returned,
      results.data(), workspace + front, scratch_bytes));
  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& result = results[static_cast<std::size_t>(i)];
    if (acceptable(result, dtype_, scratch_bytes)) {
      candidates.push_back(Candidate{&result, subsampled});
    } else if (result.status != CUDNN_STATUS_NOT_SUPPORTED) {
      report += "algo " + std::to_string(result.algo) + " math " + std::to_string(result.mathType) +
                (subsampled ? " subsampled" : "") + ": left out (" + cudnnGetErrorString(result.status) +
                ", needs " + std::to_string(result.memory >> 20) + " of " +
                std::to_string(scratch_bytes >> 20) + " MiB)\n";
    }
  }
  return Status::ok();
}

Status ConvState::choose_algorithm(CudaKernelContext& ctx, const std::string& key, std::size_t limit) {
  ConvAlgorithmCache& cache = ConvAlgorithmCache::instance();
  // (A cached product whose plan cuBLASLt now refuses is searched again.)
  // (A cached cuDNN algorithm on a dense copy cuDNN is not given, a patch convolution's, too.)
  if (auto cached = cache.find(key);
      cached && (!cached->gemm || can_gemm_) && (cached->gemm || !cached->subsampled || cudnn_on_dense())) {
    algorithm_ = *cached;
  } else {
    int count = 0;
    FOVEA_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithmMaxCount(ctx.libraries().cudnn, &count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> results(static_cast<std::size_t>(count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> dense_results(static_cast<std::size_t>(count));
    std::vector<Candidate> candidates;
    std::string report;  // what was left out and why, then each candidate's timings
    bool complete = true;
    const bool search = cache.search_allowed();
    const auto started = std::chrono::steady_clock::now();
    if (search) {
      FOVEA_ASSIGN_OR_RETURN(std::size_t wanted, largest_workspace(ctx, limit));
      if (can_gemm_) wanted = std::max(wanted, kLtWorkspaceBytes);
      FOVEA_ASSIGN_OR_RETURN(
          const SearchScratch scratch,
          reserve_search_scratch(ctx, padded_ ? padded_bytes_ : subsampled_bytes_, wanted));
      complete = scratch.complete;
      if (padded_) FOVEA_TRY(pad(ctx, ctx.workspace()));
      FOVEA_TRY(find(ctx, false, scratch.bytes, results, candidates, report));
      if (cudnn_on_dense()) {
        FOVEA_TRY(subsample(ctx, ctx.workspace()));
        FOVEA_TRY(find(ctx, true, scratch.bytes, dense_results, candidates, report));
      }
    } else {
      int returned = 0;
      FOVEA_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(ctx.libraries().cudnn, x_, w_, conv_, y_, count,
                                                             &returned, results.data()));
      for (int i = 0; i < returned; ++i) {
        if (acceptable(results[static_cast<std::size_t>(i)], dtype_, limit)) {
          candidates.push_back(Candidate{&results[static_cast<std::size_t>(i)], false});
        }
      }
    }
    if (candidates.empty() && !can_depthwise_) {
      return ctx.error(StatusCode::kUnsupported, "cuDNN has no convolution algorithm for this problem");
    }
    if (can_depthwise_ && !search) {
      algorithm_ = ConvAlgorithm{.depthwise = true};  // without a search: the kernel made for the problem
    } else if (!candidates.empty()) {
      const cudnnConvolutionFwdAlgoPerf_t* first = candidates.front().perf;
      algorithm_ = ConvAlgorithm{.algo = static_cast<int>(first->algo),
                                 .math_type = static_cast<int>(first->mathType),
                                 .workspace_bytes = first->memory,
                                 .fused = cudnn_epilogue_};
    }
    if (search) {
      FOVEA_ASSIGN_OR_RETURN(algorithm_, fastest_form(ctx, candidates, report));
      log_conv_search(ctx.node().name, key, report);
      cache.charge_search(std::chrono::steady_clock::now() - started);
    }
    // A heuristic pick is not cached: the next process, with a budget of its own, searches it.
    if (search && complete) cache.insert(key, algorithm_);
  }
  FOVEA_CUDNN_TRY(
      cudnnSetConvolutionMathType(conv_desc(), static_cast<cudnnMathType_t>(algorithm_.math_type)));
  return Status::ok();
}

Result<ConvAlgorithm> ConvState::fastest_form(CudaKernelContext& ctx,
                                              const std::vector<Candidate>& candidates, std::string& report) {
  // As run() does, but for the padding (the same for every candidate): the dense copy is part of the
  // subsampled form's cost.
  const auto run_form = [&]() -> Status {
    if (algorithm_.subsampled) FOVEA_TRY(subsample(ctx, ctx.workspace()));
    if (algorithm_.gemm) return run_gemm(ctx);
    const auto [x, scratch] = operands(ctx);
    if (!algorithm_.fused) return run_plain(ctx, x, scratch);
    FOVEA_CUDNN_TRY(run_fused(ctx, x, scratch));
    return Status::ok();
  };
  // Find has timed every candidate once, eagerly. One that took more than twice the fastest's time
  // plus kFindNoiseMs cannot win and is not replayed: cuDNN's kernels without tensor cores take
  // 0.3-1.2 s per call on FCN-ResNet101's dilated 3x3 convolutions at batches 4-16, and replaying
  // them spent the whole search budget, leaving the larger batches to cuDNN's heuristic (issue 25).
  // Find's single eager call is no measure of small kernels: on the H200 it read up to 0.41 ms for
  // tensor-core kernels that then replayed in 5-15 us and won (SSDLite320, U-Net and SSD300 at
  // batches 1-64), 0.32 ms beyond twice the fastest's Find time; a first margin of 0.1 ms pruned
  // them and halved SSDLite320's items/s. kFindNoiseMs is 30 times that, and still far under the
  // candidates worth skipping; replaying one that Find put under it costs tens of ms at most.
  constexpr float kFindNoiseMs = 10.0f;
  std::optional<ConvAlgorithm> best;
  float best_ms = 0.0f;
  if (can_depthwise_) {
    algorithm_ = ConvAlgorithm{.depthwise = true};
    FOVEA_TRY(upload_depthwise_weights(ctx));
    FOVEA_TRY(run_depthwise(ctx));
    FOVEA_ASSIGN_OR_RETURN(best_ms, shortest_run_ms(ctx, [&] { return run_depthwise(ctx); }));
    best = algorithm_;
    report += "fovea's depthwise kernel: measured " + std::to_string(best_ms) + " ms\n";
  }
  if (can_gemm_) {
    algorithm_ =
        ConvAlgorithm{.workspace_bytes = kLtWorkspaceBytes, .subsampled = can_subsample_, .gemm = true};
    report += std::string("cuBLASLt GEMM") + (can_subsample_ ? " subsampled" : "") + ": ";
    if (gemm_->choose_fastest(ctx, gemm_call(ctx)).is_ok() && run_form().is_ok()) {
      FOVEA_ASSIGN_OR_RETURN(const float ms, shortest_run_ms(ctx, run_form));
      report += "measured " + std::to_string(ms) + " ms\n";
      if (!best || ms < best_ms) {
        best = algorithm_;
        best_ms = ms;
      }
    } else {
      report += "does not run\n";  // as a cuDNN algorithm that fails: left out
    }
  }
  float fastest_find = candidates.empty() ? 0.0f : candidates.front().perf->time;
  for (const Candidate& candidate : candidates) fastest_find = std::min(fastest_find, candidate.perf->time);
  for (const Candidate& candidate : candidates) {
    if (candidate.perf->time > 2.0f * fastest_find + kFindNoiseMs) {
      report += "algo " + std::to_string(candidate.perf->algo) + " math " +
                std::to_string(candidate.perf->mathType) + (candidate.subsampled ? " subsampled" : "") +
                ": Find " + std::to_string(candidate.perf->time) + " ms, not replayed\n";
      continue;
    }
    for (const bool fused : {false, true}) {
      if (fused && !cudnn_epilogue_) continue;
      algorithm_ = ConvAlgorithm{.algo = static_cast<int>(candidate.perf->algo),
                                 .math_type = static_cast<int>(candidate.perf->mathType),
                                 .workspace_bytes = candidate.perf->memory,
                                 .fused = fused,
                                 .subsampled = candidate.subsampled};
      FOVEA_CUDNN_TRY(cudnnSetConvolutionMathType(conv_desc(), candidate.perf->mathType));
      report += "algo " + std::to_string(candidate.perf->algo) + " math " +
                std::to_string(candidate.perf->mathType) + (candidate.subsampled ? " subsampled" : "") +
                (fused ? " fused" : " plain") + ": Find " + std::to_string(candidate.perf->time) + " ms, ";
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
  describe_depthwise(ctx, x, w, window, groups);
  describe_gemm(ctx, x, window, groups);
  cudnn_epilogue_ = dtype_ != DataType::kFloat64 && activation.kind == ops::Activation::Kind::kRelu;
  if (cudnn_epilogue_) FOVEA_TRY(describe_fused_epilogue(ctx));
  FOVEA_ASSIGN_OR_RETURN(const std::size_t limit, algorithm_workspace_limit());
  // A ReLU convolution's entry also says whether it runs fused: its own key.
  const std::string key = conv_problem_key(ctx.node(), dtype_, x, w, window, groups, limit) +
                          (channels_last_ ? "|nhwc" : "") + (cudnn_epilogue_ ? "|relu" : "") +
                          (can_depthwise_ ? "|depthwise" : "") + (can_gemm_ ? "|gemm" : "");
  FOVEA_TRY(choose_algorithm(ctx, key, limit));
  if (!algorithm_.gemm) gemm_.reset();  // timed, not chosen
  // A product chosen from the cache (or without a search) takes its algorithm from the cache's entry
  // for the product, or times it now: in scratch that holds the dense copy and cuBLASLt's own.
  if (algorithm_.gemm && ctx.reserve_workspace(front_bytes() + kLtWorkspaceBytes)) {
    FOVEA_TRY(gemm_->choose_fastest(ctx, gemm_call(ctx)));
  }
  if (!algorithm_.depthwise) {
    depthwise_weights_ = DeviceMemory();  // timed, not chosen
    return front_bytes() + algorithm_.workspace_bytes;
  }
  FOVEA_TRY(upload_depthwise_weights(ctx));
  return 0;
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

Status ConvState::subsample(CudaKernelContext& ctx, void* dense) const {
  constexpr int kMaxGridRows = 65535;  // gridDim.y's limit
  const dim3 grid(static_cast<unsigned>((subsample_.row_units + kBlockSize - 1) / kBlockSize),
                  static_cast<unsigned>(std::min<std::int64_t>(subsample_.rows, kMaxGridRows)));
  const void* x = ctx.input(kX).raw();
  switch (subsample_.unit_bytes) {
    case 16:
      subsample_kernel<<<grid, kBlockSize, 0, ctx.stream()>>>(static_cast<const uint4*>(x),
                                                              static_cast<uint4*>(dense), subsample_);
      break;
    case 8:
      subsample_kernel<<<grid, kBlockSize, 0, ctx.stream()>>>(static_cast<const uint2*>(x),
                                                              static_cast<uint2*>(dense), subsample_);
      break;
    case 4:
      subsample_kernel<<<grid, kBlockSize, 0, ctx.stream()>>>(static_cast<const std::uint32_t*>(x),
                                                              static_cast<std::uint32_t*>(dense), subsample_);
      break;
    case 2:
      subsample_kernel<<<grid, kBlockSize, 0, ctx.stream()>>>(static_cast<const std::uint16_t*>(x),
                                                              static_cast<std::uint16_t*>(dense), subsample_);
      break;
    default:
      subsample_kernel<<<grid, kBlockSize, 0, ctx.stream()>>>(static_cast<const std::uint8_t*>(x),
                                                              static_cast<std::uint8_t*>(dense), subsample_);
  }
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

std::pair<const void*, void*> ConvState::operands(CudaKernelContext& ctx) const {
  std::byte* workspace = static_cast<std::byte*>(ctx.workspace());
  const void* x = padded_ || algorithm_.subsampled ? workspace : ctx.input(kX).raw();
  return {x, workspace + front_bytes()};
}

cudnnStatus_t ConvState::run_fused(CudaKernelContext& ctx, const void* x, void* scratch) const {
  // cuDNN reads alpha and beta as float for half and float data (double is never fused).
  const float one = 1.0f, zero = 0.0f;
  const bool residual = ctx.has_input(kZ);
  const void* bias = ctx.has_input(kB) ? ctx.input(kB).raw() : zero_bias_.get();
  void* y = ctx.output(0).raw();
  return cudnnConvolutionBiasActivationForward(
      ctx.libraries().cudnn, &one, x_desc(), x, w_, ctx.input(kW).raw(), conv_desc(),
      static_cast<cudnnConvolutionFwdAlgo_t>(algorithm_.algo), scratch, algorithm_.workspace_bytes,
      residual ? &one : &zero, y_, residual ? ctx.input(kZ).raw() : y, bias_, bias, relu_, y_, y);
}

Status ConvState::run(CudaKernelContext& ctx) const {
  if (algorithm_.depthwise) return run_depthwise(ctx);
  if (padded_) FOVEA_TRY(pad(ctx, ctx.workspace()));
  if (algorithm_.subsampled) FOVEA_TRY(subsample(ctx, ctx.workspace()));
  if (algorithm_.gemm) return run_gemm(ctx);
  const auto [x, scratch] = operands(ctx);
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
  FOVEA_CUDNN_TRY(cudnnConvolutionForward(ctx.libraries().cudnn, alpha, x_desc(), x, w_, ctx.input(kW).raw(),
                                          conv_desc(), algo, scratch, algorithm_.workspace_bytes, beta, y_,
                                          y.raw()));
  const bool has_bias = ctx.has_input(kB);
  const bool has_residual = ctx.input_count() > kZ && ctx.has_input(kZ);
  if (!has_bias && !has_residual && activation_.kind == ops::Activation::Kind::kNone) return Status::ok();
  return launch_epilogue(ctx, has_bias ? ctx.input(kB).raw() : nullptr,
                         has_residual ? ctx.input(kZ).raw() : nullptr);
}

Status ConvState::launch_epilogue(CudaKernelContext& ctx, const void* bias, const void* residual) const {
  Tensor& y = ctx.output(0);
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
            static_cast<T*>(y.raw()), static_cast<const T*>(bias), static_cast<const T*>(residual), params);
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
