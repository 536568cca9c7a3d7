// Planning: a model's graph specialized to concrete input shapes (folded and optimized), and one
// memory arena holding every intermediate, placed by liveness. Executors run plans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/graph.h"

namespace fovea::runtime {

namespace quant {
struct CalibrationTable;
}

using InputShapes = std::map<std::string, Shape, std::less<>>;

struct MemoryPlan {
  // Offsets are multiples of this: enough for any element type and for coalesced GPU access.
  static constexpr std::size_t kAlignment = 256;
  std::size_t arena_bytes = 0;
  std::size_t naive_bytes = 0;        // every intermediate in its own allocation, for comparison
  std::vector<std::int64_t> offsets;  // per value id; -1 for values outside the arena
  std::vector<std::size_t> bytes;     // per value id, as planned
};

// Places every intermediate (node outputs that are not graph outputs, with static shapes) so that
// values alive at the same time never overlap: greedy by size, each at the lowest offset free
// during its lifetime. Values are alive from their producer to their last reader.
//
// `view_of` (optional, indexed by value id) marks values that are another value's bytes under a
// new shape (an executor's Reshape without a copy): a view takes no space, its offset is its
// source's (-1 when the source is outside the arena), and it keeps its source alive.
MemoryPlan plan_memory(const Graph& graph, const std::vector<ValueId>& view_of = {});

// kInt8: convolutions and matrix products take 8-bit inputs (quant/quantize_graph.h), with the
// ranges of a calibration; what stays unquantized runs as the device's float plan does.
enum class Precision { kFloat32, kFloat16, kInt8 };
std::string_view precision_name(Precision precision);  // "fp32", "fp16", "int8"

struct PlanOptions {
  Precision precision = Precision::kFloat32;
  // kFloat16 only: node names or op types that stay in float32.
  std::vector<std::string> keep_float32;
  // 2-D convolution chains in NHWC (convert_to_channels_last): what tensor cores want; the CUDA
  // plans for float16 use it.
  bool channels_last = false;
  // kFloat16 only: the graph's float inputs and outputs are float16 themselves, with no Casts at the
  // edges, for callers that produce and consume float16 (the segmentation flow's preprocess writes
  // its tensor in float16; the Casts cost it a pass over the input and one over the scores).
  bool float16_interface = false;
  // kInt8 only: the activation ranges (required) and the node names or op types left unquantized.
  std::shared_ptr<const quant::CalibrationTable> calibration;
  std::vector<std::string> keep_unquantized;
  // kInt8 only, for the CUDA executor's int8 tensor-core kernel (with channels_last): only the
  // convolutions it takes are quantized, each becomes fovea.Int8Conv (fuse_int8_convolutions), and
  // everything else runs in float16. Without it, every quantizable layer is quantized and computed
  // in float32 between quantize/dequantize pairs: the CPU reference.
  bool int8_tensor_cores = false;
  // With int8_tensor_cores: block outputs that are both a next layer's int8 input and a residual
  // stay int8, the residual read at their scale (passes.h); off, they stay float16 and are
  // quantized for the next layer apart (slower; the residual keeps float16's precision).
  bool int8_residuals = true;
};

// How plans for the CUDA executor are made: `precision`, and NHWC convolutions for float16 and
// int8, whose tensor-core kernels want channels-last tiles.
PlanOptions device_plan_options(Precision precision, std::vector<std::string> keep_float32 = {});

struct ExecutionPlan {
  Graph graph;
  InputShapes input_shapes;
  PlanOptions options;
  MemoryPlan memory;
};

// Shapes for graph inputs: known dims as declared, unknown ones from `overrides` (whole shapes by
// input name) or else `default_dim`.
Result<InputShapes> resolve_input_shapes(const Graph& graph, const InputShapes& overrides,
                                         std::int64_t default_dim);

// Binds the input shapes, folds constants, runs the passes and plans memory. A shape that
// contradicts the model's declared dims is an error naming the input.
// Checks that `inputs` (in the order of plan.graph.inputs) have the dtypes and shapes the plan is
// for; the error names the input.
Status check_plan_inputs(const ExecutionPlan& plan, const std::vector<Tensor>& inputs);

// With kFloat16, intermediates and weights are then stored in float16 (convert_to_float16).
Result<ExecutionPlan> plan_graph(const Graph& graph, const InputShapes& input_shapes,
                                 const PlanOptions& options = {});

}  // namespace fovea::runtime
