// How an ONNX op joins the runtime: one OpDef with a shape-inference function and a CPU reference
// kernel, registered next to its implementation with FOVEA_REGISTER_OP. Nothing else lists ops.
//
//   FOVEA_REGISTER_OP({.op_type = "Relu", .infer = infer_same_as_input, .run = run_relu});
//
// infer() sees input dtypes, partly symbolic shapes and, where known, input values (constants at
// load and plan time; every input at run time). It validates attributes and types and sets every
// output's type. An output whose shape depends on input data (NonMaxSuppression) may be left
// with unknown dims; its kernel then calls KernelContext::allocate_output.
//
// run() computes the outputs from the inputs. Its outputs are already allocated with the shapes
// infer() gave, in memory the executor owns (an arena slot); run() never allocates them itself.
//
// Every OpDef declares how many inputs and outputs a node may list (an ONNX file may hold any;
// the defaults are one of each); infer_node and evaluate_node (evaluate.h) check them before
// infer(), so neither infer() nor run() counts them again.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "runtime/graph.h"
#include "runtime/tensor.h"

namespace fovea::runtime {

class InferContext {
 public:
  InferContext(const Graph* graph, const Node& node, std::vector<ValueType> input_types,
               std::vector<const Tensor*> input_values);

  const Graph* graph() const { return graph_; }
  const Node& node() const { return node_; }
  int opset() const { return node_.opset; }

  int input_count() const { return static_cast<int>(node_.inputs.size()); }
  // True when input i exists and is not an omitted optional input.
  bool has_input(int i) const;
  // An input past the node's last reads like an omitted one: unknown float32.
  const ValueType& input_type(int i) const;
  DataType input_dtype(int i) const { return input_type(i).dtype; }
  // nullptr when even the rank is unknown.
  const Dims* input_dims(int i) const;
  // The value when it is known: constants at load/plan time, every input at run time.
  const Tensor* input_value(int i) const;

  int output_count() const { return static_cast<int>(node_.outputs.size()); }
  void set_output(int i, DataType dtype, std::optional<Dims> dims);
  void set_output(int i, DataType dtype, const Shape& shape) { set_output(i, dtype, dims_of(shape)); }
  const std::vector<ValueType>& outputs() const { return outputs_; }

  // An error naming the model, the node and its op: "m.onnx: node 'conv1' (Conv): <parts>".
  template <typename... Parts>
  Status error(StatusCode code, Parts&&... parts) const {
    return make_error(code, prefix(), std::forward<Parts>(parts)...);
  }
  // Checks that input i has one of `allowed` dtypes (a type mismatch otherwise).
  Status require_dtype(int i, std::initializer_list<DataType> allowed) const;
  // Checks that inputs i and j have the same dtype.
  Status require_same_dtype(int i, int j) const;
  // Checks that input i has a known rank within [min_rank, max_rank].
  Status require_rank(int i, int min_rank, int max_rank) const;

 private:
  std::string prefix() const;

  const Graph* graph_;
  const Node& node_;
  std::vector<ValueType> input_types_;
  std::vector<const Tensor*> input_values_;
  std::vector<ValueType> outputs_;
};

// An InferContext over concrete tensors: every input's type and value known.
InferContext infer_context_for(const Graph* graph, const Node& node, const std::vector<Tensor>& inputs);

class KernelContext {
 public:
  using Allocator = std::function<Tensor(int output, DataType dtype, Shape shape)>;

  KernelContext(const Node& node, std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                std::vector<DataType> output_dtypes, Allocator allocator);

  const Node& node() const { return node_; }
  int opset() const { return node_.opset; }
  int input_count() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const;
  // An input past the node's last reads like an omitted one: an empty Tensor.
  const Tensor& input(int i) const;
  int output_count() const { return static_cast<int>(outputs_.size()); }
  Tensor& output(int i);
  // For outputs infer() could not size; the shape is the data-dependent one.
  Tensor& allocate_output(int i, Shape shape);

  std::vector<Tensor>& outputs() { return outputs_; }
  // The same view infer() had at run time (every input's value known), so that run() can derive
  // its parameters through the checks infer() already passed instead of repeating them.
  InferContext inference() const;

 private:
  const Node& node_;
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  std::vector<DataType> output_dtypes_;
  Allocator allocator_;
};

// max_inputs / max_outputs of an op that takes any number.
inline constexpr int kVariadic = std::numeric_limits<int>::max();

struct OpDef {
  std::string_view domain;  // "" for ONNX's default domain
  std::string_view op_type;
  // The counts a node may list, over every opset the op implements. ONNX lists required inputs
  // first: inputs below min_inputs must be present, later ones are optional (has_input) unless the
  // op is variadic, whose inputs are all required. Output 0 is always required.
  int min_inputs = 1;
  int max_inputs = 1;
  int min_outputs = 1;
  int max_outputs = 1;
  Status (*infer)(InferContext&) = nullptr;
  Status (*run)(KernelContext&) = nullptr;
  // float16 inputs. kViaFloat32: the op computes in float32 on widened inputs and its float32
  // outputs are rounded back to float16 ("half storage, float accumulation"), in shape inference
  // and in the CPU reference alike, so every op plans and runs in a float16 graph. kNative: the op
  // handles float16 itself (Cast, whose output type is an attribute, not the input's).
  enum class Float16 { kViaFloat32, kNative };
  Float16 float16 = Float16::kViaFloat32;
  // Bit i set: input i is float32 whatever the op's data type (Resize's scales), so a float16 plan
  // must not narrow it.
  std::uint32_t float32_inputs = 0;
  // Floating-point operations for `fovea model info`, from the node and its concrete shapes.
  // Unset: one per output element.
  double (*flops)(const Node&, const std::vector<Shape>& inputs, const std::vector<Shape>& outputs) = nullptr;
};

bool register_op(const OpDef& def);
const OpDef* find_op(std::string_view domain, std::string_view op_type);
std::vector<const OpDef*> registered_ops();

}  // namespace fovea::runtime

#define FOVEA_REGISTER_OP(...)                                           \
  [[maybe_unused]] static const bool FOVEA_CONCAT(fovea_op_, __LINE__) = \
      ::fovea::runtime::register_op(::fovea::runtime::OpDef __VA_ARGS__)
