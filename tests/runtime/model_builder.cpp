#include "runtime/model_builder.h"

#include <fstream>

#include "onnx.pb.h"
#include "runtime/onnx_writer.h"

namespace fovea::runtime::testing {

namespace {

void set_value_info(onnx::ValueInfoProto* info, const std::string& name, DataType dtype,
                    const std::vector<std::int64_t>& dims) {
  info->set_name(name);
  auto* tensor_type = info->mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(data_type_to_onnx(dtype));
  auto* shape = tensor_type->mutable_shape();
  for (std::int64_t d : dims) {
    if (d >= 0) {
      shape->add_dim()->set_dim_value(d);
    } else {
      shape->add_dim()->set_dim_param("N");
    }
  }
}

}  // namespace

ModelBuilder::ModelBuilder(int opset, int ir_version) : model_(std::make_unique<onnx::ModelProto>()) {
  model_->set_ir_version(ir_version);
  model_->set_producer_name("fovea-tests");
  auto* import = model_->add_opset_import();
  import->set_domain("");
  import->set_version(opset);
  model_->mutable_graph()->set_name("test");
}

ModelBuilder::~ModelBuilder() = default;

ModelBuilder& ModelBuilder::input(const std::string& name, DataType dtype,
                                  const std::vector<std::int64_t>& dims) {
  set_value_info(model_->mutable_graph()->add_input(), name, dtype, dims);
  return *this;
}

ModelBuilder& ModelBuilder::output(const std::string& name, DataType dtype,
                                   const std::vector<std::int64_t>& dims) {
  set_value_info(model_->mutable_graph()->add_output(), name, dtype, dims);
  return *this;
}

ModelBuilder& ModelBuilder::initializer(const std::string& name, const Tensor& value) {
  auto* tensor = model_->mutable_graph()->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(data_type_to_onnx(value.dtype()));
  for (std::int64_t d : value.shape()) tensor->add_dims(d);
  tensor->set_raw_data(value.raw(), value.bytes());
  return *this;
}

ModelBuilder& ModelBuilder::external_initializer(const std::string& name, DataType dtype,
                                                 const std::vector<std::int64_t>& dims,
                                                 const std::string& file, std::uint64_t offset) {
  auto* tensor = model_->mutable_graph()->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(data_type_to_onnx(dtype));
  for (std::int64_t d : dims) tensor->add_dims(d);
  tensor->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto* location = tensor->add_external_data();
  location->set_key("location");
  location->set_value(file);
  auto* off = tensor->add_external_data();
  off->set_key("offset");
  off->set_value(std::to_string(offset));
  return *this;
}

onnx::NodeProto& ModelBuilder::node(const std::string& op_type, const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs, const std::string& name) {
  auto* node = model_->mutable_graph()->add_node();
  node->set_op_type(op_type);
  node->set_name(name.empty() ? op_type + "_" + std::to_string(model_->graph().node_size()) : name);
  for (const auto& in : inputs) node->add_input(in);
  for (const auto& out : outputs) node->add_output(out);
  return *node;
}

ModelBuilder& ModelBuilder::attr(onnx::NodeProto& node, const std::string& key, std::int64_t value) {
  auto* a = node.add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
  return *this;
}

ModelBuilder& ModelBuilder::attr(onnx::NodeProto& node, const std::string& key, float value) {
  auto* a = node.add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
  return *this;
}

ModelBuilder& ModelBuilder::attr(onnx::NodeProto& node, const std::string& key,
                                 const std::vector<std::int64_t>& values) {
  auto* a = node.add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INTS);
  for (std::int64_t v : values) a->add_ints(v);
  return *this;
}

ModelBuilder& ModelBuilder::attr(onnx::NodeProto& node, const std::string& key,
                                 const std::vector<float>& values) {
  auto* a = node.add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float v : values) a->add_floats(v);
  return *this;
}

ModelBuilder& ModelBuilder::attr(onnx::NodeProto& node, const std::string& key, const std::string& value) {
  auto* a = node.add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
  return *this;
}

std::string ModelBuilder::serialize() const {
  return model_->SerializeAsString();
}

std::filesystem::path ModelBuilder::write(const std::filesystem::path& path) const {
  std::ofstream file(path, std::ios::binary);
  file << serialize();
  return path;
}

}  // namespace fovea::runtime::testing
