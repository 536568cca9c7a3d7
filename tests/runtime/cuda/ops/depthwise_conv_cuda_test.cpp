// fovea's depthwise kernel (runtime/cuda/depthwise_conv.h) against the CPU reference FusedConv in
// NHWC. Conv runs it only where it times faster than cuDNN's algorithms, so the kernel is also
// launched directly here, on every path: 16-byte vectors and single channels, strides, dilations,
// pads wider than the image, each epilogue part.
#include <string>
#include <string_view>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "runtime/cuda/cuda_op_test_util.h"
#include "runtime/cuda/depthwise_conv.h"

namespace fovea::runtime::testing {
namespace {

using Ints = std::vector<std::int64_t>;
constexpr DataType kF32 = DataType::kFloat32;

struct Case {
  int batch, height, width, channels, kernel, stride, dilation, pad;
  const char* activation;
  bool bias, residual;
};

// ConvNeXt's 7x7 (24 channels: whole vectors in both precisions); odd channels with a stride;
// a dilation; 12 channels (float32 vectors, float16 single channels); a window wider than the image;
// MobileNet-V2's stride-2 3x3 with ReLU6 (Clip 0..6) on whole vectors; EfficientNet's stride-2 5x5.
// The 3x3, 5x5 and 7x7 windows at stride 1 and 2 take the kernel's register path, the dilated one
// its generic loop.
constexpr Case kCases[] = {
    {2, 13, 11, 24, 7, 1, 1, 3, "", true, true},      {3, 9, 14, 5, 3, 2, 1, 1, "Relu", true, false},
    {1, 17, 10, 16, 5, 1, 2, 4, "Silu", false, true}, {2, 7, 7, 12, 3, 1, 1, 0, "HardSwish", true, false},
    {1, 6, 5, 8, 7, 1, 1, 3, "", false, false},       {2, 15, 17, 32, 3, 2, 1, 1, "Clip", true, false},
    {1, 11, 13, 40, 5, 2, 1, 2, "Silu", true, false},
};

int out_size(int in, const Case& c) {
  return (in + 2 * c.pad - c.dilation * (c.kernel - 1) - 1) / c.stride + 1;
}

Node depthwise_node(const Case& c) {
  NodeBuilder node("FusedConv");
  node.domain("fovea")
      .inputs(4)
      .attr("activation", c.activation)
      .attr("group", c.channels)
      .attr("strides", Ints{c.stride, c.stride})
      .attr("dilations", Ints{c.dilation, c.dilation})
      .attr("pads", Ints{c.pad, c.pad, c.pad, c.pad})
      .attr("channels_last", 1);
  if (std::string_view(c.activation) == "Clip")
    node.attr("activation_min", 0.0f).attr("activation_max", 6.0f);
  if (!c.bias) node.omit_input(2);
  if (!c.residual) node.omit_input(3);
  return node.build();
}

// The case's inputs, x [N, H, W, C], w [C, k, k, 1], b [C], z [N, OH, OW, C], in float32.
std::vector<Tensor> inputs_of(const Case& c, std::uint32_t seed) {
  const Shape z{c.batch, out_size(c.height, c), out_size(c.width, c), c.channels};
  return {random_tensor(kF32, {c.batch, c.height, c.width, c.channels}, seed),
          random_tensor(kF32, {c.channels, c.kernel, c.kernel, 1}, seed + 1),
          c.bias ? random_tensor(kF32, {c.channels}, seed + 2) : Tensor(),
          c.residual ? random_tensor(kF32, z, seed + 3) : Tensor()};
}

DeviceMemory upload(const void* data, std::size_t bytes) {
  auto memory = DeviceMemory::allocate(bytes);
  EXPECT_TRUE(memory.is_ok());
  EXPECT_EQ(cudaMemcpy(memory->get(), data, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  return std::move(memory).value();
}

DeviceMemory upload(const Tensor& t) {
  return t.empty_storage() ? DeviceMemory()
                           : upload(t.raw(), static_cast<std::size_t>(t.numel()) * data_type_size(t.dtype()));
}

// The kernel's output for the case's inputs (already in the precision's dtype).
Tensor run_kernel(const Case& c, const std::vector<Tensor>& in, const ops::Activation& activation) {
  const DataType dtype = in[0].dtype();
  const std::vector<std::byte> by_tap = cuda::depthwise_weights_by_tap(in[1]);
  DeviceMemory x = upload(in[0]), w = upload(by_tap.data(), by_tap.size()), b = upload(in[2]),
               z = upload(in[3]);
  Tensor y = Tensor::allocate(dtype, {c.batch, out_size(c.height, c), out_size(c.width, c), c.channels});
  auto y_device = DeviceMemory::allocate(static_cast<std::size_t>(y.numel()) * data_type_size(dtype));
  EXPECT_TRUE(y_device.is_ok());
  const cuda::DepthwiseGeometry geometry{.batch = c.batch,
                                         .in_h = c.height,
                                         .in_w = c.width,
                                         .channels = c.channels,
                                         .out_h = out_size(c.height, c),
                                         .out_w = out_size(c.width, c),
                                         .kernel_h = c.kernel,
                                         .kernel_w = c.kernel,
                                         .stride_h = c.stride,
                                         .stride_w = c.stride,
                                         .dilation_h = c.dilation,
                                         .dilation_w = c.dilation,
                                         .pad_top = c.pad,
                                         .pad_left = c.pad};
  const cuda::DepthwiseOperands operands{
      .x = x.get(), .weights = w.get(), .bias = b.get(), .residual = z.get(), .y = y_device->get()};
  const Status launched = cuda::launch_depthwise_conv(dtype, operands, geometry, activation, nullptr);
  EXPECT_TRUE(launched.is_ok()) << launched.to_string();
  EXPECT_EQ(cudaMemcpy(y.raw(), y_device->get(), static_cast<std::size_t>(y.numel()) * data_type_size(dtype),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  return y;
}

TEST(CudaDepthwiseKernel, MatchesTheCpuConvolution) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 1;
  for (const Case& c : kCases) {
    const Node node = depthwise_node(c);
    std::vector<Tensor> inputs = inputs_of(c, seed);
    seed += 4;
    // The activation's attributes only: the input types and values are not read.
    auto activation =
        ops::read_activation(InferContext(nullptr, node, std::vector<ValueType>(node.inputs.size()),
                                          std::vector<const Tensor*>(node.inputs.size(), nullptr)));
    ASSERT_TRUE(activation.is_ok()) << activation.status().to_string();
    for (Precision p : kPrecisions) {
      std::vector<Tensor> device_inputs = inputs;
      std::vector<Tensor> cpu_inputs = inputs;
      if (p == Precision::kFloat16) {
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          if (inputs[i].empty_storage()) continue;
          device_inputs[i] = to_float16(inputs[i]);
          cpu_inputs[i] = to_float32(device_inputs[i]);
        }
      }
      const Tensor expected = run_node(node, cpu_inputs)[0];
      EXPECT_TRUE(outputs_within(run_kernel(c, device_inputs, *activation), expected,
                                 cuda_tolerance(p, Accuracy::kAccumulating)))
          << c.channels << " channels, kernel " << c.kernel << ", " << precision_name(p);
    }
  }
}

// Through Conv, with the weights a plan-time constant as in a plan: whichever of cuDNN's algorithms
// and fovea's kernel times faster, the result is the convolution's.
TEST(CudaDepthwiseKernel, ConvWithConstantWeightsMatchesTheCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 100;
  for (const Case& c : kCases) {
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(
          cuda_matches_cpu(depthwise_node(c), inputs_of(c, seed),
                           {.precision = p, .constant_inputs = {1}, .accuracy = Accuracy::kAccumulating}))
          << c.channels << " channels, kernel " << c.kernel;
    }
    seed += 4;
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
