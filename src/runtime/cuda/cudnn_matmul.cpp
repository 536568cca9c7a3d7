#include "runtime/cuda/cudnn_matmul.h"

#include <atomic>
#include <cstdio>
#include <string>
#include <utility>

#include "core/log.h"

#include "runtime/cuda/cudnn_backend.h"

namespace fovea::runtime::cuda {

namespace {

using backend::Descriptor;

enum Uid : std::int64_t { kA = 1, kB, kBias, kY, kProduct = 100, kBiased };

std::atomic<FusedGemmPolicy> g_policy{FusedGemmPolicy::kWhenFaster};
std::atomic<int> g_chosen{0};

Result<Descriptor> pointwise(cudnnPointwiseMode_t mode, const Descriptor& x, const Descriptor* b,
                             const Descriptor& y, const char* what) {
  FOVEA_ASSIGN_OR_RETURN(Descriptor desc, backend::make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, what));
  const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  FOVEA_TRY(backend::set(desc, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, what));
  FOVEA_TRY(backend::set(desc, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision, what));
  FOVEA_TRY(backend::finalize(desc, what));
  FOVEA_ASSIGN_OR_RETURN(Descriptor op, backend::make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, what));
  FOVEA_TRY(backend::set_descriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc, what));
  FOVEA_TRY(backend::set_descriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x, what));
  if (b != nullptr) FOVEA_TRY(backend::set_descriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b, what));
  FOVEA_TRY(backend::set_descriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y, what));
  FOVEA_TRY(backend::finalize(op, what));
  return op;
}

}  // namespace

FusedGemmPolicy fused_gemm_policy() {
  return g_policy.load();
}

void set_fused_gemm_policy(FusedGemmPolicy policy) {
  g_policy.store(policy);
}

int fused_gemms_chosen() {
  return g_chosen.load();
}

void log_fused_gemm_timings(const std::string& node, float unfused_ms, const std::vector<float>& plan_ms,
                            int chosen) {
  if (chosen >= 0) g_chosen.fetch_add(1);
  // The figures through snprintf: fmt's float formatting inlined here trips GCC 13's array-bounds
  // warning on fmt 9's bigint.
  const auto ms = [](float value) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.4f", static_cast<double>(value));
    return std::string(text);
  };
  std::string plans;
  for (const float value : plan_ms) plans += (plans.empty() ? "" : ", ") + (value < 0 ? "fails" : ms(value));
  log_debug("{}: cuBLASLt and the GELU pass {} ms; cuDNN's fused plans {} ms: {}", node, ms(unfused_ms),
            plans, chosen >= 0 ? "plan " + std::to_string(chosen) + " taken" : std::string("cuBLASLt taken"));
}

Result<std::vector<std::shared_ptr<const backend::Plan>>> fused_matmul_plans(cudnnHandle_t handle,
                                                                             const FusedMatmulShape& shape,
                                                                             std::size_t most) {
  const std::int64_t m = shape.m, n = shape.n, k = shape.k;
  const std::vector<std::int64_t> product_sizes = {1, m, n}, product_strides = {m * n, n, 1};
  FOVEA_ASSIGN_OR_RETURN(Descriptor a,
                         backend::tensor({.sizes = {1, m, k}, .strides = {m * k, k, 1}, .uid = kA}, "A"));
  FOVEA_ASSIGN_OR_RETURN(Descriptor b,
                         backend::tensor({.sizes = {1, k, n},
                                          .strides = shape.trans_b ? std::vector<std::int64_t>{n * k, 1, k}
                                                                   : std::vector<std::int64_t>{k * n, n, 1},
                                          .uid = kB},
                                         "B"));
  FOVEA_ASSIGN_OR_RETURN(Descriptor product, backend::tensor({.type = CUDNN_DATA_FLOAT,
                                                              .sizes = product_sizes,
                                                              .strides = product_strides,
                                                              .uid = kProduct,
                                                              .is_virtual = true},
                                                             "product"));
  FOVEA_ASSIGN_OR_RETURN(
      Descriptor y, backend::tensor({.sizes = product_sizes, .strides = product_strides, .uid = kY}, "Y"));

  FOVEA_ASSIGN_OR_RETURN(Descriptor matmul_desc, backend::make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul"));
  const cudnnDataType_t accumulate = CUDNN_DATA_FLOAT;
  FOVEA_TRY(
      backend::set(matmul_desc, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &accumulate, "matmul"));
  FOVEA_TRY(backend::finalize(matmul_desc, "matmul"));
  FOVEA_ASSIGN_OR_RETURN(Descriptor matmul,
                         backend::make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul"));
  FOVEA_TRY(backend::set_descriptor(matmul, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a, "matmul's A"));
  FOVEA_TRY(backend::set_descriptor(matmul, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b, "matmul's B"));
  FOVEA_TRY(backend::set_descriptor(matmul, CUDNN_ATTR_OPERATION_MATMUL_CDESC, product, "matmul's C"));
  FOVEA_TRY(
      backend::set_descriptor(matmul, CUDNN_ATTR_OPERATION_MATMUL_DESC, matmul_desc, "matmul's descriptor"));
  FOVEA_TRY(backend::finalize(matmul, "matmul"));

  std::vector<Descriptor> ops;
  ops.push_back(std::move(matmul));
  std::vector<Descriptor> kept;
  const Descriptor* activated = &product;
  if (shape.bias) {
    FOVEA_ASSIGN_OR_RETURN(Descriptor bias,
                           backend::tensor({.sizes = {1, 1, n}, .strides = {n, n, 1}, .uid = kBias}, "bias"));
    FOVEA_ASSIGN_OR_RETURN(Descriptor biased, backend::tensor({.type = CUDNN_DATA_FLOAT,
                                                               .sizes = product_sizes,
                                                               .strides = product_strides,
                                                               .uid = kBiased,
                                                               .is_virtual = true},
                                                              "biased"));
    FOVEA_ASSIGN_OR_RETURN(Descriptor add,
                           pointwise(CUDNN_POINTWISE_ADD, product, &bias, biased, "bias add"));
    ops.push_back(std::move(add));
    kept.push_back(std::move(bias));
    kept.push_back(std::move(biased));
    activated = &kept.back();
  }
  FOVEA_ASSIGN_OR_RETURN(Descriptor gelu, pointwise(shape.gelu_tanh ? CUDNN_POINTWISE_GELU_APPROX_TANH_FWD
                                                                    : CUDNN_POINTWISE_GELU_FWD,
                                                    *activated, nullptr, y, "GELU"));
  ops.push_back(std::move(gelu));
  for (Descriptor* d : {&a, &b, &product, &y, &matmul_desc}) kept.push_back(std::move(*d));
  FOVEA_ASSIGN_OR_RETURN(auto plans, backend::plans(handle, std::move(ops), std::move(kept), most));
  return std::vector<std::shared_ptr<const backend::Plan>>(plans.begin(), plans.end());
}

Status run_fused_matmul(const backend::Plan& plan, cudnnHandle_t handle, const void* a, const void* b,
                        const void* bias, void* y, void* workspace) {
  std::vector<std::int64_t> uids = {kA, kB, kY};
  std::vector<void*> pointers = {const_cast<void*>(a), const_cast<void*>(b), y};
  if (bias != nullptr) {
    uids.push_back(kBias);
    pointers.push_back(const_cast<void*>(bias));
  }
  return plan.execute(handle, uids, pointers, workspace);
}

}  // namespace fovea::runtime::cuda
