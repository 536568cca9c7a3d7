#include "runtime/opset_conversion.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "onnx.pb.h"
#include "runtime/evaluate.h"
#include "runtime/onnx_writer.h"

namespace fovea::runtime {

namespace {

// The since-versions below kKernelOpset of every default-domain op that has one (from ONNX's
// operator_sets.h); 0 pads the list. An op missing here did not exist before opset 11.
struct OpHistory {
  std::string_view op_type;
  std::array<int, 4> versions;
};

constexpr OpHistory kHistories[] = {
    {"Abs", {1, 6}},
    {"Acos", {7}},
    {"Acosh", {9}},
    {"Add", {1, 6, 7}},
    {"And", {1, 7}},
    {"ArgMax", {1}},
    {"ArgMin", {1}},
    {"Asin", {7}},
    {"Asinh", {9}},
    {"Atan", {7}},
    {"Atanh", {9}},
    {"AveragePool", {1, 7, 10}},
    {"BatchNormalization", {1, 6, 7, 9}},
    {"Cast", {1, 6, 9}},
    {"Ceil", {1, 6}},
    {"Clip", {1, 6}},
    {"Compress", {9}},
    {"Concat", {1, 4}},
    {"Constant", {1, 9}},
    {"ConstantOfShape", {9}},
    {"Conv", {1}},
    {"ConvInteger", {10}},
    {"ConvTranspose", {1}},
    {"Cos", {7}},
    {"Cosh", {9}},
    {"DepthToSpace", {1}},
    {"DequantizeLinear", {10}},
    {"Div", {1, 6, 7}},
    {"Dropout", {1, 6, 7, 10}},
    {"Elu", {1, 6}},
    {"Equal", {1, 7}},
    {"Erf", {9}},
    {"Exp", {1, 6}},
    {"Expand", {8}},
    {"EyeLike", {9}},
    {"Flatten", {1, 9}},
    {"Floor", {1, 6}},
    {"GRU", {1, 3, 7}},
    {"Gather", {1}},
    {"Gemm", {1, 6, 7, 9}},
    {"GlobalAveragePool", {1}},
    {"GlobalLpPool", {1, 2}},
    {"GlobalMaxPool", {1}},
    {"Greater", {1, 7, 9}},
    {"HardSigmoid", {1, 6}},
    {"Hardmax", {1}},
    {"Identity", {1}},
    {"If", {1}},
    {"InstanceNormalization", {1, 6}},
    {"IsInf", {10}},
    {"IsNaN", {9}},
    {"LRN", {1}},
    {"LSTM", {1, 7}},
    {"LeakyRelu", {1, 6}},
    {"Less", {1, 7, 9}},
    {"Log", {1, 6}},
    {"LogSoftmax", {1}},
    {"Loop", {1}},
    {"LpNormalization", {1}},
    {"LpPool", {1, 2}},
    {"MatMul", {1, 9}},
    {"MatMulInteger", {10}},
    {"Max", {1, 6, 8}},
    {"MaxPool", {1, 8, 10}},
    {"MaxRoiPool", {1}},
    {"MaxUnpool", {9}},
    {"Mean", {1, 6, 8}},
    {"MeanVarianceNormalization", {9}},
    {"Min", {1, 6, 8}},
    {"Mod", {10}},
    {"Mul", {1, 6, 7}},
    {"Multinomial", {7}},
    {"Neg", {1, 6}},
    {"NonMaxSuppression", {10}},
    {"NonZero", {9}},
    {"Not", {1}},
    {"OneHot", {9}},
    {"Or", {1, 7}},
    {"PRelu", {1, 6, 7, 9}},
    {"Pad", {1, 2}},
    {"Pow", {1, 7}},
    {"QLinearConv", {10}},
    {"QLinearMatMul", {10}},
    {"QuantizeLinear", {10}},
    {"RNN", {1, 7}},
    {"RandomNormal", {1}},
    {"RandomNormalLike", {1}},
    {"RandomUniform", {1}},
    {"RandomUniformLike", {1}},
    {"Reciprocal", {1, 6}},
    {"ReduceL1", {1}},
    {"ReduceL2", {1}},
    {"ReduceLogSum", {1}},
    {"ReduceLogSumExp", {1}},
    {"ReduceMax", {1}},
    {"ReduceMean", {1}},
    {"ReduceMin", {1}},
    {"ReduceProd", {1}},
    {"ReduceSum", {1}},
    {"ReduceSumSquare", {1}},
    {"Relu", {1, 6}},
    {"Reshape", {1, 5}},
    {"Resize", {10}},
    {"ReverseSequence", {10}},
    {"RoiAlign", {10}},
    {"Scan", {8, 9}},
    {"Scatter", {9}},
    {"Selu", {1, 6}},
    {"Shape", {1}},
    {"Shrink", {9}},
    {"Sigmoid", {1, 6}},
    {"Sign", {9}},
    {"Sin", {7}},
    {"Sinh", {9}},
    {"Size", {1}},
    {"Slice", {1, 10}},
    {"Softmax", {1}},
    {"Softplus", {1}},
    {"Softsign", {1}},
    {"SpaceToDepth", {1}},
    {"Split", {1, 2}},
    {"Sqrt", {1, 6}},
    {"Squeeze", {1}},
    {"StringNormalizer", {10}},
    {"Sub", {1, 6, 7}},
    {"Sum", {1, 6, 8}},
    {"Tan", {7}},
    {"Tanh", {1, 6}},
    {"TfIdfVectorizer", {9}},
    {"ThresholdedRelu", {10}},
    {"Tile", {1, 6}},
    {"TopK", {1, 10}},
    {"Transpose", {1}},
    {"Unsqueeze", {1}},
    {"Upsample", {1, 7, 9, 10}},
    {"Where", {9}},
    {"Xor", {1, 7}},
};

class Converter;
using Convert = Status (*)(Converter&, Node&);

// Op versions whose form differs from the op's opset-11 form. Every other op version below 11
// means what its opset-11 version means (ONNX only widened types, allowed negative axes, or
// generalized broadcasting) and is accepted as it is. `convert` rewrites the node in place; a row
// without one is refused, with `why`.
struct OldForm {
  std::string_view op_type;
  int first_version;
  int last_version;
  Convert convert;
  std::string_view why;
};

Status legacy_broadcast(Converter& c, Node& node);
Status batchnorm_attributes(Converter& c, Node& node);
Status cast_type_name(Converter& c, Node& node);
Status clip_bounds_to_inputs(Converter& c, Node& node);
Status concat_default_axis(Converter& c, Node& node);
Status dropout_test_mode(Converter& c, Node& node);
Status gemm_broadcast(Converter& c, Node& node);
Status pad_to_inputs(Converter& c, Node& node);
Status prelu_per_channel(Converter& c, Node& node);
Status reshape_shape_to_input(Converter& c, Node& node);
Status resize_10_to_11(Converter& c, Node& node);
Status slice_to_inputs(Converter& c, Node& node);
Status split_input_to_attribute(Converter& c, Node& node);
Status topk_k_to_input(Converter& c, Node& node);
Status upsample_to_resize(Converter& c, Node& node);

constexpr OldForm kOldForms[] = {
    {"Add", 1, 6, legacy_broadcast, "broadcast/axis attributes"},
    {"Sub", 1, 6, legacy_broadcast, "broadcast/axis attributes"},
    {"Mul", 1, 6, legacy_broadcast, "broadcast/axis attributes"},
    {"Div", 1, 6, legacy_broadcast, "broadcast/axis attributes"},
    {"Pow", 1, 6, legacy_broadcast, "broadcast/axis attributes"},
    {"And", 1, 6, legacy_broadcast, "broadcast/axis attributes"},
    {"Or", 1, 6, legacy_broadcast, "broadcast/axis attributes"},
    {"Xor", 1, 6, legacy_broadcast, "broadcast/axis attributes"},
    {"Equal", 1, 6, legacy_broadcast, "broadcast/axis attributes"},
    {"Greater", 1, 6, legacy_broadcast, "broadcast/axis attributes"},
    {"Less", 1, 6, legacy_broadcast, "broadcast/axis attributes"},
    {"BatchNormalization", 1, 8, batchnorm_attributes, "is_test and spatial attributes"},
    {"Cast", 1, 5, cast_type_name, "'to' names the type as a string"},
    {"Clip", 1, 10, clip_bounds_to_inputs, "min/max attributes"},
    {"Concat", 1, 3, concat_default_axis, "axis defaults to 1"},
    {"Dropout", 1, 9, dropout_test_mode, "is_test attribute; the mask has the data's type"},
    {"Gemm", 1, 6, gemm_broadcast, "broadcast attribute"},
    {"Pad", 1, 10, pad_to_inputs, "pads/value attributes"},
    {"PRelu", 1, 6, prelu_per_channel, "a 1-D slope applies per channel"},
    {"Reshape", 1, 4, reshape_shape_to_input, "shape attribute"},
    {"Resize", 10, 10, resize_10_to_11, "no roi; asymmetric coordinates"},
    {"Slice", 1, 9, slice_to_inputs, "starts/ends/axes attributes"},
    {"Split", 1, 1, split_input_to_attribute, "split as an input"},
    {"Tile", 1, 5, nullptr, "Tile-1's tile count and axis inputs are not converted"},
    {"TopK", 1, 9, topk_k_to_input, "k attribute"},
    {"Upsample", 1, 6, nullptr, "the experimental Upsample-1 (height_scale/width_scale) is not converted"},
    {"Upsample", 7, 9, upsample_to_resize, "Upsample became Resize"},
    {"Upsample", 10, 10, nullptr, "Upsample is deprecated from opset 10: Resize replaces it"},
};

// Attributes that the op takes as an input from `input_since` on. A model that still writes one at
// a newer version (an old exporter's form under a new opset import: the ONNX checker refuses it)
// would have it ignored where the kernel reads the input, the bound or the pads silently lost.
struct MovedAttribute {
  std::string_view op_type;
  std::string_view attribute;
  int input_since;
};

constexpr MovedAttribute kMovedAttributes[] = {
    {"Clip", "min", 11},
    {"Clip", "max", 11},
    {"Pad", "pads", 11},
    {"Pad", "value", 11},
    {"Slice", "starts", 10},
    {"Slice", "ends", 10},
    {"Slice", "axes", 10},
    {"TopK", "k", 10},
    {"Reshape", "shape", 5},
    {"Split", "split", 13},
    {"Squeeze", "axes", 13},
    {"Unsqueeze", "axes", 13},
    {"ReduceSum", "axes", 13},
    {"ReduceMean", "axes", 18},
    {"ReduceMax", "axes", 18},
    {"ReduceMin", "axes", 18},
    {"ReduceProd", "axes", 18},
    {"ReduceL1", "axes", 18},
    {"ReduceL2", "axes", 18},
    {"ReduceLogSum", "axes", 18},
    {"ReduceLogSumExp", "axes", 18},
    {"ReduceSumSquare", "axes", 18},
    {"Dropout", "ratio", 12},
    {"Upsample", "scales", 9},
};

// consumed_inputs, on the opset-1 versions of many ops, was a memory-reuse hint that never changed
// a result; opset 6 removed it everywhere.
constexpr int kWithoutConsumedInputs = 6;

const OldForm* old_form(std::string_view op_type, int version) {
  for (const OldForm& form : kOldForms) {
    if (form.op_type == op_type && form.first_version <= version && version <= form.last_version) {
      return &form;
    }
  }
  return nullptr;
}

Result<Tensor> float_scalar(DataType dtype, double value) {
  switch (dtype) {
    case DataType::kFloat32: return Tensor::from_vector<float>(dtype, {}, {static_cast<float>(value)});
    case DataType::kFloat64: return Tensor::from_vector<double>(dtype, {}, {value});
    case DataType::kFloat16:
      return Tensor::from_vector<Half>(dtype, {}, {float_to_half(static_cast<float>(value))});
    default: break;
  }
  return make_error(StatusCode::kInvalidArgument, "the input is ", data_type_name(dtype),
                    ", which this op version does not take");
}

Tensor int64_list(const std::vector<std::int64_t>& values) {
  return Tensor::from_vector<std::int64_t>(DataType::kInt64, {static_cast<std::int64_t>(values.size())},
                                           values);
}

// Walks the nodes in their topological order, converting each and inferring its outputs' types,
// which later conversions read (Clip's bounds take the data's type; legacy broadcasting needs
// ranks). The types stay here: the loader's shape inference sets the graph's afterwards.
class Converter {
 public:
  explicit Converter(Graph& graph) : graph_(graph), opset_(graph.opsets.at("")) {
    for (const Value& value : graph.values) types_.push_back(value.type);
  }

