// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv as one problem, shared by the CPU
// reference (integer_linear.cpp) and the CUDA kernel (cuda/ops/integer_linear.cu): a batch of int32
// products Y[z] = (A[z] - a_zero_point) (B[z] - b_zero_point), each element then written as int32
// (the *Integer ops) or requantized to 8 bits (the QLinear ops).
//
//   op             | A, B (GEMM operands)       | per-row / per-column parameters | output
//   MatMulInteger  | a, b (numpy matmul batch)  | a_zero_point [M], b_zero_point [N] | int32
//   QLinearMatMul  | a, b                       | + a_scale [M], b_scale [N]        | y_zero_point's dtype
//   ConvInteger    | w, im2col(x) per group     | w_zero_point [channels]           | int32
//   QLinearConv    | w, im2col(x) per group     | + w_scale, bias [channels]        | y_zero_point's dtype
//
// Operands are int8 or uint8 in any mix; each zero point has its operand's dtype. Scales are float32,
// one for all or one per row (per output channel) or column. The arithmetic follows ONNX's reference
// implementation bit for bit: the multiplier is float32 (in_scale * w_scale / y_scale, two roundings)
// and the output is rint(double(acc) * multiplier + y_zero_point) in float64, saturated.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "runtime/op.h"
#include "runtime/ops/conv_util.h"

namespace fovea::runtime::ops {

// A sum of K products of two 8-bit values less their zero points (each at most 255 in magnitude)
// fits int32 while K * 255 * 255 <= 2^31 - 1. Deeper products are refused rather than wrapped: the
// int32 accumulation both kernels do would silently lose the true sum.
inline constexpr std::int64_t kMaxIntegerDepth = 33025;

FOVEA_HD std::int32_t widen_8bit(std::uint8_t byte, bool is_signed) {
  return is_signed ? static_cast<std::int32_t>(static_cast<std::int8_t>(byte))
                   : static_cast<std::int32_t>(byte);
}

// An int8 or uint8 tensor seen as bytes (host or device memory), with its zero point: absent (0), one
// for all (stride 0) or one per row, column or channel (stride 1).
struct QuantizedOperand {
  const std::uint8_t* data = nullptr;
  bool is_signed = false;
  const std::uint8_t* zero_point = nullptr;
  std::int64_t zero_point_stride = 0;

  FOVEA_HD std::int32_t at(std::int64_t i) const { return widen_8bit(data[i], is_signed); }
  FOVEA_HD std::int32_t zero(std::int64_t index) const {
    return zero_point == nullptr ? 0 : widen_8bit(zero_point[index * zero_point_stride], is_signed);
  }
};

// double(value) * multiplier + offset with two roundings: nvcc would fuse them into one FMA, and the
// reference (numpy in float64) rounds twice.
FOVEA_HD double multiply_add_rn(double value, double multiplier, double offset) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(__dmul_rn(value, multiplier), offset);
#else
  return value * multiplier + offset;
#endif
}

// An int32 accumulator as an 8-bit output: rounded half to even, saturated (NaN from a scale that
// was not constant, so never validated, gives the lowest value instead of undefined behaviour).
FOVEA_HD std::int32_t requantize(std::int32_t acc, float multiplier, std::int32_t zero_point,
                                 bool is_signed) {
  const double low = is_signed ? -128.0 : 0.0;
  const double high = is_signed ? 127.0 : 255.0;
  const double rounded =
      nearbyint(multiply_add_rn(static_cast<double>(acc), static_cast<double>(multiplier), zero_point));
  return static_cast<std::int32_t>(rounded >= low ? (rounded <= high ? rounded : high) : low);
}

