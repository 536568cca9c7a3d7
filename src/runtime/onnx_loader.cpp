#include "runtime/onnx_loader.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <type_traits>
#include <utility>

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "core/input_file.h"
#include "onnx.pb.h"
#include "runtime/opset_conversion.h"
#include "runtime/shape_inference.h"

namespace fovea::runtime {

namespace {

// Protobuf parses at most 2 GiB: a larger file is refused by its size, before it is read.
constexpr std::uintmax_t kMaxProtobufBytes = static_cast<std::uintmax_t>(std::numeric_limits<int>::max());

Status protobuf_too_large(const std::string& name) {
  return make_error(StatusCode::kUnsupported, name,
                    ": the model protobuf is over 2 GiB; store the weights as external data");
}

Result<std::string> read_file(const std::filesystem::path& path) {
  Result<std::string> bytes = read_regular_file(path, "model", kMaxProtobufBytes);
  if (!bytes.is_ok() && bytes.status().code() == StatusCode::kResourceExhausted) {
    return protobuf_too_large(path.string());
  }
  return bytes;
}

// The typed repeated fields of TensorProto, and the element types ONNX lets each carry.
enum class RepeatedField { kFloat, kDouble, kInt32, kInt64, kUInt64 };

constexpr std::string_view repeated_field_name(RepeatedField field) {
  switch (field) {
    case RepeatedField::kFloat: return "float_data";
    case RepeatedField::kDouble: return "double_data";
    case RepeatedField::kInt32: return "int32_data";
    case RepeatedField::kInt64: return "int64_data";
    case RepeatedField::kUInt64: return "uint64_data";
  }
  return "?";
}

// int32_data carries every type narrower than 32 bits (float16 as its bit pattern), as onnx.proto
// specifies; a value in the wrong field would be converted silently, or out of range, so it is refused.
constexpr RepeatedField repeated_field_for(DataType type) {
  switch (type) {
    case DataType::kFloat32: return RepeatedField::kFloat;
    case DataType::kFloat64: return RepeatedField::kDouble;
    case DataType::kInt64: return RepeatedField::kInt64;
    case DataType::kFloat16:
    case DataType::kInt32:
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kBool: return RepeatedField::kInt32;
  }
  return RepeatedField::kInt32;
}

template <typename To, typename From>
bool store_in_range(From value, To* dst) {
  if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
    if (!std::in_range<To>(value)) {
      return false;
    }
  }
  *dst = static_cast<To>(value);
  return true;
}

// Copies one typed repeated field into `out`; `field` has already been matched to out's type.
template <typename Field>
Status copy_repeated(const Field& field, Tensor& out, const std::string& what) {
  if (static_cast<std::int64_t>(field.size()) != out.numel()) {
    return make_error(StatusCode::kCorruptData, what, ": holds ", std::to_string(field.size()),
                      " values for ", std::to_string(out.numel()), " elements");
  }
  for (int i = 0; i < field.size(); ++i) {
    const auto v = field.Get(i);
    bool ok = true;
    switch (out.dtype()) {
      case DataType::kFloat32: ok = store_in_range(v, &out.data<float>()[i]); break;
      case DataType::kFloat64: ok = store_in_range(v, &out.data<double>()[i]); break;
      case DataType::kInt64: ok = store_in_range(v, &out.data<std::int64_t>()[i]); break;
      case DataType::kInt32: ok = store_in_range(v, &out.data<std::int32_t>()[i]); break;
      case DataType::kInt8: ok = store_in_range(v, &out.data<std::int8_t>()[i]); break;
      case DataType::kUInt8: ok = store_in_range(v, &out.data<std::uint8_t>()[i]); break;
      case DataType::kBool: ok = store_in_range(v, &out.data<std::uint8_t>()[i]) && (v == 0 || v == 1); break;
      case DataType::kFloat16: {
        std::uint16_t bits = 0;
        ok = store_in_range(v, &bits);
        out.data<Half>()[i] = Half{bits};
        break;
      }
    }
    if (!ok) {
      return make_error(StatusCode::kCorruptData, what, ": value ", fmt::format("{}", v), " at index ",
                        std::to_string(i), " does not fit ", data_type_name(out.dtype()));
    }
  }
  return Status::ok();
}

std::optional<RepeatedField> nonempty_repeated_field(const onnx::TensorProto& proto) {
  if (proto.float_data_size() > 0) return RepeatedField::kFloat;
  if (proto.double_data_size() > 0) return RepeatedField::kDouble;
  if (proto.int32_data_size() > 0) return RepeatedField::kInt32;
  if (proto.int64_data_size() > 0) return RepeatedField::kInt64;
  if (proto.uint64_data_size() > 0) return RepeatedField::kUInt64;
  return std::nullopt;
}

Status copy_typed_data(const onnx::TensorProto& proto, RepeatedField field, Tensor& out,
                       const std::string& what) {
  if (field != repeated_field_for(out.dtype())) {
    return make_error(StatusCode::kCorruptData, what, ": ", repeated_field_name(field), " cannot hold ",
                      data_type_name(out.dtype()), " values (ONNX stores them in ",
                      repeated_field_name(repeated_field_for(out.dtype())), ")");
  }
  switch (field) {
    case RepeatedField::kFloat: return copy_repeated(proto.float_data(), out, what);
    case RepeatedField::kDouble: return copy_repeated(proto.double_data(), out, what);
    case RepeatedField::kInt32: return copy_repeated(proto.int32_data(), out, what);
    case RepeatedField::kInt64: return copy_repeated(proto.int64_data(), out, what);
    case RepeatedField::kUInt64: return copy_repeated(proto.uint64_data(), out, what);
  }
  return Status::ok();
}

class Loader {
 public:
  Loader(std::string name, std::filesystem::path base_dir, const LoadOptions& options)
      : name_(std::move(name)), base_dir_(std::move(base_dir)), options_(options) {}