  Status run();

  const ValueType& type(ValueId id) const { return types_[static_cast<std::size_t>(id)]; }
  // The old forms that read or keep the node's first input refuse a node without one.
  Status require_data_input(const Node& node) const {
    if (node.inputs.empty() || node.inputs[0] == kNoValue) return refuse(node, "it has no data input");
    return Status::ok();
  }
  Result<DataType> data_type(const Node& node) const {
    FOVEA_TRY(require_data_input(node));
    return type(node.inputs[0]).dtype;
  }
  // The rank of input i of `node`, when known.
  std::optional<int> rank(const Node& node, std::size_t i) const;
  // A value known at load: an initializer or the output of a Constant node.
  const Tensor* known_value(ValueId id) const;
  ValueId add_constant(const Node& node, std::string_view role, Tensor tensor);
  // A node that runs before (or after) the one being converted, producing or reading `value`.
  ValueId add_value(const Node& node, std::string_view role, ValueType value_type);
  void add_before(Node node) { before_.push_back(std::move(node)); }
  void add_after(Node node) { after_.push_back(std::move(node)); }
  // A new node in the converted opset, named after the node it serves.
  Node make_node(const Node& served, std::string op_type, std::string_view role) const;

  template <typename... Parts>
  Status refuse(const Node& node, Parts&&... parts) const {
    return make_error(StatusCode::kUnsupported, graph_.where(), node.describe(), ": ", node.op_type, "-",
                      std::to_string(version_), " (opset ", std::to_string(opset_),
                      ") cannot be converted to opset ", std::to_string(kKernelOpset), ": ",
                      std::forward<Parts>(parts)...);
  }
  int version() const { return version_; }

