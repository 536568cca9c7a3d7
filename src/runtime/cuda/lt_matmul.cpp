#include "runtime/cuda/lt_matmul.h"

#include <chrono>
#include <optional>

#include <fmt/format.h>

#include "runtime/cuda/conv_algorithm_cache.h"

namespace fovea::runtime::cuda {

namespace {

struct LtTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
  cudaDataType_t scale;
};

Result<LtTypes> lt_types(const CudaKernelContext& ctx, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return LtTypes{CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DataType::kFloat16: return LtTypes{CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DataType::kFloat64: return LtTypes{CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
    default: return ctx.error(StatusCode::kUnsupported, "no cuBLASLt product for ", data_type_name(dtype));
  }
}

cublasLtEpilogue_t epilogue_of(const LtEpilogue& epilogue) {
  const bool bias = epilogue.bias != nullptr;
  if (epilogue.gelu) return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  if (epilogue.relu) return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

}  // namespace

LtMatmul::~LtMatmul() {
  for (auto* layout : {a_, b_, y_}) {
    if (layout != nullptr) cublaslt().MatrixLayoutDestroy(layout);
  }
  if (desc_ != nullptr) cublaslt().MatmulDescDestroy(desc_);
}

Status LtMatmul::create(CudaKernelContext& ctx, DataType dtype, const MatmulShape& shape,
                        const LtEpilogue& epilogue) {
  shape_ = shape;
  dtype_ = dtype;
  FOVEA_ASSIGN_OR_RETURN(LtTypes types, lt_types(ctx, dtype));
  FOVEA_CUBLAS_TRY(cublaslt().MatmulDescCreate(&desc_, types.compute, types.scale));
  const cublasLtEpilogue_t kind = epilogue_of(epilogue);
  if (kind != CUBLASLT_EPILOGUE_DEFAULT) {
    FOVEA_CUBLAS_TRY(
        cublaslt().MatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &kind, sizeof(kind)));
  }
  if (epilogue.bias != nullptr) {
    // Column-major, Y^T is [N, M]: the bias runs along its rows, one value per output column of Y.
    FOVEA_CUBLAS_TRY(cublaslt().MatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                       &epilogue.bias, sizeof(epilogue.bias)));
  }
  // Column-major view: Y^T[N,M] = op(B)^T[N,K] * op(A)^T[K,M]. A row-major [R,C] matrix is a
  // column-major [C,R] one with leading dimension C.
  const cublasOperation_t op_b = shape.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = shape.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  FOVEA_CUBLAS_TRY(
      cublaslt().MatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof(op_b)));
  FOVEA_CUBLAS_TRY(
      cublaslt().MatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof(op_a)));
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  // B row-major is [K,N] (or [N,K] transposed): column-major [N,K] (or [K,N]).
  FOVEA_TRY(layout(&a_, types.data, shape.trans_b ? u(shape.k) : u(shape.n),
                   shape.trans_b ? u(shape.n) : u(shape.k), shape.trans_b ? shape.k : shape.n,
                   shape.stride_b));
  FOVEA_TRY(layout(&b_, types.data, shape.trans_a ? u(shape.m) : u(shape.k),
                   shape.trans_a ? u(shape.k) : u(shape.m), shape.trans_a ? shape.m : shape.k,
                   shape.stride_a));
  FOVEA_TRY(layout(&y_, types.data, u(shape.n), u(shape.m), shape.n, shape.stride_y));

  cublasLtMatmulPreference_t preference = nullptr;
  FOVEA_CUBLAS_TRY(cublaslt().MatmulPreferenceCreate(&preference));
  const std::size_t workspace = kLtWorkspaceBytes;
  const cublasStatus_t set = cublaslt().MatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace));
  std::vector<cublasLtMatmulHeuristicResult_t> results(kLtCandidates);
  int found = 0;
  const cublasStatus_t heuristic =
      set != CUBLAS_STATUS_SUCCESS
          ? set
          : cublaslt().MatmulAlgoGetHeuristic(ctx.libraries().cublaslt, desc_, a_, b_, y_, y_, preference,
                                              kLtCandidates, results.data(), &found);
  cublaslt().MatmulPreferenceDestroy(preference);
  FOVEA_CUBLAS_TRY(heuristic);
  if (found == 0) return ctx.error(StatusCode::kUnsupported, "cuBLASLt has no algorithm for this product");
  epilogue_ = kind;
  for (int i = 0; i < found; ++i) candidates_.push_back(results[static_cast<std::size_t>(i)].algo);
  algo_ = candidates_.front();
  return Status::ok();
}