  Result<Model> load(const onnx::ModelProto& proto);
  Result<Tensor> tensor(const onnx::TensorProto& proto, const std::string& what);

 private:
  template <typename... Parts>
  Status error(StatusCode code, Parts&&... parts) const {
    return make_error(code, name_, ": ", std::forward<Parts>(parts)...);
  }

  Status check_versions(const onnx::ModelProto& proto, Model& model) const;
  Result<Shape> checked_shape(const google::protobuf::RepeatedField<std::int64_t>& dims,
                              const std::string& what) const;
  Status read_external(const onnx::TensorProto& proto, Tensor& out, const std::string& what) const;
  Result<ValueType> value_type(const onnx::ValueInfoProto& info) const;
  Result<Attribute> attribute(const onnx::AttributeProto& proto, const std::string& what);
  // The model's graph, or a node's subgraph: a subgraph reads names no value of its own has from
  // the graphs around it (Graph::captured).
  enum class Scope { kModel, kSubgraph };
  Status add_initializers(const onnx::GraphProto& proto, Graph& graph);
  Status add_inputs(const onnx::GraphProto& proto, Graph& graph, Scope scope) const;
  Status add_nodes(const onnx::GraphProto& proto, Graph& graph, Scope scope);
  Status add_outputs(const onnx::GraphProto& proto, Graph& graph, Scope scope) const;
  Result<std::shared_ptr<const Graph>> subgraph(const onnx::GraphProto& proto, const std::string& what);

