#include "runtime/cuda/cudnn_attention.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/log.h"

namespace fovea::runtime::cuda {

namespace {

std::atomic<bool> g_allowed{true};
std::atomic<int> g_plans_built{0};

// The SDPA forward operation came in cuDNN 9.13.1 (the header's enum and the library's engines).
constexpr std::int64_t kFirstVersion = 91301;

// The variant pack's names for the operands.
enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kScale };

std::string last_error() {
  char message[512] = {};
  cudnnGetLastErrorString(message, sizeof(message));
  return message;
}

Status unsupported(const std::string& what, cudnnStatus_t status) {
  std::string reason = last_error();
  if (reason.empty()) reason = cudnnGetErrorString(status);
  return Status(StatusCode::kUnsupported, "cuDNN attention: " + what + ": " + reason);
}

struct DescriptorDeleter {
  void operator()(cudnnBackendDescriptor_t desc) const { cudnnBackendDestroyDescriptor(desc); }
};
using Descriptor = std::unique_ptr<std::remove_pointer_t<cudnnBackendDescriptor_t>, DescriptorDeleter>;

Result<Descriptor> make(cudnnBackendDescriptorType_t type, const char* what) {
  cudnnBackendDescriptor_t desc = nullptr;
  if (const cudnnStatus_t s = cudnnBackendCreateDescriptor(type, &desc); s != CUDNN_STATUS_SUCCESS) {
    return unsupported(std::string("create ") + what, s);
  }
  return Descriptor(desc);
}

// One attribute; a failure is kUnsupported naming it (cuDNN refuses what its engines do not take).
Status set(const Descriptor& desc, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
           std::int64_t count, const void* values, const char* what) {
  if (const cudnnStatus_t s = cudnnBackendSetAttribute(desc.get(), name, type, count, values);
      s != CUDNN_STATUS_SUCCESS) {
    return unsupported(what, s);
  }
  return Status::ok();
}

Status finalize(const Descriptor& desc, const char* what) {
  if (const cudnnStatus_t s = cudnnBackendFinalize(desc.get()); s != CUDNN_STATUS_SUCCESS)
    return unsupported(what, s);
  return Status::ok();
}

Status set_descriptor(const Descriptor& desc, cudnnBackendAttributeName_t name, const Descriptor& value,
                      const char* what) {
  cudnnBackendDescriptor_t raw = value.get();
  return set(desc, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, what);
}

Result<Descriptor> half_tensor(const AttentionOperand& operand, Uid uid, const char* what) {
  FOVEA_ASSIGN_OR_RETURN(Descriptor tensor, make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what));
  const cudnnDataType_t type = CUDNN_DATA_HALF;
  const std::int64_t id = uid, alignment = 16;
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, what));
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, operand.sizes.data(), what));
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, operand.strides.data(), what));
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id, what));
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, what));
  FOVEA_TRY(finalize(tensor, what));
  return tensor;
}

// The softmax scale, passed by value with each run (a host float in the variant pack).
Result<Descriptor> scale_tensor() {
  const char* what = "scale tensor";
  FOVEA_ASSIGN_OR_RETURN(Descriptor tensor, make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what));
  const cudnnDataType_t type = CUDNN_DATA_FLOAT;
  const std::int64_t ones[4] = {1, 1, 1, 1}, id = kScale, alignment = 16;
  const bool by_value = true;
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, what));
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, ones, what));
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, ones, what));
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id, what));
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, what));
  FOVEA_TRY(set(tensor, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value, what));
  FOVEA_TRY(finalize(tensor, what));
  return tensor;
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
  configs.resize(static_cast<std::size_t>(std::min(returned, count)));
  if (configs.empty()) return Status(StatusCode::kUnsupported, "cuDNN attention: no engine takes the shape");
  return configs;
}

void append(std::ostringstream& out, const AttentionOperand& operand) {
  for (std::int64_t v : operand.sizes) out << v << ',';
  for (std::int64_t v : operand.strides) out << v << ',';
  out << '|';
}

}  // namespace

bool cudnn_attention_allowed() {
  return g_allowed.load();
}

void allow_cudnn_attention(bool allowed) {
  g_allowed.store(allowed);
}

int cudnn_attention_plans_built() {
  return g_plans_built.load();
}

std::string CudnnAttentionShape::key() const {
  std::ostringstream out;
  append(out, q);
  append(out, k);
  append(out, v);
  append(out, o);
  out << scale;
  return out.str();
}

