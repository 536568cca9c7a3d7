#include "runtime/cuda/cudnn_attention.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/log.h"
#include "runtime/cuda/cudnn_backend.h"

namespace fovea::runtime::cuda {

namespace {

std::atomic<bool> g_allowed{true};
std::atomic<int> g_plans_built{0};

// The SDPA forward operation came in cuDNN 9.13.1 (the header's enum and the library's engines).
constexpr std::int64_t kFirstVersion = 91301;

// The variant pack's names for the operands.
enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kScale };

using backend::Descriptor;

Result<Descriptor> half_tensor(const AttentionOperand& operand, Uid uid, const char* what) {
  return backend::tensor({.type = CUDNN_DATA_HALF,
                          .sizes = {operand.sizes.begin(), operand.sizes.end()},
                          .strides = {operand.strides.begin(), operand.strides.end()},
                          .uid = uid},
                         what);
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
  std::vector<Descriptor> tensors;
  for (const auto& [operand, uid, what] : {std::tuple{&shape.q, kQ, "Q"}, std::tuple{&shape.k, kK, "K"},
                                           std::tuple{&shape.v, kV, "V"}, std::tuple{&shape.o, kO, "O"}}) {
    FOVEA_ASSIGN_OR_RETURN(Descriptor tensor, half_tensor(*operand, uid, what));
    tensors.push_back(std::move(tensor));
  }
  FOVEA_ASSIGN_OR_RETURN(Descriptor scale, backend::tensor({.type = CUDNN_DATA_FLOAT,
                                                            .sizes = {1, 1, 1, 1},
                                                            .strides = {1, 1, 1, 1},
                                                            .uid = kScale,
                                                            .by_value = true},
                                                           "scale"));
  const auto op_type = static_cast<cudnnBackendDescriptorType_t>(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
  FOVEA_ASSIGN_OR_RETURN(Descriptor op, backend::make(op_type, "SDPA operation"));
  const cudnnBackendAttributeName_t slots[] = {
      CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC,
      CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC};
  for (std::size_t i = 0; i < 4; ++i)
    FOVEA_TRY(backend::set_descriptor(op, slots[i], tensors[i], "SDPA's operands"));
  FOVEA_TRY(backend::set_descriptor(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, scale, "SDPA's scale"));
  FOVEA_TRY(backend::finalize(op, "SDPA operation"));
  tensors.push_back(std::move(scale));
  std::vector<Descriptor> ops;
  ops.push_back(std::move(op));
  FOVEA_ASSIGN_OR_RETURN(auto plans, backend::plans(handle, std::move(ops), std::move(tensors), 1));
  std::shared_ptr<CudnnAttention> attention(new CudnnAttention());
  attention->plan_ = std::move(plans.front());
  attention->scale_ = shape.scale;
  g_plans_built.fetch_add(1);
  return std::shared_ptr<const CudnnAttention>(std::move(attention));
#endif
}

std::size_t CudnnAttention::workspace_bytes() const {
  return plan_->workspace_bytes();
}

Status CudnnAttention::run(cudnnHandle_t handle, const void* q, const void* k, const void* v, void* o,
                           void* workspace) const {
  return plan_->execute(
      handle, {kQ, kK, kV, kO, kScale},
      {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), o, const_cast<float*>(&scale_)},
      workspace);
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
