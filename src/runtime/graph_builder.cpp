#include "runtime/graph_builder.h"

#include <utility>

namespace fovea::runtime {

Attribute int_attribute(std::int64_t value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInt;
  attribute.i = value;
  return attribute;
}

Attribute ints_attribute(std::vector<std::int64_t> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInts;
  attribute.ints = std::move(values);
  return attribute;
}

Tensor float32_tensor(Shape shape, const std::vector<float>& values) {
  return Tensor::from_vector<float>(DataType::kFloat32, std::move(shape), values);
}

Tensor int64_tensor(Shape shape, const std::vector<std::int64_t>& values) {
  return Tensor::from_vector<std::int64_t>(DataType::kInt64, std::move(shape), values);
}

ValueType image_type(std::int64_t channels) {
  return ValueType{DataType::kFloat32,
                   Dims{Dim::unknown("N"), Dim::known_size(channels), Dim::unknown("H"), Dim::unknown("W")}};
}

GraphBuilder::GraphBuilder(int opset) : opset_(opset) {
  graph_.opsets[""] = opset;
}

ValueId GraphBuilder::input(const std::string& name, ValueType type) {
  const ValueId id = graph_.add_value(name, std::move(type));
  graph_.inputs.push_back(id);
  return id;
}

ValueId GraphBuilder::constant(const std::string& name, Tensor tensor) {
  return graph_.add_constant(name, std::move(tensor));
}

ValueId GraphBuilder::node(const std::string& op_type, std::vector<ValueId> inputs, const std::string& output,
                           Attributes attributes) {
  const ValueId out = graph_.add_value(output, ValueType{DataType::kFloat32, std::nullopt});
  Node node;
  node.name = output;
  node.op_type = op_type;
  node.opset = opset_;
  node.inputs = std::move(inputs);
  node.outputs = {out};
  node.attributes = std::move(attributes);
  graph_.nodes.push_back(std::move(node));
  graph_.value(out).producer = static_cast<int>(graph_.nodes.size() - 1);
  return out;
}

void GraphBuilder::output(ValueId id, std::optional<ValueType> type) {
  if (type) graph_.value(id).type = std::move(*type);
  graph_.outputs.push_back(id);
}

Graph GraphBuilder::take_graph() && {
  return std::move(graph_);
}

}  // namespace fovea::runtime