 private:
  Status convert(Node& node);
  Status infer(const Node& node);
  std::string unique_name(std::string base) const;

  Graph& graph_;
  int opset_;
  int version_ = 0;  // of the node being converted
  std::vector<ValueType> types_;
  std::vector<std::optional<Tensor>> constant_nodes_;  // by value id: Constant nodes' values
  std::vector<Node> before_, after_;
};

std::optional<int> Converter::rank(const Node& node, std::size_t i) const {
  if (i >= node.inputs.size() || node.inputs[i] == kNoValue) return std::nullopt;
  const auto& dims = type(node.inputs[i]).dims;
  return dims ? std::optional<int>(static_cast<int>(dims->size())) : std::nullopt;
}

const Tensor* Converter::known_value(ValueId id) const {
  if (id == kNoValue) return nullptr;
  if (graph_.is_constant(id)) return &*graph_.value(id).constant;
  const auto index = static_cast<std::size_t>(id);
  return index < constant_nodes_.size() && constant_nodes_[index] ? &*constant_nodes_[index] : nullptr;
}

std::string Converter::unique_name(std::string base) const {
  std::string name = base;
  for (int n = 1; graph_.find_value(name) != kNoValue; ++n) name = fmt::format("{}_{}", base, n);
  return name;
}

ValueId Converter::add_value(const Node& node, std::string_view role, ValueType value_type) {
  const ValueId id = graph_.add_value(unique_name(fmt::format("{}/{}", node.name, role)), value_type);
  types_.push_back(std::move(value_type));
  return id;
}

ValueId Converter::add_constant(const Node& node, std::string_view role, Tensor tensor) {
  const ValueId id =
      graph_.add_constant(unique_name(fmt::format("{}/{}", node.name, role)), std::move(tensor));
  types_.push_back(graph_.value(id).type);
  return id;
}

Node Converter::make_node(const Node& served, std::string op_type, std::string_view role) const {
  Node node;
  node.name = fmt::format("{}/{}", served.name, role);
  node.op_type = std::move(op_type);
  node.opset = kKernelOpset;
  return node;
}

Status Converter::infer(const Node& node) {
  if (find_op(node.domain, node.op_type) == nullptr) return Status::ok();  // reported later
  std::vector<ValueType> input_types;
  std::vector<const Tensor*> input_values;
  for (ValueId in : node.inputs) {
    input_types.push_back(in == kNoValue ? ValueType{} : type(in));
    input_values.push_back(graph_.is_constant(in) ? &*graph_.value(in).constant : nullptr);
  }
  FOVEA_ASSIGN_OR_RETURN(std::vector<ValueType> outputs,
                         infer_node(&graph_, node, input_types, input_values));
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] != kNoValue)
      types_[static_cast<std::size_t>(node.outputs[i])] = std::move(outputs[i]);
  }
  return Status::ok();
}