  std::string name_;
  std::filesystem::path base_dir_;
  LoadOptions options_;
  std::uint64_t total_tensor_bytes_ = 0;
  std::map<std::string, int, std::less<>> opsets_;  // the model's, which its subgraphs share
  int subgraph_depth_ = 0;
};

// Subgraphs within subgraphs: real models nest a few levels; a file nesting thousands would take
// the loader's stack.
constexpr int kMaxSubgraphDepth = 16;

Status Loader::check_versions(const onnx::ModelProto& proto, Model& model) const {
  model.ir_version = proto.ir_version();
  for (const auto& opset : proto.opset_import()) {
    const std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    model.graph.opsets[domain] = static_cast<int>(opset.version());
  }
  if (proto.opset_import_size() == 0) {
    return error(StatusCode::kCorruptData, "the model imports no opset");
  }
  model.default_opset = model.graph.opsets.count("") ? model.graph.opsets.at("") : 0;
  if (!options_.check_versions) {
    return Status::ok();
  }
  if (model.ir_version < kMinIrVersion || model.ir_version > kMaxIrVersion) {
    return error(StatusCode::kUnsupported, fmt::format("IR version {} is outside the supported range {}-{}",
                                                       model.ir_version, kMinIrVersion, kMaxIrVersion));
  }
  if (model.graph.opsets.count("") && (model.default_opset < kMinOpset || model.default_opset > kMaxOpset)) {
    return error(StatusCode::kUnsupported,
                 fmt::format("opset {} of the default domain is outside the supported "
                             "range {}-{}",
                             model.default_opset, kMinOpset, kMaxOpset));
  }
  return Status::ok();
}

Result<Shape> Loader::checked_shape(const google::protobuf::RepeatedField<std::int64_t>& dims,
                                    const std::string& what) const {
  Shape shape;
  for (std::int64_t d : dims) {
    if (d < 0) {
      return error(StatusCode::kCorruptData, what, ": negative dimension ", std::to_string(d));
    }
    if (d > kMaxTensorDim) {
      return error(StatusCode::kUnsupported, what, ": dimension ", std::to_string(d), " is over 2^31");
    }
    shape.push_back(d);
  }
  // Every dim is at most 2^31, so checking the running product against 2^62 before each multiply
  // keeps the arithmetic in range.
  std::int64_t count = 1;
  for (std::int64_t d : shape) {
    if (d != 0 && count > (std::int64_t{1} << 62) / d) {
      return error(StatusCode::kUnsupported, what, ": ", shape_string(shape), " has too many elements");
    }
    count *= d;
  }
  return shape;
}

Status Loader::read_external(const onnx::TensorProto& proto, Tensor& out, const std::string& what) const {
  std::string location;
  std::uint64_t offset = 0;
  std::optional<std::uint64_t> length;
  for (const auto& entry : proto.external_data()) {
    if ((entry.key() == "offset" || entry.key() == "length") && entry.value().starts_with("-")) {
      return error(StatusCode::kCorruptData, what, ": external_data ", entry.key(), "='", entry.value(),
                   "' is negative");
    }
    try {
      if (entry.key() == "location") location = entry.value();
      if (entry.key() == "offset") offset = std::stoull(entry.value());
      if (entry.key() == "length") length = std::stoull(entry.value());
    } catch (const std::exception&) {
      return error(StatusCode::kCorruptData, what, ": external_data ", entry.key(), "='", entry.value(),
                   "' is not a number");
    }
  }
  // The location must stay inside the model's folder, symbolic links resolved: a model file must
  // not read arbitrary files (a downloaded archive may carry a link to /etc/passwd).
  const std::filesystem::path relative = std::filesystem::path(location).lexically_normal();
  std::error_code folder_error, file_error;
  const std::filesystem::path folder =
      std::filesystem::weakly_canonical(base_dir_.empty() ? "." : base_dir_, folder_error);
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(base_dir_ / relative, file_error);
  const std::filesystem::path inside = resolved.lexically_relative(folder);
  if (location.empty() || relative.is_absolute() || folder_error || file_error || inside.empty() ||
      *inside.begin() == "..") {
    return error(StatusCode::kCorruptData, what, ": external data location '", location,
                 "' must be a relative path inside the model's folder (symbolic links resolved)");
  }
  if (length && *length != out.bytes()) {
    return error(StatusCode::kCorruptData, what, ": external data length ", std::to_string(*length),
                 " does not match ", std::to_string(out.bytes()), " bytes of ", shape_string(out.shape()));
  }
  const std::filesystem::path file_path = base_dir_ / relative;
  Result<std::uintmax_t> size = regular_file_size(file_path, "external data file");
  if (!size.is_ok()) return error(size.status().code(), what, ": ", size.status().message());
  std::ifstream file(file_path, std::ios::binary);
  if (!file) {
    return error(StatusCode::kNotFound, what, ": external data file ", file_path.string(),
                 " cannot be opened");
  }
  const std::uint64_t file_size = *size;
  if (offset > file_size || file_size - offset < out.bytes()) {
    return error(StatusCode::kCorruptData, what, ": external data file ", file_path.string(),
                 " is too short (", std::to_string(file_size), " bytes, need ",
                 std::to_string(offset + out.bytes()), ")");
  }
  file.seekg(static_cast<std::streamoff>(offset));
  file.read(static_cast<char*>(out.raw()), static_cast<std::streamsize>(out.bytes()));
  if (!file) {
    return error(StatusCode::kIoError, what, ": reading external data from ", file_path.string(), " failed");
  }
  return Status::ok();
}

Result<Tensor> Loader::tensor(const onnx::TensorProto& proto, const std::string& what) {
  auto dtype = data_type_from_onnx(proto.data_type());
  if (!dtype.is_ok()) {
    return error(dtype.status().code(), what, ": ", dtype.status().message());
  }
  FOVEA_ASSIGN_OR_RETURN(Shape shape, checked_shape(proto.dims(), what));
  const auto bytes = static_cast<std::uint64_t>(element_count(shape)) * data_type_size(*dtype);
  total_tensor_bytes_ += bytes;
  if (total_tensor_bytes_ > options_.max_total_tensor_bytes) {
    return error(StatusCode::kResourceExhausted, what, ": tensors total over the limit of ",
                 std::to_string(options_.max_total_tensor_bytes), " bytes");
  }
  Tensor out = Tensor::allocate(*dtype, std::move(shape));
  if (proto.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    FOVEA_TRY(read_external(proto, out, what));
  } else if (proto.has_raw_data()) {
    if (proto.raw_data().size() != out.bytes()) {
      return error(StatusCode::kCorruptData, what, ": raw_data has ", std::to_string(proto.raw_data().size()),
                   " bytes, expected ", std::to_string(out.bytes()), " for ", shape_string(out.shape()));
    }
    std::memcpy(out.raw(), proto.raw_data().data(), out.bytes());
  } else if (const auto field = nonempty_repeated_field(proto)) {
    FOVEA_TRY(copy_typed_data(proto, *field, out, name_ + ": " + what));
  } else if (out.numel() != 0) {
    return error(StatusCode::kCorruptData, what, ": holds no data for ", shape_string(out.shape()));
  }
  return out;
}

Result<ValueType> Loader::value_type(const onnx::ValueInfoProto& info) const {
  const std::string what = "value '" + info.name() + "'";
  if (!info.type().has_tensor_type()) {
    return error(StatusCode::kUnsupported, what, ": only tensor types are supported");
  }
  const auto& tensor_type = info.type().tensor_type();
  auto dtype = data_type_from_onnx(tensor_type.elem_type());
  if (!dtype.is_ok()) {
    return error(dtype.status().code(), what, ": ", dtype.status().message());
  }
  ValueType type{*dtype, std::nullopt};
  if (tensor_type.has_shape()) {
    Dims dims;
    for (const auto& d : tensor_type.shape().dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0 || d.dim_value() > kMaxTensorDim) {
          return error(StatusCode::kUnsupported, what, ": dimension ", std::to_string(d.dim_value()),
                       " is negative or over 2^31");
        }
        dims.push_back(Dim::known_size(d.dim_value()));
      } else {
        dims.push_back(Dim::unknown(d.dim_param()));
      }
    }
    type.dims = std::move(dims);
  }
  return type;
}

