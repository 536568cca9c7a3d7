#include "runtime/op.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace fovea::runtime {

namespace {

using Registry = std::map<std::pair<std::string, std::string>, OpDef, std::less<>>;

Registry& registry() {
  static Registry ops;
  return ops;
}

}  // namespace

bool register_op(const OpDef& def) {
  FOVEA_CHECK(def.infer != nullptr && def.run != nullptr);
  const bool inserted =
      registry().emplace(std::pair{std::string(def.domain), std::string(def.op_type)}, def).second;
  FOVEA_CHECK_MSG(inserted, "an op registered twice");
  return inserted;
}

const OpDef* find_op(std::string_view domain, std::string_view op_type) {
  // ONNX allows the default domain to be spelled "ai.onnx".
  const std::string_view normalized = domain == "ai.onnx" ? std::string_view() : domain;
  auto it = registry().find(std::pair{std::string(normalized), std::string(op_type)});
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<const OpDef*> registered_ops() {
  std::vector<const OpDef*> ops;
  for (const auto& [key, def] : registry()) {
    ops.push_back(&def);
  }
  return ops;
}

InferContext::InferContext(const Graph* graph, const Node& node, std::vector<ValueType> input_types,
                           std::vector<const Tensor*> input_values)
    : graph_(graph),
      node_(node),
      input_types_(std::move(input_types)),
      input_values_(std::move(input_values)),
      outputs_(node.outputs.size()) {
  FOVEA_CHECK_MSG(input_types_.size() == node.inputs.size() && input_values_.size() == node.inputs.size(),
                  "one input type and value per node input");
}

bool InferContext::has_input(int i) const {
  return i >= 0 && i < input_count() && node_.inputs[static_cast<std::size_t>(i)] != kNoValue;
}

const ValueType& InferContext::input_type(int i) const {
  static const ValueType absent;
  return i >= 0 && i < input_count() ? input_types_[static_cast<std::size_t>(i)] : absent;
}

const Dims* InferContext::input_dims(int i) const {
  const auto& dims = input_type(i).dims;
  return dims ? &*dims : nullptr;
}

const Tensor* InferContext::input_value(int i) const {
  return has_input(i) ? input_values_[static_cast<std::size_t>(i)] : nullptr;
}

void InferContext::set_output(int i, DataType dtype, std::optional<Dims> dims) {
  FOVEA_CHECK(i >= 0 && i < output_count());
  outputs_[static_cast<std::size_t>(i)] = ValueType{dtype, std::move(dims)};
}

std::string InferContext::prefix() const {
  return fmt::format("{}{}: ", graph_ ? graph_->where() : std::string(), node_.describe());
}

Status InferContext::require_dtype(int i, std::initializer_list<DataType> allowed) const {
  if (std::find(allowed.begin(), allowed.end(), input_dtype(i)) != allowed.end()) {
    return Status::ok();
  }
  std::vector<std::string_view> names;
  for (DataType t : allowed) {
    names.push_back(data_type_name(t));
  }
  return error(StatusCode::kInvalidArgument,
               fmt::format("type mismatch: input {} is {}, expected {}", i, data_type_name(input_dtype(i)),
                           fmt::join(names, " or ")));
}

Status InferContext::require_same_dtype(int i, int j) const {
  if (input_dtype(i) == input_dtype(j)) {
    return Status::ok();
  }
  return error(StatusCode::kInvalidArgument,
               fmt::format("type mismatch: input {} is {} but input {} is {}", i,
                           data_type_name(input_dtype(i)), j, data_type_name(input_dtype(j))));
}

Status InferContext::require_rank(int i, int min_rank, int max_rank) const {
  const Dims* dims = input_dims(i);
  if (dims == nullptr) {
    return Status::ok();  // unknown rank: checked again when shapes are bound
  }
  const int rank = static_cast<int>(dims->size());
  if (rank < min_rank || rank > max_rank) {
    return error(StatusCode::kInvalidArgument, fmt::format("input {} has rank {} {}, expected {}..{}", i,
                                                           rank, dims_string(*dims), min_rank, max_rank));
  }
  return Status::ok();
}

InferContext infer_context_for(const Graph* graph, const Node& node, const std::vector<Tensor>& inputs) {
  std::vector<ValueType> types;
  std::vector<const Tensor*> values;
  for (const Tensor& input : inputs) {
    types.push_back(ValueType{input.dtype(), dims_of(input.shape())});
    values.push_back(&input);
  }
  return InferContext(graph, node, std::move(types), std::move(values));
}

InferContext KernelContext::inference() const {
  return infer_context_for(nullptr, node_, inputs_);
}

KernelContext::KernelContext(const Node& node, std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                             std::vector<DataType> output_dtypes, Allocator allocator)
    : node_(node),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)),
      output_dtypes_(std::move(output_dtypes)),
      allocator_(std::move(allocator)) {
  FOVEA_CHECK_MSG(inputs_.size() == node.inputs.size() && outputs_.size() == node.outputs.size() &&
                      output_dtypes_.size() == node.outputs.size(),
                  "one tensor per node input and output");
}

bool KernelContext::has_input(int i) const {
  return i >= 0 && i < input_count() && node_.inputs[static_cast<std::size_t>(i)] != kNoValue;
}

const Tensor& KernelContext::input(int i) const {
  static const Tensor absent;
  return i >= 0 && i < input_count() ? inputs_[static_cast<std::size_t>(i)] : absent;
}

Tensor& KernelContext::output(int i) {
  Tensor& out = outputs_[static_cast<std::size_t>(i)];
  FOVEA_CHECK_MSG(!out.empty_storage(),
                  "a kernel read an output infer() left unsized without allocate_output");
  return out;
}

Tensor& KernelContext::allocate_output(int i, Shape shape) {
  Tensor& out = outputs_[static_cast<std::size_t>(i)];
  out = allocator_(i, output_dtypes_[static_cast<std::size_t>(i)], std::move(shape));
  return out;
}

}  // namespace fovea::runtime