Status Converter::convert(Node& node) {
  if (node.domain != "" || find_op("", node.op_type) == nullptr) {
    return Status::ok();  // another domain keeps its own opset; an unregistered op is reported later
  }
  version_ = op_version(node.op_type, opset_);
  if (version_ == 0) {
    return make_error(StatusCode::kInvalidArgument, graph_.where(), node.describe(), ": ", node.op_type,
                      " is not an op of opset ", std::to_string(opset_));
  }
  if (version_ < kWithoutConsumedInputs) node.attributes.erase("consumed_inputs");
  if (const OldForm* form = old_form(node.op_type, version_)) {
    if (form->convert == nullptr) return refuse(node, form->why);
    FOVEA_TRY(form->convert(*this, node));
  }
  node.opset = kKernelOpset;
  if (node.op_type == "Constant" && node.outputs.size() == 1 && node.outputs[0] != kNoValue) {
    if (auto value = node.attr_tensor("value"); value.is_ok()) {
      constant_nodes_.resize(graph_.values.size());
      constant_nodes_[static_cast<std::size_t>(node.outputs[0])] = *value;
    }
  }
  return Status::ok();
}

Status Converter::run() {
  std::vector<Node> converted;
  converted.reserve(graph_.nodes.size());
  for (Node& node : graph_.nodes) {
    FOVEA_TRY(convert(node));
    for (Node& added : before_) {
      FOVEA_TRY(infer(added));
      converted.push_back(std::move(added));
    }
    FOVEA_TRY(infer(node));
    converted.push_back(std::move(node));
    for (Node& added : after_) {
      FOVEA_TRY(infer(added));
      converted.push_back(std::move(added));
    }
    before_.clear();
    after_.clear();
  }
  graph_.nodes = std::move(converted);
  graph_.opsets[""] = kKernelOpset;
  graph_.index_producers();
  return Status::ok();
}