std::string lt_problem_key(DataType dtype, const MatmulShape& shape, cublasLtEpilogue_t epilogue,
                           bool reads_c) {
  static const std::string device = device_signature();
  return fmt::format("{}|cublasLt {}|Matmul|{}|m{}n{}k{}|t{}{}|b{}s{},{},{}|e{}|c{}", device,
                     cublaslt().GetVersion(), data_type_name(dtype), shape.m, shape.n, shape.k,
                     int{shape.trans_a}, int{shape.trans_b}, shape.batch, shape.stride_a, shape.stride_b,
                     shape.stride_y, static_cast<int>(epilogue), int{reads_c});
}

Status LtMatmul::choose_fastest(CudaKernelContext& ctx, const LtCall& call) {
  if (candidates_.size() < 2) {
    candidates_.clear();
    return Status::ok();
  }
  ConvAlgorithmCache& cache = ConvAlgorithmCache::instance();
  const std::string key = lt_problem_key(dtype_, shape_, epilogue_, call.beta != 0.0f);
  const std::optional<ConvAlgorithm> cached = cache.find(key);
  if (cached && cached->gemm && static_cast<std::size_t>(cached->algo) < candidates_.size()) {
    algo_ = candidates_[static_cast<std::size_t>(cached->algo)];
  } else if (cache.search_allowed()) {
    const auto started = std::chrono::steady_clock::now();
    // Where the device cannot spare cuBLASLt's scratch, the picks that need it do not run.
    if (call.scratch == nullptr) ctx.reserve_workspace(kLtWorkspaceBytes);
    std::string report;
    std::optional<std::size_t> best;
    float best_ms = 0.0f;
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      algo_ = candidates_[i];
      report += fmt::format("cuBLASLt pick {}: ", i);
      if (!run(ctx, call).is_ok()) {  // e.g. more scratch than the search could reserve
        report += "does not run\n";
        continue;
      }
      FOVEA_ASSIGN_OR_RETURN(const float ms, shortest_run_ms(ctx, [&] { return run(ctx, call); }));
      report += fmt::format("measured {} ms\n", ms);
      if (!best || ms < best_ms) {
        best = i;
        best_ms = ms;
      }
    }
    cache.charge_search(std::chrono::steady_clock::now() - started);
    log_conv_search(ctx.node().name, key, report);
    if (!best) return ctx.error(StatusCode::kUnsupported, "cuBLASLt runs none of its algorithms here");
    algo_ = candidates_[*best];
    cache.insert(key, ConvAlgorithm{.algo = static_cast<int>(*best), .gemm = true});
  }
  candidates_.clear();
  return Status::ok();
}

Status LtMatmul::run(CudaKernelContext& ctx, const LtCall& call) const {
  const double alpha64 = call.alpha;
  const double beta64 = call.beta;
  const bool wide = dtype_ == DataType::kFloat64;
  const void* c = call.c != nullptr ? call.c : call.y;
  void* scratch = call.scratch != nullptr ? call.scratch : ctx.workspace();
  const std::size_t scratch_bytes = call.scratch != nullptr ? call.scratch_bytes : ctx.workspace_bytes();
  FOVEA_CUBLAS_TRY(cublaslt().Matmul(ctx.libraries().cublaslt, desc_,
                                     wide ? static_cast<const void*>(&alpha64) : &call.alpha, call.b, a_,
                                     call.a, b_, wide ? static_cast<const void*>(&beta64) : &call.beta, c, y_,
                                     call.y, y_, &algo_, scratch, scratch_bytes, ctx.stream()));
  return Status::ok();
}

Status LtMatmul::layout(cublasLtMatrixLayout_t* out, cudaDataType_t type, std::uint64_t rows,
                        std::uint64_t cols, std::int64_t ld, std::int64_t stride) const {
  FOVEA_CUBLAS_TRY(cublaslt().MatrixLayoutCreate(out, type, rows, cols, ld));
  if (shape_.batch > 1) {
    const int count = static_cast<int>(shape_.batch);
    FOVEA_CUBLAS_TRY(
        cublaslt().MatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    FOVEA_CUBLAS_TRY(cublaslt().MatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                         &stride, sizeof(stride)));
  }
  return Status::ok();
}

}  // namespace fovea::runtime::cuda
