#include "runtime/onnx_writer.h"

#include <set>

#include "onnx.pb.h"

namespace fovea::runtime {

namespace {

// The IR version written: 8 holds every type and attribute fovea has.
constexpr std::int64_t kWrittenIrVersion = 8;

void set_value_info(onnx::ValueInfoProto* info, const Value& value) {
  info->set_name(value.name);
  auto* tensor_type = info->mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(data_type_to_onnx(value.type.dtype));
  if (!value.type.dims) return;
  auto* shape = tensor_type->mutable_shape();
  for (const Dim& d : *value.type.dims) {
    auto* dim = shape->add_dim();
    if (d.known()) {
      dim->set_dim_value(d.value);
    } else if (!d.symbol.empty()) {
      dim->set_dim_param(d.symbol);
    }
  }
}

void set_tensor(onnx::TensorProto* proto, const std::string& name, const Tensor& tensor) {
  proto->set_name(name);
  proto->set_data_type(data_type_to_onnx(tensor.dtype()));
  for (std::int64_t d : tensor.shape()) proto->add_dims(d);
  proto->set_raw_data(tensor.raw(), tensor.bytes());
}

Status set_attribute(onnx::AttributeProto* proto, const std::string& key, const Attribute& a,
                     const Node& node) {
  proto->set_name(key);
  switch (a.kind) {
    case Attribute::Kind::kInt:
      proto->set_type(onnx::AttributeProto_AttributeType_INT);
      proto->set_i(a.i);
      break;
    case Attribute::Kind::kFloat:
      proto->set_type(onnx::AttributeProto_AttributeType_FLOAT);
      proto->set_f(a.f);
      break;
    case Attribute::Kind::kString:
      proto->set_type(onnx::AttributeProto_AttributeType_STRING);
      proto->set_s(a.s);
      break;
    case Attribute::Kind::kInts:
      proto->set_type(onnx::AttributeProto_AttributeType_INTS);
      for (std::int64_t v : a.ints) proto->add_ints(v);
      break;
    case Attribute::Kind::kFloats:
      proto->set_type(onnx::AttributeProto_AttributeType_FLOATS);
      for (float v : a.floats) proto->add_floats(v);
      break;
    case Attribute::Kind::kStrings:
      proto->set_type(onnx::AttributeProto_AttributeType_STRINGS);
      for (const std::string& v : a.strings) proto->add_strings(v);
      break;
    case Attribute::Kind::kTensor:
      proto->set_type(onnx::AttributeProto_AttributeType_TENSOR);
      set_tensor(proto->mutable_t(), key, a.t);
      break;
    case Attribute::Kind::kGraph:
      return make_error(StatusCode::kUnsupported, node.describe(), ": graph attribute '", key,
                        "' cannot be written");
  }
  return Status::ok();
}

}  // namespace

int data_type_to_onnx(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return onnx::TensorProto_DataType_FLOAT;
    case DataType::kFloat16: return onnx::TensorProto_DataType_FLOAT16;
    case DataType::kFloat64: return onnx::TensorProto_DataType_DOUBLE;
    case DataType::kInt64: return onnx::TensorProto_DataType_INT64;
    case DataType::kInt32: return onnx::TensorProto_DataType_INT32;
    case DataType::kInt8: return onnx::TensorProto_DataType_INT8;
    case DataType::kUInt8: return onnx::TensorProto_DataType_UINT8;
    case DataType::kBool: return onnx::TensorProto_DataType_BOOL;
  }
  return onnx::TensorProto_DataType_UNDEFINED;
}

Result<std::string> serialize_onnx(const Graph& graph, const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  for (const Value& value : graph.values) {
    if (!names.insert(value.name).second) {
      return make_error(StatusCode::kInternal, graph.where(), "two values are named '", value.name, "'");
    }
  }
  onnx::ModelProto model;
  model.set_ir_version(kWrittenIrVersion);
  model.set_producer_name("fovea");
  std::set<std::string> domains;
  for (const Node& node : graph.nodes) domains.insert(node.domain);
  for (const std::string& domain : domains) {
    auto* opset = model.add_opset_import();
    opset->set_domain(domain);
    const auto it = graph.opsets.find(domain);
    opset->set_version(it != graph.opsets.end() ? it->second : 1);
  }
  for (const auto& [key, value] : metadata) {
    auto* prop = model.add_metadata_props();
    prop->set_key(key);
    prop->set_value(value);
  }
  auto* proto = model.mutable_graph();
  proto->set_name("fovea-plan");
  for (const Value& value : graph.values) {
    if (value.constant) set_tensor(proto->add_initializer(), value.name, *value.constant);
  }
  for (ValueId id : graph.inputs) set_value_info(proto->add_input(), graph.value(id));
  for (ValueId id : graph.outputs) set_value_info(proto->add_output(), graph.value(id));
  for (const Node& node : graph.nodes) {
    auto* n = proto->add_node();
    n->set_name(node.name);
    n->set_op_type(node.op_type);
    n->set_domain(node.domain);
    for (ValueId in : node.inputs) n->add_input(in == kNoValue ? std::string() : graph.value(in).name);
    for (ValueId out : node.outputs) n->add_output(out == kNoValue ? std::string() : graph.value(out).name);
    for (const auto& [key, attribute] : node.attributes) {
      FOVEA_TRY(set_attribute(n->add_attribute(), key, attribute, node));
    }
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    return make_error(StatusCode::kInternal, graph.where(), "the plan does not serialize (over 2 GiB?)");
  }
  return bytes;
}

}  // namespace fovea::runtime