// Input `input` (of rank r) aligned with input 0's dims from `axis` on, as legacy broadcasting and
// PRelu's per-channel slope read it, becomes numpy broadcasting by appending trailing 1-dims.
Status align_at_axis(Converter& c, Node& node, std::size_t input, std::int64_t axis) {
  const std::optional<int> rank_a = c.rank(node, 0);
  const std::optional<int> rank_b = c.rank(node, input);
  if (!rank_a || !rank_b) {
    return c.refuse(node, "broadcasting input ", std::to_string(input), " from axis ", std::to_string(axis),
                    " needs the ranks of both inputs at load");
  }
  if (axis < 0) axis += *rank_a;
  const std::int64_t trailing = *rank_a - axis - *rank_b;
  if (axis < 0 || trailing < 0) {
    return c.refuse(node, "input ", std::to_string(input), " of rank ", std::to_string(*rank_b),
                    " does not fit input 0 of rank ", std::to_string(*rank_a), " from axis ",
                    std::to_string(axis));
  }
  if (trailing == 0) return Status::ok();
  Node unsqueeze = c.make_node(node, "Unsqueeze", fmt::format("align_input_{}", input));
  std::vector<std::int64_t> axes;
  for (std::int64_t d = 0; d < trailing; ++d) axes.push_back(*rank_b + d);
  unsqueeze.attributes["axes"] = Attribute{.kind = Attribute::Kind::kInts, .ints = axes};
  unsqueeze.inputs = {node.inputs[input]};
  const ValueId aligned = c.add_value(node, fmt::format("aligned_input_{}", input), {});
  unsqueeze.outputs = {aligned};
  node.inputs[input] = aligned;
  c.add_before(std::move(unsqueeze));
  return Status::ok();
}