Result<std::shared_ptr<const CudnnAttention>> CudnnAttention::create(cudnnHandle_t handle,
                                                                     const CudnnAttentionShape& shape) {
  if (static_cast<std::int64_t>(cudnnGetVersion()) < kFirstVersion) {
    return Status(StatusCode::kUnsupported, "cuDNN attention needs cuDNN 9.13.1 or later, this is " +
                                                std::to_string(cudnnGetVersion()));
  }
#if CUDNN_VERSION < 91301
  (void)handle;
  return Status(StatusCode::kUnsupported, "cuDNN attention: built with cuDNN headers older than 9.13.1");
#else
  FOVEA_ASSIGN_OR_RETURN(Descriptor q, half_tensor(shape.q, kQ, "Q"));
  FOVEA_ASSIGN_OR_RETURN(Descriptor k, half_tensor(shape.k, kK, "K"));
  FOVEA_ASSIGN_OR_RETURN(Descriptor v, half_tensor(shape.v, kV, "V"));
  FOVEA_ASSIGN_OR_RETURN(Descriptor o, half_tensor(shape.o, kO, "O"));
  FOVEA_ASSIGN_OR_RETURN(Descriptor scale, scale_tensor());

  const auto op_type = static_cast<cudnnBackendDescriptorType_t>(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
  FOVEA_ASSIGN_OR_RETURN(Descriptor op, make(op_type, "SDPA operation"));
  FOVEA_TRY(set_descriptor(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, q, "SDPA's Q"));
  FOVEA_TRY(set_descriptor(op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, k, "SDPA's K"));
  FOVEA_TRY(set_descriptor(op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, v, "SDPA's V"));
  FOVEA_TRY(set_descriptor(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, o, "SDPA's O"));
  FOVEA_TRY(set_descriptor(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, scale, "SDPA's scale"));
  FOVEA_TRY(finalize(op, "SDPA operation"));

  FOVEA_ASSIGN_OR_RETURN(Descriptor graph, make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "graph"));
  cudnnBackendDescriptor_t raw_op = op.get();
  FOVEA_TRY(
      set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw_op, "graph's ops"));
  FOVEA_TRY(set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "graph's handle"));
  FOVEA_TRY(finalize(graph, "graph"));

  FOVEA_ASSIGN_OR_RETURN(std::vector<Descriptor> configs, engine_configs(graph));
  Status last = Status(StatusCode::kUnsupported, "cuDNN attention: no engine configuration finalized");
  for (Descriptor& config : configs) {
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
    std::shared_ptr<CudnnAttention> attention(new CudnnAttention());
    attention->plan_ = plan.release();
    // The plan refers to its engine configuration, graph, operation and tensors: they live as long.
    for (Descriptor* kept : {&config, &graph, &op, &q, &k, &v, &o, &scale})
      attention->kept_.push_back(kept->release());
    attention->workspace_bytes_ = static_cast<std::size_t>(workspace);
    attention->scale_ = shape.scale;
    g_plans_built.fetch_add(1);
    return std::shared_ptr<const CudnnAttention>(std::move(attention));
  }
  return last;
#endif
}

CudnnAttention::~CudnnAttention() {
  if (plan_ != nullptr) cudnnBackendDestroyDescriptor(plan_);
  for (cudnnBackendDescriptor_t desc : kept_) cudnnBackendDestroyDescriptor(desc);
}

Status CudnnAttention::run(cudnnHandle_t handle, const void* q, const void* k, const void* v, void* o,
                           void* workspace) const {
  FOVEA_ASSIGN_OR_RETURN(const Descriptor pack, make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack"));
  const std::int64_t uids[] = {kQ, kK, kV, kO, kScale};
  void* pointers[] = {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), o,
                      const_cast<float*>(&scale_)};
  FOVEA_TRY(set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 5, uids, "variant pack's ids"));
  FOVEA_TRY(set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 5, pointers,
                "variant pack's pointers"));
  FOVEA_TRY(set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace,
                "variant pack's workspace"));
  FOVEA_TRY(finalize(pack, "variant pack"));
  FOVEA_CUDNN_TRY(cudnnBackendExecute(handle, plan_, pack.get()));
  return Status::ok();
}

std::shared_ptr<const CudnnAttention> shared_cudnn_attention(CudaLibraries& libraries,
                                                             const CudnnAttentionShape& shape,
                                                             const std::string& node) {
  const std::string key = shape.key();
  if (const auto found = libraries.attention_plans.find(key); found != libraries.attention_plans.end()) {
    return found->second;
  }
  Result<std::shared_ptr<const CudnnAttention>> plan = CudnnAttention::create(libraries.cudnn, shape);
  std::shared_ptr<const CudnnAttention> taken;
  if (plan.is_ok()) {
    taken = std::move(plan).value();
  } else {
    log_debug("{}: fovea's attention kernel, as {}", node, plan.status().message());
  }
  libraries.attention_plans.emplace(key, taken);
  return taken;
}

}  // namespace fovea::runtime::cuda