Result<Attribute> Loader::attribute(const onnx::AttributeProto& proto, const std::string& what) {
  Attribute a;
  using onnx::AttributeProto;
  switch (proto.type()) {
    case AttributeProto::INT:
      a.kind = Attribute::Kind::kInt;
      a.i = proto.i();
      break;
    case AttributeProto::FLOAT:
      a.kind = Attribute::Kind::kFloat;
      a.f = proto.f();
      break;
    case AttributeProto::STRING:
      a.kind = Attribute::Kind::kString;
      a.s = proto.s();
      break;
    case AttributeProto::INTS:
      a.kind = Attribute::Kind::kInts;
      a.ints.assign(proto.ints().begin(), proto.ints().end());
      break;
    case AttributeProto::FLOATS:
      a.kind = Attribute::Kind::kFloats;
      a.floats.assign(proto.floats().begin(), proto.floats().end());
      break;
    case AttributeProto::STRINGS:
      a.kind = Attribute::Kind::kStrings;
      a.strings.assign(proto.strings().begin(), proto.strings().end());
      break;
    case AttributeProto::TENSOR: {
      a.kind = Attribute::Kind::kTensor;
      FOVEA_ASSIGN_OR_RETURN(a.t, tensor(proto.t(), what + " attribute '" + proto.name() + "'"));
      break;
    }
    case AttributeProto::GRAPH: {
      a.kind = Attribute::Kind::kGraph;
      FOVEA_ASSIGN_OR_RETURN(a.g, subgraph(proto.g(), what + " attribute '" + proto.name() + "'"));
      break;
    }
    case AttributeProto::GRAPHS: a.kind = Attribute::Kind::kGraph; break;
    default:
      return error(StatusCode::kUnsupported, what, ": attribute '", proto.name(), "' has unsupported type ",
                   AttributeProto::AttributeType_IsValid(proto.type())
                       ? AttributeProto::AttributeType_Name(proto.type())
                       : std::to_string(static_cast<int>(proto.type())));
  }
  return a;
}