// Where a product's elements go: int32 as they are (plus the bias), or requantized to int8/uint8.
struct IntegerOutput {
  void* data = nullptr;
  bool requantized = false;            // false: int32 output; the fields below are unused
  const std::int32_t* bias = nullptr;  // per row (QLinearConv's B), nullptr when absent
  const float* row_scale = nullptr;    // A's scale: per row (stride 1) or one (stride 0)
  std::int64_t row_scale_stride = 0;
  const float* column_scale = nullptr;  // B's scale
  std::int64_t column_scale_stride = 0;
  const float* y_scale = nullptr;
  const std::uint8_t* y_zero_point = nullptr;
  bool y_signed = false;

  // Output element `index`, whose per-row parameters are at `row` and per-column ones at `column`.
  FOVEA_HD void store(std::int64_t index, std::int32_t acc, std::int64_t row, std::int64_t column) const {
    if (bias != nullptr) {
      // numpy adds the bias in int32 and wraps; so do we, without signed overflow.
      acc =
          static_cast<std::int32_t>(static_cast<std::uint32_t>(acc) + static_cast<std::uint32_t>(bias[row]));
    }
    if (!requantized) {
      static_cast<std::int32_t*>(data)[index] = acc;
      return;
    }
    const float multiplier = div_rn(
        mul_rn(row_scale[row * row_scale_stride], column_scale[column * column_scale_stride]), *y_scale);
    const std::int32_t value = requantize(acc, multiplier, widen_8bit(*y_zero_point, y_signed), y_signed);
    static_cast<std::uint8_t*>(data)[index] = static_cast<std::uint8_t>(value);
  }
};

// Where one op keeps its inputs, in ONNX's terms: `x` is MatMul's a or Conv's x, `w` is b or w; -1
// where the op has no such input. `names` are ONNX's input names, for error messages.
struct IntegerLinearInputs {
  int x = 0, x_scale = -1, x_zero_point = -1;
  int w = 1, w_scale = -1, w_zero_point = -1;
  int y_scale = -1, y_zero_point = -1, bias = -1;
  bool convolution = false;
  const char* const* names = nullptr;
};

// Shape inference and validation of any of the four ops: operand and parameter dtypes and shapes,
// constant scales (positive and finite), the depth limit; the output dims come from the float op's
// own inference (MatMul or Conv) on the two operands, so no shape logic is repeated.
Status infer_integer_linear(InferContext& ctx, const IntegerLinearInputs& in);

// One batch entry z of a product is [rows, columns] = [rows, depth] x [depth, columns].
struct IntegerProblem {
  std::int64_t batch = 1;
  std::int64_t rows = 0;
  std::int64_t columns = 0;
  std::int64_t depth = 0;
};

// The MatMul problem on concrete shapes (numpy promotion of 1-D operands): entry z of the output's
// batch dims reads the A and B matrices that `a_batch` and `b_batch` broadcast to it.
struct MatmulGeometry {
  IntegerProblem problem;
  Shape batch;    // the output's batch dims
  Shape a_batch;  // a's own batch dims (broadcast to `batch`)
  Shape b_batch;
};
MatmulGeometry matmul_geometry(const Shape& a, const Shape& b);

// Convolutions of up to three spatial dims (Conv1D/2D/3D): the input windows read on the fly, as
// the B operand of the product (implicit im2col), by the CPU reference and the CUDA kernel alike.
inline constexpr int kMaxIntegerConvRank = 3;

struct Im2col {
  int rank = 0;  // spatial dims
  std::int64_t in[kMaxIntegerConvRank] = {};
  std::int64_t out[kMaxIntegerConvRank] = {};
  std::int64_t kernel[kMaxIntegerConvRank] = {};
  std::int64_t stride[kMaxIntegerConvRank] = {};
  std::int64_t dilation[kMaxIntegerConvRank] = {};
  std::int64_t pad_begin[kMaxIntegerConvRank] = {};
  std::int64_t channels = 0;  // input channels, all groups
  std::int64_t group_in = 0;  // input channels per group
  std::int64_t in_plane = 1;  // input elements per channel
  std::int64_t kernel_size = 1;

