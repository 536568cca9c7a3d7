// Graph rewrites between loading and planning. Each pass keeps the graph valid and topologically
// sorted; each has its own tests (tests/runtime/passes_test.cpp).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/graph.h"

namespace fovea::runtime {

// Constant folding is infer_shapes(graph, FoldConstants::kYes) (shape_inference.h): it needs the
// op kernels and the shapes, which inference has at hand.

// Identity, Dropout whose mask nobody reads, and a Resize to its input's own size (any mode but
// tf_crop_and_resize) are bypassed: consumers read the input directly.
void remove_identities(Graph& graph);

// BatchNormalization right after a Conv (its only consumer) becomes part of the Conv's weights and
// bias, when all of them are constants; so do a frozen batch norm's Mul by and Add (or Sub) of
// per-channel constants, as exporters write torchvision's FrozenBatchNorm2d (pretrained detectors'
// backbones, DETR's), one after the other.
Status fold_batchnorm_into_conv(Graph& graph);

// Conv + (residual Add of a same-shape tensor) + (Relu, LeakyRelu, Clip, Sigmoid, HardSwish, or
// SiLU written as x * Sigmoid(x)) becomes one fovea.FusedConv node, so executors can run the epilogue inside
// the convolution. A conv with only a bias whose output is read only as another FusedConv's residual gives
// its bias to that reader and runs with no epilogue at all.
void fuse_conv_epilogues(Graph& graph);

// GELU written out in elementary ops becomes one Gelu node (opset 20's op): the erf form that
// PyTorch exports for nn.GELU() before opset 20,
//   Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)
// (or Mul by 1/sqrt 2; any operand order; the 0.5 taken with x first: Mul(Mul(x, 0.5), ...)), and
// the tanh form of nn.GELU(approximate="tanh"),
//   Mul(Mul(x, 0.5), Add(Tanh(Mul(Add(x, Mul(Pow(x, 3), 0.044715)), sqrt(2 / pi))), 1)).
// Constants match to 1e-3 relative (exporters print 1.4142 or round to float32); every
// intermediate must be read by the pattern alone.
void fuse_gelu(Graph& graph);

// Scaled dot-product attention becomes one fovea.Attention node (ops/attention.cpp):
//   MatMul(Softmax(scale * MatMul(Q, KT) [+ B], last axis) [guarded], V)
// where the scale is any product of scalar constants multiplying (Mul) or dividing (Div) Q, KT or
// the scores (PyTorch's exports of scaled_dot_product_attention scale Q and KT by sqrt(scale) each;
// Swin scales Q and adds its relative-position bias), B is added either way round and broadcasts
// into the scores' shape, and Q, KT, V have one rank (>= 3), known dims and the same leading dims.
// Every intermediate must be read by the pattern alone. [guarded] is Hugging Face's Where(IsNaN(p),
// 0, p) (DETR, ViT), taken only where it cannot fire: no bias, or a constant one each row of which
// keeps a value finite in float16 (finite scores then give no NaN).
void fuse_attention(Graph& graph);

// fovea.Attention's operands that are strided views of a larger tensor (a packed QKV projection
// through Reshape, Squeeze/Unsqueeze, Flatten, Transpose and Gathers of one constant index) are
// read where they lie (q_view, kt_view, v_view: ops/attention_util.h), and an output read only by a
// Transpose that keeps the last axis (directly, or through Reshapes that only merge dims) is
// written transposed (y_perm). The kernels need each row of Q, V and KT (or K) contiguous; operands
// that are not stay as they are.
void fold_attention_views(Graph& graph);

// A Transpose whose output only an Add, Sub, Mul or Div with a constant reads (and that the op does
// not broadcast) moves past the op: op(Transpose(x), c) = Transpose(op(x, c')), c' the constant with
// its axes put back. The op then sits next to what produced x, where fuse_matmul_bias folds a scale
// into a linear layer, and the Transpose next to its readers, where convert_to_channels_last
// cancels it (sink_transposes.cpp says why ConvNeXt needs it).
void sink_transposes(Graph& graph);

// A linear layer, MatMul(x, W) with W a constant [K, N] and the product read only by an Add of a
// constant bias row ([N], [1, N], ...) that keeps its shape, becomes Gemm(x, W, bias): x of rank
// > 2 through Reshapes to [rows, K] and back (free: they alias). The CUDA executor adds the bias
// in cuBLASLt's epilogue. A Mul of the sum by a constant row (a scale per column) that alone reads it
// is folded into W and the bias.
void fuse_matmul_bias(Graph& graph);

// Transposes that keep the last axis move across row-wise linear layers (Gemm, transA 0) to the
// attention on their other side, for fold_attention_views to absorb: torch's batch-first multi-head
// attention transposes its input and output around the projections. kInputs (before the views are
// folded): Transpose -> Reshape [R, K] -> Gemm whose product only attentions read (through view
// ops) becomes Reshape -> Gemm -> Reshape, Transpose, Reshape. kOutputs (after: the attention then
// writes its output where the Gemm reads it): a Gemm on an attention's output (through Reshapes)
// followed by Reshape -> Transpose reads the transposed input instead. The rewrites are kept only
// where fold_attention_views (which the pass runs to check) absorbs every Transpose they move.
enum class AttentionSide { kInputs, kOutputs };
void move_transposes_to_attention(Graph& graph, AttentionSide side);

// A Gemm read only by an Add (through the Reshape fuse_matmul_bias puts after it, if any) whose
// other operand has the sum's shape, a residual, becomes fovea.Gemm(A, B, C, R) with the residual
// as R, read as [M, N] through a Reshape (free: it aliases); the CUDA executor adds it as
// cuBLASLt's C operand, inside the product.
void fuse_gemm_residual(Graph& graph);

// Whether fuse_int8_convolutions keeps residual streams in int8 (below).
enum class Int8Residuals { kInt8, kFloat };

// The CUDA int8 plans' last step (after the int8 rewrite, channels_last and float16): a
// channels_last FusedConv of one group that reads its input and weights through symmetric
// DequantizeLinears,
//   QuantizeLinear(x, s_x) -> q -> DequantizeLinear(s_x) -> FusedConv <- DequantizeLinear(W8, s_w, axis 0)
// in a geometry the int8 kernel takes (ops::int8_conv_unsupported), becomes fovea.Int8Conv(q, s_x,
// W8, s_w, B, Z) reading the int8 tensor and weights itself. When the convolution's output is read
// only by a QuantizeLinear (the next layer's input), Int8Conv writes that int8 tensor directly: the
// float output and the quantize pass are gone. Scales and bias that float16 conversion narrowed
// are widened back exactly (the epilogue computes in float32).
// With kInt8, ResNet's block outputs (an Int8Conv's float output that a QuantizeLinear makes the
// next block's input of, and that Int8Convs read as their residual) are written in int8 at that
// QuantizeLinear's scale and read as int8 residuals (Z_scale), as TensorRT's int8 plans keep the
// residual stream: the quantize pass is gone and residuals move a byte an element instead of two,
// at the cost of the residual's int8 rounding (docs/perf.md measures the accuracy).
void fuse_int8_convolutions(Graph& graph, Int8Residuals residuals = Int8Residuals::kInt8);

// Removes nodes none of whose outputs reach a graph output.
void eliminate_dead_nodes(Graph& graph);

// All of the above in order (after folding), then drops unused values.
Status optimize(Graph& graph);

// Which nodes stay in float32 when a plan runs in float16: by node name or by op type.
struct Float16Options {
  std::vector<std::string> keep_float32;
  bool float16_interface = false;  // graph inputs and outputs in float16 too (PlanOptions)
};

// Stores every float32 intermediate and float32 weight in float16 ("half storage"; kernels still
// accumulate in float32). Graph inputs and outputs keep float32, so callers see the same interface
// in both precisions: Cast nodes convert at the edges and around the nodes kept in float32. With
// float16_interface, float32 graph inputs and the outputs computed in float16 become float16.
// Inputs an op declares float32 whatever its data type (OpDef::float32_inputs: Resize's scales)
// stay float32.
void convert_to_float16(Graph& graph, const Float16Options& options);

// A Gemm (plain, or fovea.Gemm without R) whose product only a Gelu reads, directly or through the
// Reshape fuse_matmul_bias puts after it, becomes fovea.Gemm with activation "gelu_tanh": cuBLASLt's
// GELU epilogue, which computes the tanh form. A tanh Gelu is fused in any precision; an erf Gelu
// only where the product is float16, where the unfused path's rounding of the product before the
// erf already errs by more than the two forms differ (fuse_gemm_gelu.cpp). Runs after
// convert_to_float16, whose dtypes it reads.
void fuse_gemm_gelu(Graph& graph);

// 2-D convolutions (fovea.FusedConv) in NHWC for tensor cores, with Transposes at the edges of each
// convolution chain only (channels_last.cpp), then fold_layout_round_trips.
void convert_to_channels_last(Graph& graph);

// A chain of Transposes and Reshapes (Flatten, Squeeze, Unsqueeze, Identity), each intermediate read by the
// next alone, whose composite leaves every element where it was in memory becomes one Reshape of
// the chain's input: a view instead of copies. What channels_last leaves around token-major models
// (SegFormer, DETR): a convolution's NHWC output transposed to NCHW, flattened to [N, C, HW] and
// transposed to tokens [N, HW, C] is that NHWC output; and a Transpose that only moves dims of size
// 1 (one attention head's split) is a Reshape.
void fold_layout_round_trips(Graph& graph);

}  // namespace fovea::runtime