Status Loader::add_initializers(const onnx::GraphProto& proto, Graph& graph) {
  for (const auto& init : proto.initializer()) {
    if (init.name().empty()) {
      return error(StatusCode::kCorruptData, "an initializer has no name");
    }
    if (graph.find_value(init.name()) != kNoValue) {
      return error(StatusCode::kCorruptData, "initializer '", init.name(), "' is defined twice");
    }
    FOVEA_ASSIGN_OR_RETURN(Tensor t, tensor(init, "initializer '" + init.name() + "'"));
    graph.add_constant(init.name(), std::move(t));
  }
  if (proto.sparse_initializer_size() > 0) {
    return error(StatusCode::kUnsupported, "sparse initializers are not supported");
  }
  return Status::ok();
}

Status Loader::add_inputs(const onnx::GraphProto& proto, Graph& graph, Scope scope) const {
  for (const auto& input : proto.input()) {
    // Before IR 4, initializers were also listed as inputs; such an input is the constant.
    const ValueId existing = graph.find_value(input.name());
    if (existing != kNoValue && graph.is_constant(existing)) {
      continue;
    }
    if (existing != kNoValue) {
      return error(StatusCode::kCorruptData, "input '", input.name(), "' is listed twice");
    }
    if (scope == Scope::kSubgraph && !input.has_type()) {
      graph.inputs.push_back(graph.add_value(input.name(), ValueType{}));  // typed by what the run passes
      continue;
    }
    FOVEA_ASSIGN_OR_RETURN(ValueType type, value_type(input));
    graph.inputs.push_back(graph.add_value(input.name(), std::move(type)));
  }
  return Status::ok();
}