Status legacy_broadcast(Converter& c, Node& node) {
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t broadcast, node.attr_int("broadcast", 0));
  const bool has_axis = node.has_attribute("axis");
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t axis, node.attr_int("axis", 0));
  node.attributes.erase("broadcast");
  node.attributes.erase("axis");
  // Without broadcast both shapes are equal; without axis B lines up with A's trailing dims. Both
  // are numpy broadcasting too.
  if (broadcast == 0 || !has_axis) return Status::ok();
  return align_at_axis(c, node, 1, axis);
}

Status prelu_per_channel(Converter& c, Node& node) {
  const ValueId slope = node.inputs.size() > 1 ? node.inputs[1] : kNoValue;
  if (slope == kNoValue || !c.type(slope).dims || c.type(slope).dims->size() != 1) return Status::ok();
  const Dim& count = c.type(slope).dims->front();
  if (count.known() && count.value == 1) return Status::ok();  // one slope shared by every element
  return align_at_axis(c, node, 1, 1);
}

Status batchnorm_attributes(Converter& c, Node& node) {
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t spatial, node.attr_int("spatial", 1));
  if (spatial == 0) {
    return c.refuse(node, "spatial=0 normalizes every activation rather than every channel");
  }
  // BatchNormalization-7 tells training from inference by its outputs, not by is_test (as ONNX's
  // own 6->7 adapter converts it).
  node.attributes.erase("spatial");
  node.attributes.erase("is_test");
  return Status::ok();
}

Status cast_type_name(Converter& c, Node& node) {
  FOVEA_ASSIGN_OR_RETURN(const std::string name, node.attr_string("to"));
  onnx::TensorProto_DataType code{};
  if (!onnx::TensorProto_DataType_Parse(name, &code)) {
    return c.refuse(node, "'to' names no ONNX type: '", name, "'");
  }
  node.attributes["to"] = Attribute{.kind = Attribute::Kind::kInt, .i = static_cast<std::int64_t>(code)};
  return Status::ok();
}

Status clip_bounds_to_inputs(Converter& c, Node& node) {
  FOVEA_ASSIGN_OR_RETURN(const DataType dtype, c.data_type(node));
  node.inputs.resize(3, kNoValue);
  for (const auto& [attribute, input] : {std::pair{"min", 1}, std::pair{"max", 2}}) {
    if (!node.has_attribute(attribute)) continue;
    FOVEA_ASSIGN_OR_RETURN(const float bound, node.attr_float(attribute));
    auto tensor = float_scalar(dtype, bound);
    if (!tensor.is_ok()) return c.refuse(node, tensor.status().message());
    node.inputs[static_cast<std::size_t>(input)] = c.add_constant(node, attribute, std::move(*tensor));
    node.attributes.erase(attribute);
  }
  while (node.inputs.size() > 1 && node.inputs.back() == kNoValue) node.inputs.pop_back();
  return Status::ok();
}

Status concat_default_axis(Converter&, Node& node) {
  if (!node.has_attribute("axis")) node.attributes["axis"] = Attribute{.kind = Attribute::Kind::kInt, .i = 1};
  return Status::ok();
}

