#include "runtime/cuda/cudnn_backend.h"

#include <algorithm>
#include <utility>

namespace fovea::runtime::cuda::backend {

namespace {

std::string last_error() {
  char message[512] = {};
  cudnnGetLastErrorString(message, sizeof(message));
  return message;
}

Status unsupported(const std::string& what, cudnnStatus_t status) {
  std::string reason = last_error();
  if (reason.empty()) reason = cudnnGetErrorString(status);
  return Status(StatusCode::kUnsupported, "cuDNN: " + what + ": " + reason);
}

// The heuristic's engine configurations for the graph, best first.
Result<std::vector<Descriptor>> engine_configs(const Descriptor& graph) {
  FOVEA_ASSIGN_OR_RETURN(Descriptor heuristic, make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristic"));
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  FOVEA_TRY(set_descriptor(heuristic, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, "heuristic's graph"));
  FOVEA_TRY(set(heuristic, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristic's mode"));
  FOVEA_TRY(finalize(heuristic, "heuristic"));
  std::int64_t count = 0;
  if (const cudnnStatus_t s = cudnnBackendGetAttribute(heuristic.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr);
      s != CUDNN_STATUS_SUCCESS) {
    return unsupported("heuristic's results", s);
  }
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    FOVEA_ASSIGN_OR_RETURN(Descriptor config,
                           make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine configuration"));
    raw.push_back(config.get());
    configs.push_back(std::move(config));
  }
  std::int64_t returned = 0;
  if (const cudnnStatus_t s =
          cudnnBackendGetAttribute(heuristic.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw.data());
      s != CUDNN_STATUS_SUCCESS) {
    return unsupported("heuristic's results", s);
  }
  configs.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(returned, 0, count)));
  return configs;
}

}  // namespace

Result<Descriptor> make(cudnnBackendDescriptorType_t type, const char* what) {
  cudnnBackendDescriptor_t desc = nullptr;
  if (const cudnnStatus_t s = cudnnBackendCreateDescriptor(type, &desc); s != CUDNN_STATUS_SUCCESS) {
    return unsupported(std::string("create ") + what, s);
  }
  return Descriptor(desc);
}

Status set(const Descriptor& desc, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
           std::int64_t count, const void* values, const char* what) {
  if (const cudnnStatus_t s = cudnnBackendSetAttribute(desc.get(), name, type, count, values);
      s != CUDNN_STATUS_SUCCESS) {
    return unsupported(what, s);
  }
  return Status::ok();
}

Status set_descriptor(const Descriptor& desc, cudnnBackendAttributeName_t name, const Descriptor& value,
                      const char* what) {
  cudnnBackendDescriptor_t raw = value.get();
  return set(desc, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, what);
}

Status finalize(const Descriptor& desc, const char* what) {
  if (const cudnnStatus_t s = cudnnBackendFinalize(desc.get()); s != CUDNN_STATUS_SUCCESS)
    return unsupported(what, s);
  return Status::ok();
}

Result<Descriptor> tensor(const TensorSpec& spec, const char* what) {
  FOVEA_ASSIGN_OR_RETURN(Descriptor tensor, make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what));
  const std::int64_t alignment = 16;
  const auto rank = static_cast<std::int64_t>(spec.sizes.size());
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &spec.type, what));
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, spec.sizes.data(), what));
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank, spec.strides.data(), what));
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &spec.uid, what));
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, what));
  if (spec.is_virtual)
    FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &spec.is_virtual, what));
  if (spec.by_value)
    FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &spec.by_value, what));
  FOVEA_TRY(finalize(tensor, what));
  return tensor;
}

Status Plan::execute(cudnnHandle_t handle, const std::vector<std::int64_t>& uids,
                     const std::vector<void*>& pointers, void* workspace) const {
  FOVEA_ASSIGN_OR_RETURN(const Descriptor pack, make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack"));
  const auto count = static_cast<std::int64_t>(uids.size());
  FOVEA_TRY(set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, count, uids.data(),
                "variant pack's ids"));
  FOVEA_TRY(set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, count, pointers.data(),
                "variant pack's pointers"));
  FOVEA_TRY(set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace,
                "variant pack's workspace"));
  FOVEA_TRY(finalize(pack, "variant pack"));
  FOVEA_CUDNN_TRY(cudnnBackendExecute(handle, plan_.get(), pack.get()));
  return Status::ok();
}

Result<std::vector<std::shared_ptr<Plan>>> plans(cudnnHandle_t handle, std::vector<Descriptor> ops,
                                                 std::vector<Descriptor> kept, std::size_t most) {
  FOVEA_ASSIGN_OR_RETURN(Descriptor graph, make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "graph"));
  std::vector<cudnnBackendDescriptor_t> raw_ops;
  for (const Descriptor& op : ops) raw_ops.push_back(op.get());
  FOVEA_TRY(set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                static_cast<std::int64_t>(raw_ops.size()), raw_ops.data(), "graph's ops"));
  FOVEA_TRY(set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "graph's handle"));
  FOVEA_TRY(finalize(graph, "graph"));
  FOVEA_ASSIGN_OR_RETURN(std::vector<Descriptor> configs, engine_configs(graph));
  for (Descriptor& op : ops) kept.push_back(std::move(op));
  kept.push_back(std::move(graph));
  const auto shared = std::make_shared<const std::vector<Descriptor>>(std::move(kept));
  std::vector<std::shared_ptr<Plan>> out;
  Status last(StatusCode::kUnsupported, "cuDNN: the heuristic proposes no engine for the graph");
  for (Descriptor& config : configs) {
    if (out.size() >= most) break;
    FOVEA_ASSIGN_OR_RETURN(Descriptor plan, make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan"));
    FOVEA_TRY(set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "plan's handle"));
    FOVEA_TRY(set_descriptor(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config, "plan's engine"));
    if (Status finalized = finalize(plan, "execution plan"); !finalized.is_ok()) {
      last = std::move(finalized);
      continue;
    }
    std::int64_t workspace = 0, count = 0;
    if (const cudnnStatus_t s = cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                         CUDNN_TYPE_INT64, 1, &count, &workspace);
        s != CUDNN_STATUS_SUCCESS) {
      return unsupported("plan's workspace size", s);
    }
    out.push_back(std::make_shared<Plan>(std::move(plan), std::move(config), shared,
                                         static_cast<std::size_t>(workspace)));
  }
  if (out.empty()) return last;
  return out;
}

}  // namespace fovea::runtime::cuda::backend
