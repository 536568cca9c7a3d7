// The graph rewrite behind Precision::kInt8: a float model, once optimized (batch norms folded,
// epilogues fused), gets explicit quantization, the form a QDQ model exported by ONNX Runtime's or
// PyTorch's quantization tools has:
//
//   x ─ QuantizeLinear(s_x) ─ DequantizeLinear(s_x) ─┐
//   W_int8 ─ DequantizeLinear(s_w[c], axis) ─────────┴─ Conv / fovea.FusedConv / Gemm / MatMul ─ y
//
// Activations are quantized per tensor, symmetric (zero point 0), at the calibrated scale
// amax / 127 (calibration_table.h); weights per output channel at max|W_c| / 127, rounded half to
// even and clamped to ±127 once, here, so the plan stores them in 8 bits. The pairs mark where the
// arithmetic is 8-bit: the CPU executor runs them as written (the reference: every value a layer
// reads is exactly the one an int8 kernel reads), and an executor with 8-bit kernels fuses each
// pattern into one. Bias, residual and activation stay in float, as an int8 kernel's float epilogue
// computes them. Output quantization is left to the next layer's input pair, so a layer whose
// consumer stays float hands it an unrounded result.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/graph.h"
#include "runtime/quant/calibration_table.h"

namespace fovea::runtime::quant {

// What the rewrite did with each node it could quantize, for `fovea model info` and logs.
struct QuantizedNode {
  std::string node;     // the node's name
  std::string op_type;  // Conv, FusedConv, Gemm, MatMul
  bool int8 = false;
  std::string reason;  // why it stayed in float, when it did
};

// Which layers the rewrite quantizes.
enum class Int8Layers {
  kAll,  // every Conv, FusedConv, Gemm and MatMul (the CPU reference computes any of them)
  // The CUDA executor's int8 tensor-core kernel: channels_last 2-D convolutions of one group whose
  // channel counts it reads (ops::int8_conv_unsupported); the rest stays in float, where an 8-bit
  // simulation between float kernels would only cost time.
  kTensorCoreConvolutions,
};

// Node names or op types in `keep` stay in float. A quantizable node whose activation input has no
// range in `table` stays in float too (the reason says which tensor: a cache made before a model
// gained a branch still plans), and so does one whose input the cache marks keep_float (the
// calibration's SQNR rule, calibrator.h). An activation that the channels-last pass renamed "<name>/nhwc"
// takes <name>'s range (the same values in another layout). The graph stays topologically sorted;
// shapes are inferred by the caller afterwards.
Result<std::vector<QuantizedNode>> quantize_graph(Graph& graph, const CalibrationTable& table,
                                                  const std::vector<std::string>& keep,
                                                  Int8Layers layers = Int8Layers::kAll);

// Conv, fovea.FusedConv, Gemm and MatMul: the layers the rewrite may quantize.
bool is_quantizable_op(const Node& node);

// "int8" for a node that reads an activation through a DequantizeLinear (the rewrite's pattern, or a
// QDQ model's), else the dtype name of its first input ("float32", "float16", ...).
std::string node_precision(const Graph& graph, const Node& node);

}  // namespace fovea::runtime::quant