// fovea runs inference, where Dropout copies its input (ONNX 7 leaves the mode to the runtime, as
// it dropped is_test). Before opset 10 the mask has the data's type, since then bool: a Cast keeps
// the old type.
Status dropout_test_mode(Converter& c, Node& node) {
  node.attributes.erase("is_test");
  if (node.outputs.size() < 2 || node.outputs[1] == kNoValue || c.version() >= 10) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(const DataType dtype, c.data_type(node));
  Node cast = c.make_node(node, "Cast", "mask_as_data_type");
  cast.attributes["to"] = Attribute{.kind = Attribute::Kind::kInt, .i = data_type_to_onnx(dtype)};
  const ValueId bool_mask = c.add_value(node, "bool_mask", ValueType{DataType::kBool, std::nullopt});
  cast.inputs = {bool_mask};
  cast.outputs = {node.outputs[1]};
  node.outputs[1] = bool_mask;
  c.add_after(std::move(cast));
  return Status::ok();
}

// Before opset 7, broadcast=1 let C broadcast; from 7 C always broadcasts unidirectionally.
Status gemm_broadcast(Converter&, Node& node) {
  node.attributes.erase("broadcast");
  return Status::ok();
}

Status pad_to_inputs(Converter& c, Node& node) {
  const char* pads_attribute = c.version() < 2 ? "paddings" : "pads";
  FOVEA_ASSIGN_OR_RETURN(const std::vector<std::int64_t> pads, node.attr_ints(pads_attribute));
  FOVEA_ASSIGN_OR_RETURN(const float value, node.attr_float("value", 0.0f));
  FOVEA_ASSIGN_OR_RETURN(const DataType dtype, c.data_type(node));
  node.inputs.resize(1);
  node.inputs.push_back(c.add_constant(node, "pads", int64_list(pads)));
  if (value != 0.0f) {
    auto fill = float_scalar(dtype, value);
    if (!fill.is_ok()) return c.refuse(node, fill.status().message());
    node.inputs.push_back(c.add_constant(node, "constant_value", std::move(*fill)));
  }
  node.attributes.erase(pads_attribute);
  node.attributes.erase("value");
  return Status::ok();
}

Status reshape_shape_to_input(Converter& c, Node& node) {
  if (node.inputs.size() > 1) return Status::ok();  // already given as an input
  FOVEA_ASSIGN_OR_RETURN(const std::vector<std::int64_t> shape, node.attr_ints("shape"));
  node.inputs.push_back(c.add_constant(node, "shape", int64_list(shape)));
  node.attributes.erase("shape");
  return Status::ok();
}

Status slice_to_inputs(Converter& c, Node& node) {
  node.inputs.resize(1);
  for (const char* attribute : {"starts", "ends", "axes"}) {
    if (!node.has_attribute(attribute)) continue;  // starts and ends are required: Slice checks
    FOVEA_ASSIGN_OR_RETURN(const std::vector<std::int64_t> values, node.attr_ints(attribute));
    node.inputs.push_back(c.add_constant(node, attribute, int64_list(values)));
    node.attributes.erase(attribute);
  }
  return Status::ok();
}

Status split_input_to_attribute(Converter& c, Node& node) {
  if (node.inputs.size() < 2 || node.inputs[1] == kNoValue) return Status::ok();
  const Tensor* split = c.known_value(node.inputs[1]);
  if (split == nullptr) return c.refuse(node, "its split input is computed at run time");
  node.attributes["split"] = Attribute{.kind = Attribute::Kind::kInts, .ints = integers_of(*split)};
  node.inputs.resize(1);
  return Status::ok();
}

Status topk_k_to_input(Converter& c, Node& node) {
  FOVEA_ASSIGN_OR_RETURN(const std::int64_t k, node.attr_int("k"));
  node.inputs.push_back(c.add_constant(node, "k", int64_list({k})));
  node.attributes.erase("k");
  return Status::ok();
}