Status Loader::add_nodes(const onnx::GraphProto& proto, Graph& graph, Scope scope) {
  // Names of node outputs, so that an input nobody produces is reported before shape inference.
  std::set<std::string, std::less<>> produced;
  for (const auto& n : proto.node()) {
    for (const auto& out : n.output()) {
      if (!out.empty() && !produced.insert(out).second) {
        return error(StatusCode::kCorruptData, "value '", out, "' is produced by more than one node");
      }
      if (!out.empty() && graph.find_value(out) != kNoValue) {
        return error(StatusCode::kCorruptData, "value '", out,
                     "' is both a node output and an input or initializer");
      }
    }
  }
  for (int index = 0; index < proto.node_size(); ++index) {
    const auto& n = proto.node(index);
    Node node;
    node.op_type = n.op_type();
    node.name = n.name().empty() ? fmt::format("{}_{}", n.op_type(), index) : n.name();
    node.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    auto opset = graph.opsets.find(node.domain);
    if (opset == graph.opsets.end()) {
      return error(StatusCode::kCorruptData, node.describe(), ": its domain '", node.domain,
                   "' is not imported");
    }
    node.opset = opset->second;
    for (const auto& attr : n.attribute()) {
      FOVEA_ASSIGN_OR_RETURN(node.attributes[attr.name()], attribute(attr, node.describe()));
    }
    const auto resolve = [&](const std::string& in) -> Result<ValueId> {
      ValueId id = graph.find_value(in);
      if (id != kNoValue) return id;
      if (produced.count(in) != 0) return graph.add_value(in, ValueType{});
      if (scope == Scope::kModel) {
        return error(StatusCode::kNotFound, node.describe(), ": input '", in,
                     "' is not a graph input, an initializer or any node's output (missing initializer?)");
      }
      id = graph.add_value(in, ValueType{});
      graph.captured.push_back(id);
      return id;
    };
    for (const auto& in : n.input()) {
      if (in.empty()) {
        node.inputs.push_back(kNoValue);
        continue;
      }
      FOVEA_ASSIGN_OR_RETURN(const ValueId id, resolve(in));
      node.inputs.push_back(id);
    }
    // The outer values its subgraphs read, after its own inputs (Graph::captured).
    for (const auto& [key, attribute] : node.attributes) {
      if (!attribute.g) continue;
      for (const ValueId captured : attribute.g->captured) {
        FOVEA_ASSIGN_OR_RETURN(const ValueId id, resolve(attribute.g->value(captured).name));
        if (std::find(node.inputs.begin() + n.input_size(), node.inputs.end(), id) == node.inputs.end()) {
          node.inputs.push_back(id);
        }
      }
    }
    for (const auto& out : n.output()) {
      if (out.empty()) {
        node.outputs.push_back(kNoValue);
        continue;
      }
      const ValueId existing = graph.find_value(out);
      node.outputs.push_back(existing != kNoValue ? existing : graph.add_value(out, ValueType{}));
    }
    graph.nodes.push_back(std::move(node));
  }
  return Status::ok();
}

Status Loader::add_outputs(const onnx::GraphProto& proto, Graph& graph, Scope scope) const {
  for (const auto& output : proto.output()) {
    ValueId id = graph.find_value(output.name());
    if (id == kNoValue && scope == Scope::kSubgraph) {
      id = graph.add_value(output.name(), ValueType{});  // a branch that gives an outer value back
      graph.captured.push_back(id);
    }
    if (id == kNoValue) {
      return error(StatusCode::kNotFound, "graph output '", output.name(), "' is not produced by any node");
    }
    if (scope == Scope::kSubgraph && !output.has_type()) {
      graph.outputs.push_back(id);  // a subgraph's outputs may leave their types to inference
      continue;
    }
    FOVEA_ASSIGN_OR_RETURN(ValueType declared, value_type(output));
    Value& value = graph.value(id);
    if (value.producer >= 0 || !value.constant) {
      value.type = std::move(declared);  // a hint until shape inference; checked against it there
    }
    graph.outputs.push_back(id);
  }
  if (graph.outputs.empty()) {
    return error(StatusCode::kCorruptData, "the graph has no outputs");
  }
  return Status::ok();
}

Result<std::shared_ptr<const Graph>> Loader::subgraph(const onnx::GraphProto& proto,
                                                      const std::string& what) {
  if (subgraph_depth_ >= kMaxSubgraphDepth) {
    return error(StatusCode::kUnsupported, what, ": subgraphs nested more than ",
                 std::to_string(kMaxSubgraphDepth), " deep");
  }
  ++subgraph_depth_;
  struct Leave {
    int& depth;
    ~Leave() { --depth; }
  } leave{subgraph_depth_};
  auto graph = std::make_shared<Graph>();
  graph->model_path = name_;
  graph->opsets = opsets_;
  // Errors inside say which subgraph: "m.onnx: node 'if' (If) attribute 'then_branch': node ...".
  const auto in_subgraph = [&](const Status& status) {
    if (status.is_ok()) return status;
    std::string_view message = status.message();
    if (message.starts_with(name_ + ": ")) message.remove_prefix(name_.size() + 2);
    return error(status.code(), what, ": ", message);
  };
  FOVEA_TRY(in_subgraph(add_initializers(proto, *graph)));
  FOVEA_TRY(in_subgraph(add_inputs(proto, *graph, Scope::kSubgraph)));
  FOVEA_TRY(in_subgraph(add_nodes(proto, *graph, Scope::kSubgraph)));
  graph->index_producers();
  FOVEA_TRY(in_subgraph(add_outputs(proto, *graph, Scope::kSubgraph)));
  FOVEA_TRY(in_subgraph(graph->sort_topologically()));
  FOVEA_TRY(in_subgraph(convert_old_opsets(*graph)));
  return std::shared_ptr<const Graph>(std::move(graph));
}

