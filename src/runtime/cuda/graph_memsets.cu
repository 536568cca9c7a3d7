#include "runtime/cuda/graph_memsets.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/cuda_check.h"

namespace fovea::runtime::cuda {

namespace {

constexpr unsigned kFillThreads = 256;
constexpr std::size_t kVectorBytes = sizeof(uint4);

// Byte `offset` of a row that repeats `value`'s low `element_size` bytes (little-endian).
__device__ unsigned char pattern_byte(unsigned value, unsigned element_size, std::size_t offset) {
  return static_cast<unsigned char>(value >> (8 * (offset % element_size)));
}

// A memset's rows: `height` rows of `row_bytes` bytes, `pitch` bytes apart. Each row's 16-byte
// aligned middle is written in whole vectors, the bytes before and after it one at a time.
__global__ void __launch_bounds__(kFillThreads)
    fill_rows_kernel(unsigned char* dst, std::size_t pitch, std::size_t row_bytes, std::size_t height,
                     unsigned value, unsigned element_size) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t row = blockIdx.y; row < height; row += gridDim.y) {
    unsigned char* begin = dst + row * pitch;
    const auto address = reinterpret_cast<std::uintptr_t>(begin);
    const std::size_t to_vector = (kVectorBytes - address % kVectorBytes) % kVectorBytes;
    const std::size_t head = to_vector < row_bytes ? to_vector : row_bytes;
    const std::size_t vectors = (row_bytes - head) / kVectorBytes;
    const std::size_t tail_start = head + vectors * kVectorBytes;
    if (thread < head) begin[thread] = pattern_byte(value, element_size, thread);
    if (thread < row_bytes - tail_start) {
      begin[tail_start + thread] = pattern_byte(value, element_size, tail_start + thread);
    }
    if (vectors == 0) continue;
    uint4 word;
    auto* bytes = reinterpret_cast<unsigned char*>(&word);
    for (std::size_t b = 0; b < kVectorBytes; ++b) bytes[b] = pattern_byte(value, element_size, head + b);
    auto* middle = reinterpret_cast<uint4*>(begin + head);
    for (std::size_t i = thread; i < vectors; i += threads) middle[i] = word;
  }
}

bool default_edges(const std::vector<cudaGraphEdgeData>& edges) {
  return std::all_of(edges.begin(), edges.end(), [](const cudaGraphEdgeData& e) {
    return e.from_port == 0 && e.to_port == 0 && e.type == cudaGraphDependencyTypeDefault;
  });
}

bool device_accessible(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError();  // an unregistered host pointer: not for a kernel
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

// The node's dependencies (incoming) or dependents (outgoing), with their edges' data.
struct Edges {
  std::vector<cudaGraphNode_t> nodes;
  std::vector<cudaGraphEdgeData> data;
};

Result<Edges> edges_of(cudaGraphNode_t node, bool incoming) {
  const auto get = incoming ? cudaGraphNodeGetDependencies : cudaGraphNodeGetDependentNodes;
  std::size_t count = 0;
  FOVEA_CUDA_TRY(get(node, nullptr, nullptr, &count));
  Edges edges{std::vector<cudaGraphNode_t>(count), std::vector<cudaGraphEdgeData>(count)};
  if (count > 0) FOVEA_CUDA_TRY(get(node, edges.nodes.data(), edges.data.data(), &count));
  return edges;
}

// The memset node in `graph` replaced by a fill kernel node between the same neighbours; a memset
// whose memory a kernel cannot write or whose edges carry port data stays.
Status replace_memset(cudaGraph_t graph, cudaGraphNode_t node) {
  cudaMemsetParams memset{};
  FOVEA_CUDA_TRY(cudaGraphMemsetNodeGetParams(node, &memset));
  if (!device_accessible(memset.dst) || memset.width == 0 || memset.height == 0) return Status::ok();
  FOVEA_ASSIGN_OR_RETURN(Edges before, edges_of(node, true));
  FOVEA_ASSIGN_OR_RETURN(Edges after, edges_of(node, false));
  if (!default_edges(before.data) || !default_edges(after.data)) return Status::ok();

  auto* dst = static_cast<unsigned char*>(memset.dst);
  std::size_t pitch = memset.pitch;
  std::size_t row_bytes = memset.width * memset.elementSize;
  std::size_t height = memset.height;
  unsigned value = memset.value;
  unsigned element_size = memset.elementSize;
  void* args[] = {&dst, &pitch, &row_bytes, &height, &value, &element_size};
  const std::size_t blocks = (row_bytes / kVectorBytes + kFillThreads - 1) / kFillThreads;
  cudaKernelNodeParams kernel{};
  kernel.func = reinterpret_cast<void*>(fill_rows_kernel);
  kernel.gridDim = dim3(static_cast<unsigned>(std::clamp<std::size_t>(blocks, 1, 1024)),
                        static_cast<unsigned>(std::min<std::size_t>(height, 65535)));
  kernel.blockDim = dim3(kFillThreads);
  kernel.kernelParams = args;
  cudaGraphNode_t fill = nullptr;
  FOVEA_CUDA_TRY(cudaGraphAddKernelNode(&fill, graph, before.nodes.data(), before.nodes.size(), &kernel));
  if (!after.nodes.empty()) {
    const std::vector<cudaGraphNode_t> from(after.nodes.size(), fill);
    FOVEA_CUDA_TRY(cudaGraphAddDependencies(graph, from.data(), after.nodes.data(), nullptr, from.size()));
  }
  FOVEA_CUDA_TRY(cudaGraphDestroyNode(node));
  return Status::ok();
}

}  // namespace

Status memsets_as_kernels(cudaGraph_t graph) {
  std::size_t count = 0;
  FOVEA_CUDA_TRY(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) FOVEA_CUDA_TRY(cudaGraphGetNodes(graph, nodes.data(), &count));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    FOVEA_CUDA_TRY(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeMemset) FOVEA_TRY(replace_memset(graph, node));
  }
  return Status::ok();
}

}  // namespace fovea::runtime::cuda
