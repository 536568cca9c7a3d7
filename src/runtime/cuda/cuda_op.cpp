#include "runtime/cuda/cuda_op.h"

#include <map>

namespace fovea::runtime::cuda {

namespace {

using Registry = std::map<std::pair<std::string, std::string>, CudaOpDef, std::less<>>;

Registry& registry() {
  static Registry ops;
  return ops;
}

}  // namespace

CudaKernelContext::CudaKernelContext(const Graph* graph, const Node& node, std::vector<Tensor> inputs,
                                     std::vector<const Tensor*> host_constants, std::vector<Tensor> outputs,
                                     std::vector<std::int64_t*> output_rows)
    : graph_(graph),
      node_(node),
      inputs_(std::move(inputs)),
      host_constants_(std::move(host_constants)),
      outputs_(std::move(outputs)),
      output_rows_(std::move(output_rows)) {
  host_constants_.resize(inputs_.size(), nullptr);
  output_rows_.resize(outputs_.size(), nullptr);
}

bool CudaKernelContext::has_input(int i) const {
  return i >= 0 && i < input_count() && node_.inputs[static_cast<std::size_t>(i)] != kNoValue;
}

const Tensor& CudaKernelContext::input(int i) const {
  static const Tensor kOmitted;
  return i >= 0 && i < input_count() ? inputs_[static_cast<std::size_t>(i)] : kOmitted;
}

const Tensor* CudaKernelContext::host_constant(int i) const {
  return i >= 0 && i < input_count() ? host_constants_[static_cast<std::size_t>(i)] : nullptr;
}

Tensor& CudaKernelContext::output(int i) {
  FOVEA_CHECK(i >= 0 && i < output_count());
  return outputs_[static_cast<std::size_t>(i)];
}

std::int64_t* CudaKernelContext::output_rows(int i) const {
  FOVEA_CHECK(i >= 0 && i < output_count());
  return output_rows_[static_cast<std::size_t>(i)];
}

InferContext CudaKernelContext::inference() const {
  std::vector<ValueType> types;
  for (int i = 0; i < input_count(); ++i) {
    const Tensor& in = inputs_[static_cast<std::size_t>(i)];
    types.push_back(has_input(i) ? ValueType{in.dtype(), dims_of(in.shape())} : ValueType{});
  }
  return InferContext(graph_, node_, std::move(types), host_constants_);
}

void CudaKernelContext::bind(cudaStream_t stream, CudaLibraries* libraries, void* workspace,
                             std::size_t workspace_bytes, CudaNodeState* state) {
  stream_ = stream;
  libraries_ = libraries;
  workspace_ = workspace;
  workspace_bytes_ = workspace_bytes;
  search_ = nullptr;
  state_ = state;
}

void CudaKernelContext::bind_search(cudaStream_t stream, CudaLibraries* libraries, SearchWorkspace* search) {
  bind(stream, libraries, search->data(), search->bytes(), nullptr);
  search_ = search;
}

bool CudaKernelContext::reserve_workspace(std::size_t bytes) {
  if (bytes <= workspace_bytes_) return true;
  if (search_ == nullptr || !search_->reserve(bytes)) return false;
  workspace_ = search_->data();
  workspace_bytes_ = search_->bytes();
  return true;
}

bool SearchWorkspace::reserve(std::size_t bytes) {
  if (bytes <= bytes_) return true;
  Result<DeviceMemory> grown = DeviceMemory::allocate(bytes);
  ++allocations_;
  if (!grown.is_ok()) {
    cudaGetLastError();  // an allocation failure is not sticky, but would stay the last error
    return false;
  }
  memory_ = std::move(grown).value();  // nothing in the old buffer outlives the search it served
  bytes_ = bytes;
  return true;
}

bool register_cuda_op(const CudaOpDef& def) {
  FOVEA_CHECK(def.run != nullptr || def.aliases_input);
  const bool inserted =
      registry().emplace(std::pair{std::string(def.domain), std::string(def.op_type)}, def).second;
  FOVEA_CHECK_MSG(inserted, "a CUDA op registered twice");
  return inserted;
}

const CudaOpDef* find_cuda_op(std::string_view domain, std::string_view op_type) {
  const std::string_view normalized = domain == "ai.onnx" ? std::string_view() : domain;
  auto it = registry().find(std::pair{std::string(normalized), std::string(op_type)});
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<const CudaOpDef*> registered_cuda_ops() {
  std::vector<const CudaOpDef*> ops;
  for (const auto& [key, def] : registry()) {
    ops.push_back(&def);
  }
  return ops;
}

}  // namespace fovea::runtime::cuda
