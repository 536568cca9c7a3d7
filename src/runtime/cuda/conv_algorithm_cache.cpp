#include "runtime/cuda/conv_algorithm_cache.h"

#include <cudnn.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "core/log.h"
#include "runtime/cuda/graph_memsets.h"

namespace fovea::runtime::cuda {

std::string device_signature() {
  int device = 0;
  cudaDeviceProp props{};
  int driver = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&props, device) != cudaSuccess) {
    return "unknown GPU";
  }
  cudaDriverGetVersion(&driver);
  return fmt::format("{}|sm{}{}|driver {}|cudnn {}", props.name, props.major, props.minor, driver,
                     cudnnGetVersion());
}

std::filesystem::path cache_directory() {
  if (const char* dir = std::getenv("FOVEA_CACHE_DIR"); dir != nullptr && *dir != '\0') return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::filesystem::path(xdg) / "fovea";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::filesystem::path(home) / ".cache" / "fovea";
  }
  return std::filesystem::temp_directory_path() / "fovea-cache";
}

std::string conv_problem_key(const Node& node, DataType dtype, const Shape& x, const Shape& w,
                             const std::vector<ops::WindowDim>& window, std::int64_t groups,
                             std::size_t workspace_limit) {
  static const std::string device = device_signature();
  std::vector<std::string> geometry;
  for (const ops::WindowDim& d : window) {
    geometry.push_back(
        fmt::format("k{}s{}d{}p{}/{}", d.kernel, d.stride, d.dilation, d.pad_begin, d.pad_end));
  }
  // A choice made when the search could hand out less scratch (fovea's fixed 256 MiB before issue
  // 25) is not this one's: the key says how much it could.
  return fmt::format("{}|{}|{}|x{}|w{}|{}|g{}|ws{}MiB", device, node.op_type, data_type_name(dtype),
                     fmt::join(x, ","), fmt::join(w, ","), fmt::join(geometry, ";"), groups,
                     workspace_limit >> 20);
}

// cuDNN's fastest algorithms need scratch in proportion to the batch: the tensor-core kernel for
// the 7x7 stem of a ResNet at 544x960 in NHWC float16 takes ~20 MiB per image, 1.25 GiB at batch
// 64. A fixed cap turns them away exactly where the batch grows: fovea's 256 MiB did from batch 16
// on, and that stem fell to a kernel without tensor cores, 7x slower per image (issue 25).
// TensorRT's default workspace limit is the whole device; an eighth leaves the rest to the plan's
// tensors and to the engines and decoders beside it.
Result<std::size_t> algorithm_workspace_limit() {
  std::size_t free = 0, total = 0;
  FOVEA_CUDA_TRY(cudaMemGetInfo(&free, &total));
  return total / 8;
}

Result<SearchScratch> reserve_search_scratch(CudaKernelContext& ctx, std::size_t own, std::size_t wanted) {
  FOVEA_ASSIGN_OR_RETURN(const std::size_t limit, algorithm_workspace_limit());
  wanted = std::min(wanted, limit);
  SearchScratch scratch;
  scratch.complete = ctx.reserve_workspace(own + wanted);
  if (ctx.workspace_bytes() < own) {
    return ctx.error(StatusCode::kDeviceError, "no device memory for the ", std::to_string(own >> 20),
                     " MiB its algorithm search needs");
  }
  scratch.bytes = std::min(limit, ctx.workspace_bytes() - own);
  if (!scratch.complete) {
    log_warn(
        "{}: the cuDNN search got {} MiB of scratch, not the {} MiB its fastest algorithms may need; "
        "it chooses among those that fit, and the choice is not cached",
        ctx.node().describe(), scratch.bytes >> 20, wanted >> 20);
  }
  return scratch;
}

Result<float> shortest_run_ms(CudaKernelContext& ctx, const std::function<Status()>& work) {
  // Timed as the executor's graph runs it, memsets as kernels.
  FOVEA_ASSIGN_OR_RETURN(CudaGraph graph, CudaGraph::capture(ctx.stream(), work, memsets_as_kernels));
  FOVEA_ASSIGN_OR_RETURN(CudaEvent begin, CudaEvent::create(true));
  FOVEA_ASSIGN_OR_RETURN(CudaEvent end, CudaEvent::create(true));
  FOVEA_TRY(graph.launch(ctx.stream()));
  float shortest = 0.0f;
  for (int run = 0; run < 3; ++run) {
    FOVEA_TRY(begin.record(ctx.stream()));
    FOVEA_TRY(graph.launch(ctx.stream()));
    FOVEA_TRY(end.record(ctx.stream()));
    FOVEA_TRY(end.synchronize());
    FOVEA_ASSIGN_OR_RETURN(const float ms, end.elapsed_ms_since(begin));
    shortest = run == 0 ? ms : std::min(shortest, ms);
  }
  return shortest;
}

ConvAlgorithmCache& ConvAlgorithmCache::instance() {
  static ConvAlgorithmCache cache;
  return cache;
}

void log_conv_search(const std::string& node, const std::string& key, const std::string& report) {
  log_debug("algorithm search for {} ({}):\n{}", node, key, report);
}

ConvAlgorithmCache::ConvAlgorithmCache() : file_(cache_directory() / "cudnn_conv_algorithms.tsv") {
  const char* seconds = std::getenv("FOVEA_CUDNN_SEARCH_SECONDS");
  budget_ = std::chrono::seconds(seconds != nullptr ? std::atoi(seconds) : 60);
  load();
}

void ConvAlgorithmCache::load() {
  std::ifstream in(file_);
  std::string line;
  while (std::getline(in, line)) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    std::istringstream values(line.substr(tab + 1));
    ConvAlgorithm algorithm;
    if (values >> algorithm.algo >> algorithm.math_type >> algorithm.workspace_bytes >> algorithm.fused >>
        algorithm.subsampled) {
      if (!(values >> algorithm.depthwise)) algorithm.depthwise = false;
      if (!(values >> algorithm.gemm)) algorithm.gemm = false;
      entries_[line.substr(0, tab)] = algorithm;
    }
  }
}

std::optional<ConvAlgorithm> ConvAlgorithmCache::find(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void ConvAlgorithmCache::insert(const std::string& key, const ConvAlgorithm& algorithm) {
  std::lock_guard lock(mutex_);
  entries_[key] = algorithm;
  std::error_code ec;
  std::filesystem::create_directories(file_.parent_path(), ec);
  std::ofstream out(file_, std::ios::app);
  out << key << '\t' << algorithm.algo << ' ' << algorithm.math_type << ' ' << algorithm.workspace_bytes
      << ' ' << algorithm.fused << ' ' << algorithm.subsampled << ' ' << algorithm.depthwise << ' '
      << algorithm.gemm << '\n';
  if (!out) {
    log_warn("cannot write the cuDNN algorithm cache {}: the next run searches again", file_.string());
  }
}

bool ConvAlgorithmCache::search_allowed() {
  std::lock_guard lock(mutex_);
  if (spent_ < budget_) return true;
  if (!warned_) {
    log_warn(
        "cuDNN algorithm search used its {} s budget (FOVEA_CUDNN_SEARCH_SECONDS); the remaining "
        "convolutions use cuDNN's heuristic choice, and a later run searches them",
        std::chrono::duration_cast<std::chrono::seconds>(budget_).count());
    warned_ = true;
  }
  return false;
}

void ConvAlgorithmCache::charge_search(std::chrono::steady_clock::duration spent) {
  std::lock_guard lock(mutex_);
  spent_ += spent;
}

}  // namespace fovea::runtime::cuda