  // Where row k (the group's input channel k / kernel_size, kernel tap k % kernel_size) and column
  // `position` (an output position) of image `image`, group `group` read x: false in the padding,
  // which is zero after the zero point's subtraction (ONNX subtracts it before padding).
  FOVEA_HD bool source(std::int64_t image, std::int64_t group, std::int64_t k, std::int64_t position,
                       std::int64_t* offset) const {
    std::int64_t tap = k % kernel_size;
    std::int64_t spatial = 0;
    std::int64_t plane_stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const std::int64_t i = (position % out[d]) * stride[d] - pad_begin[d] + (tap % kernel[d]) * dilation[d];
      if (i < 0 || i >= in[d]) return false;
      position /= out[d];
      tap /= kernel[d];
      spatial += i * plane_stride;
      plane_stride *= in[d];
    }
    *offset = (image * channels + group * group_in + k / kernel_size) * in_plane + spatial;
    return true;
  }
};

// The Conv problem: z = image * groups + group, rows = output channels of a group, columns = output
// positions, depth = input channels of a group times the kernel window.
struct ConvGeometry {
  IntegerProblem problem;
  std::int64_t groups = 1;
  Im2col window;
};
Result<ConvGeometry> conv_geometry(const InferContext& ctx, const Shape& x, const Shape& w);

// The operands and output of a node's tensors (host or device memory alike). For a convolution,
// GEMM A is w (zero point per output channel) and B is x (one zero point).
struct IntegerOperands {
  QuantizedOperand a;
  QuantizedOperand b;
  IntegerOutput output;
};
template <typename TensorAt>
IntegerOperands integer_operands(const IntegerLinearInputs& in, TensorAt&& input, Tensor& y) {
  const auto operand = [&](int data, int zero_point) {
    const Tensor* zp = zero_point >= 0 ? input(zero_point) : nullptr;
    return QuantizedOperand{
        .data = static_cast<const std::uint8_t*>(input(data)->raw()),
        .is_signed = input(data)->dtype() == DataType::kInt8,
        .zero_point = zp != nullptr ? static_cast<const std::uint8_t*>(zp->raw()) : nullptr,
        .zero_point_stride = zp != nullptr && zp->numel() > 1 ? 1 : 0};
  };
  const auto scale = [&](int i) { return i >= 0 ? input(i) : nullptr; };
  const QuantizedOperand x = operand(in.x, in.x_zero_point);
  const QuantizedOperand w = operand(in.w, in.w_zero_point);
  const Tensor* x_scale = scale(in.x_scale);
  const Tensor* w_scale = scale(in.w_scale);
  const Tensor* row_scale = in.convolution ? w_scale : x_scale;
  const Tensor* column_scale = in.convolution ? x_scale : w_scale;
  IntegerOutput output{.data = y.raw(), .requantized = y.dtype() != DataType::kInt32};
  if (const Tensor* bias = in.bias >= 0 ? input(in.bias) : nullptr; bias != nullptr) {
    output.bias = bias->data<std::int32_t>();
  }
  if (output.requantized) {
    output.row_scale = row_scale->data<float>();
    output.row_scale_stride = row_scale->numel() > 1 ? 1 : 0;
    output.column_scale = column_scale->data<float>();
    output.column_scale_stride = column_scale->numel() > 1 ? 1 : 0;
    output.y_scale = static_cast<const float*>(input(in.y_scale)->raw());
    output.y_zero_point = static_cast<const std::uint8_t*>(input(in.y_zero_point)->raw());
    output.y_signed = y.dtype() == DataType::kInt8;
  }
  return in.convolution ? IntegerOperands{w, x, output} : IntegerOperands{x, w, output};
}

// The layouts of the four ops.
extern const IntegerLinearInputs kMatMulIntegerInputs;
extern const IntegerLinearInputs kConvIntegerInputs;
extern const IntegerLinearInputs kQLinearMatMulInputs;
extern const IntegerLinearInputs kQLinearConvInputs;

}  // namespace fovea::runtime::ops