Result<Model> Loader::load(const onnx::ModelProto& proto) {
  Model model;
  model.graph.model_path = name_;
  model.producer =
      proto.producer_name() + (proto.producer_version().empty() ? "" : " " + proto.producer_version());
  FOVEA_TRY(check_versions(proto, model));
  if (!proto.has_graph()) {
    return error(StatusCode::kCorruptData, "the model has no graph");
  }
  Graph& graph = model.graph;
  opsets_ = graph.opsets;
  FOVEA_TRY(add_initializers(proto.graph(), graph));
  FOVEA_TRY(add_inputs(proto.graph(), graph, Scope::kModel));
  FOVEA_TRY(add_nodes(proto.graph(), graph, Scope::kModel));
  graph.index_producers();
  FOVEA_TRY(add_outputs(proto.graph(), graph, Scope::kModel));
  FOVEA_TRY(graph.sort_topologically());
  FOVEA_TRY(convert_old_opsets(graph));
  FOVEA_TRY(infer_shapes(graph, FoldConstants::kNo));
  return model;
}

}  // namespace

Result<DataType> data_type_from_onnx(std::int64_t onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto_DataType_FLOAT: return DataType::kFloat32;
    case onnx::TensorProto_DataType_FLOAT16: return DataType::kFloat16;
    case onnx::TensorProto_DataType_DOUBLE: return DataType::kFloat64;
    case onnx::TensorProto_DataType_INT64: return DataType::kInt64;
    case onnx::TensorProto_DataType_INT32: return DataType::kInt32;
    case onnx::TensorProto_DataType_INT8: return DataType::kInt8;
    case onnx::TensorProto_DataType_UINT8: return DataType::kUInt8;
    case onnx::TensorProto_DataType_BOOL: return DataType::kBool;
    default: break;
  }
  const bool known = onnx_type >= 0 && onnx_type <= std::numeric_limits<int>::max() &&
                     onnx::TensorProto_DataType_IsValid(static_cast<int>(onnx_type));
  const std::string name =
      known ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(onnx_type))
            : "code " + std::to_string(onnx_type);
  return make_error(StatusCode::kUnsupported, "unsupported element type ", name);
}

Result<Model> parse_onnx(std::string_view bytes, const std::string& name,
                         const std::filesystem::path& base_dir, const LoadOptions& options) {
  if (bytes.empty()) {
    return make_error(StatusCode::kCorruptData, name, ": empty file, not an ONNX model");
  }
  if (bytes.size() > kMaxProtobufBytes) return protobuf_too_large(name);
  onnx::ModelProto proto;
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
  if (!proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    return make_error(StatusCode::kCorruptData, name,
                      ": not an ONNX model (the protobuf does not parse: truncated or another format)");
  }
  return Loader(name, base_dir, options).load(proto);
}

Result<Tensor> parse_onnx_tensor(std::string_view bytes, const std::string& name) {
  onnx::TensorProto proto;
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return make_error(StatusCode::kCorruptData, name, ": not a serialized ONNX TensorProto");
  }
  return Loader(name, {}, LoadOptions{}).tensor(proto, "tensor '" + proto.name() + "'");
}

Result<Model> load_onnx(const std::filesystem::path& path, const LoadOptions& options) {
  FOVEA_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  return parse_onnx(bytes, path.string(), path.parent_path(), options);
}

}  // namespace fovea::runtime
