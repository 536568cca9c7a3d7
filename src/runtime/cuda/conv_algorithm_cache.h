// cuDNN's convolution algorithm choices, kept in memory and on disk so that a model is searched once
// per machine, not once per run. The key names everything the choice depends on: the GPU, the
// driver, the cuDNN version and the exact problem (shapes, dtype, geometry). A key that misses
// (another GPU, a new cuDNN) is searched again and says so in the log: never a silent reuse.
//
// The file is <cache dir>/cudnn_conv_algorithms.tsv, where the cache dir is $FOVEA_CACHE_DIR, else
// $XDG_CACHE_HOME/fovea, else ~/.cache/fovea. One line per problem: key, algo, math type, bytes,
// fused (0 or 1), subsampled (0 or 1), depthwise and gemm (0 or 1; a line written before they existed
// reads 0). cuBLASLt's products (lt_matmul.h) keep their timed choices here too: the key names the
// product and cuBLASLt's version, `algo` the chosen algorithm's rank in cuBLASLt's heuristic list.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/cuda/cuda_op.h"
#include "runtime/graph.h"
#include "runtime/ops/conv_util.h"

namespace fovea::runtime::cuda {

struct ConvAlgorithm {
  int algo = 0;
  int math_type = 0;
  std::size_t workspace_bytes = 0;
  // A convolution with a ReLU epilogue: run as cuDNN's fused call (true) or as the plain call and
  // fovea's epilogue pass (false). Ignored for the others.
  bool fused = false;
  // A strided 1x1 convolution run as a dense copy of the pixels it reads and a stride-1 convolution
  // on it (conv.cu says why).
  bool subsampled = false;
  // A depthwise convolution in NHWC run by fovea's own kernel (depthwise_conv.h) instead of cuDNN.
  bool depthwise = false;
  // A 1x1 convolution in NHWC run as a cuBLASLt GEMM (conv.cu, ConvState::describe_gemm).
  bool gemm = false;
};

// "NVIDIA H200|sm90|driver 13000|cudnn 91900": what a cached choice or engine depends on.
std::string device_signature();

// The directory fovea caches plans and algorithm choices in.
std::filesystem::path cache_directory();

// "NVIDIA H200|sm90|driver 13000|cudnn 91900|Conv|float16|x4,3,544,960|w64,3,7,7|k7s2d1p3/3;k7s2d1p3/3|g1|
// ws17971MiB": the problem, and the most scratch its search could hand an algorithm
// (`workspace_limit`, algorithm_workspace_limit()).
std::string conv_problem_key(const Node& node, DataType dtype, const Shape& x, const Shape& w,
                             const std::vector<ops::WindowDim>& window, std::int64_t groups,
                             std::size_t workspace_limit);

// The most scratch one convolution algorithm may take: an eighth of the device's memory.
Result<std::size_t> algorithm_workspace_limit();

struct SearchScratch {
  std::size_t bytes = 0;  // what the search may hand an algorithm, after the op's own bytes
  bool complete = true;   // false: less than its fastest algorithms may need (the choice is not cached)
};

// Before a search: grows ctx's workspace to `own` bytes (the op's own use of it: a padded input,
// a full output) plus `wanted` (the most scratch any of cuDNN's algorithms for the problem needs,
// within algorithm_workspace_limit()). Where the device cannot spare that much, the search makes
// do with what there is and a warning names the node.
Result<SearchScratch> reserve_search_scratch(CudaKernelContext& ctx, std::size_t own, std::size_t wanted);

// The shortest of three replays of `work` captured as a CUDA graph, on the node's stream (`work`
// has run once eagerly: warm). A graph, as the plan runs it: timed eagerly, cuDNN's host-side work
// per call (tens of microseconds) lies between the events and swamps small problems; at batch 1 it
// made every ResNet-50 convolution look 30-90 us long and ranked cuDNN's legacy kernels first.
Result<float> shortest_run_ms(CudaKernelContext& ctx, const std::function<Status()>& work);

// Logs at debug level what the search for `node` measured (`report`: a line per timing).
void log_conv_search(const std::string& node, const std::string& key, const std::string& report);

class ConvAlgorithmCache {
 public:
  static ConvAlgorithmCache& instance();

  std::optional<ConvAlgorithm> find(const std::string& key);
  void insert(const std::string& key, const ConvAlgorithm& algorithm);

  // Searches are timed; past the budget (FOVEA_CUDNN_SEARCH_SECONDS, default 60 s per process)
  // cuDNN's heuristic picks instead, and the log says so once. Heuristic picks are not cached: a
  // process that ran out (FCN-ResNet101 swept over six batches, issue 25) would otherwise pin them
  // for every later one.
  bool search_allowed();
  void charge_search(std::chrono::steady_clock::duration spent);

 private:
  ConvAlgorithmCache();
  void load();

  std::mutex mutex_;
  std::filesystem::path file_;
  std::map<std::string, ConvAlgorithm> entries_;
  std::chrono::steady_clock::duration spent_{};
  std::chrono::steady_clock::duration budget_;
  bool warned_ = false;
};

}  // namespace fovea::runtime::cuda