// Resize-11 in the form Upsample and Resize-10 had: no roi, asymmetric coordinates, and for
// nearest the rounding `nearest_mode`.
Status make_resize_11(Converter& c, Node& node, ValueId scales, const std::string& nearest_mode) {
  FOVEA_TRY(c.require_data_input(node));
  node.op_type = "Resize";
  node.inputs = {node.inputs[0], c.add_constant(node, "roi", Tensor::allocate(DataType::kFloat32, {0})),
                 scales};
  node.attributes["coordinate_transformation_mode"] =
      Attribute{.kind = Attribute::Kind::kString, .s = "asymmetric"};
  node.attributes["nearest_mode"] = Attribute{.kind = Attribute::Kind::kString, .s = nearest_mode};
  return Status::ok();
}

// Upsample's scales are at least 1, so its nearest rounding (onnxruntime's: down when upsampling)
// is Resize-11's "floor".
Status upsample_to_resize(Converter& c, Node& node) {
  ValueId scales = node.inputs.size() > 1 ? node.inputs[1] : kNoValue;
  if (c.version() < 9) {
    FOVEA_ASSIGN_OR_RETURN(const std::vector<float> values, node.attr_floats("scales"));
    scales = c.add_constant(
        node, "scales",
        Tensor::from_vector<float>(DataType::kFloat32, {static_cast<std::int64_t>(values.size())}, values));
    node.attributes.erase("scales");
  }
  if (scales == kNoValue) return c.refuse(node, "it has no scales");
  return make_resize_11(c, node, scales, "floor");
}

// Resize-10's nearest mode rounds down when upsampling and up when downsampling (onnxruntime's
// rule, which the kernels followed); Resize-11 has one rounding for every axis, so the scales must
// be known at load and must not both up- and downsample.
Status resize_10_to_11(Converter& c, Node& node) {
  const ValueId scales = node.inputs.size() > 1 ? node.inputs[1] : kNoValue;
  if (scales == kNoValue) return c.refuse(node, "it has no scales");
  FOVEA_ASSIGN_OR_RETURN(const std::string mode, node.attr_string("mode", std::string("nearest")));
  std::string rounding = "floor";
  if (mode == "nearest") {
    const Tensor* values = c.known_value(scales);
    if (values == nullptr) {
      return c.refuse(node,
                      "nearest rounding depends on whether it downsamples, and its scales are "
                      "computed at run time");
    }
    bool up = false;
    bool down = false;
    for (std::int64_t i = 0; i < values->numel(); ++i) {
      up = up || number_at(*values, i) > 1;
      down = down || number_at(*values, i) < 1;
    }
    if (up && down)
      return c.refuse(node, "nearest rounding differs between its upsampled and downsampled axes");
    rounding = down ? "ceil" : "floor";
  }
  return make_resize_11(c, node, scales, rounding);
}

}  // namespace

int op_version(std::string_view op_type, int opset) {
  for (const OpHistory& history : kHistories) {
    if (history.op_type != op_type) continue;
    int version = 0;
    for (int since : history.versions) {
      if (since != 0 && since <= opset) version = since;
    }
    return version;
  }
  return 0;
}

namespace {

// kMovedAttributes' check, for a model of any opset: the op's version at the model's opset takes
// the attribute as an input once the opset reaches the version that moved it.
Status refuse_moved_attributes(const Graph& graph, int opset) {
  for (const Node& node : graph.nodes) {
    if (!node.domain.empty()) continue;
    for (const MovedAttribute& moved : kMovedAttributes) {
      if (moved.op_type == node.op_type && opset >= moved.input_since &&
          node.has_attribute(moved.attribute)) {
        return make_error(StatusCode::kInvalidArgument, graph.where(), node.describe(), ": attribute '",
                          moved.attribute, "' is not one of ", node.op_type, "'s at opset ",
                          std::to_string(opset), ": from opset ", std::to_string(moved.input_since),
                          " it is an input");
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status convert_old_opsets(Graph& graph) {
  const auto opset = graph.opsets.find("");
  if (opset == graph.opsets.end()) return Status::ok();
  FOVEA_TRY(refuse_moved_attributes(graph, opset->second));
  if (opset->second >= kKernelOpset) return Status::ok();
  return Converter(graph).run();
}

}  // namespace fovea::runtime
