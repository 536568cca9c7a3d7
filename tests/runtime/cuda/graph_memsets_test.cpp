// memsets_as_kernels: a captured graph's memset nodes become fill kernels that write the same bytes
// (element sizes 1, 2 and 4; pitched rows; rows shorter than a vector; unaligned starts), leave
// every other byte alone and keep the graph's order.
#include "runtime/cuda/graph_memsets.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "runtime/cuda/cuda_op_test_util.h"

namespace fovea::runtime::cuda {
namespace {

constexpr std::size_t kBytes = 4096;
constexpr unsigned char kUntouched = 0x77;

// The CPU reference of a memset: `height` rows of `width` elements of `element_size` bytes.
void reference_memset(std::vector<unsigned char>& memory, std::size_t offset, std::size_t pitch,
                      std::size_t width, std::size_t height, unsigned value, unsigned element_size) {
  for (std::size_t row = 0; row < height; ++row) {
    for (std::size_t b = 0; b < width * element_size; ++b) {
      memory[offset + row * pitch + b] = static_cast<unsigned char>(value >> (8 * (b % element_size)));
    }
  }
}

std::size_t memset_nodes(cudaGraph_t graph) {
  std::size_t count = 0;
  EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &count), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) {
    EXPECT_EQ(cudaGraphGetNodes(graph, nodes.data(), &count), cudaSuccess);
  }
  std::size_t memsets = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    EXPECT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
    memsets += type == cudaGraphNodeTypeMemset ? 1 : 0;
  }
  return memsets;
}

class DeviceBytes {
 public:
  DeviceBytes() {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&data_), kBytes), cudaSuccess);
    EXPECT_EQ(cudaMemset(data_, kUntouched, kBytes), cudaSuccess);
  }
  ~DeviceBytes() { cudaFree(data_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  unsigned char* get() const { return data_; }
  std::vector<unsigned char> read() const {
    std::vector<unsigned char> host(kBytes);
    EXPECT_EQ(cudaMemcpy(host.data(), data_, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

 private:
  unsigned char* data_ = nullptr;
};

TEST(GraphMemsetsGpu, CapturedMemsetsWriteTheSameBytesInTheSameOrder) {
  FOVEA_REQUIRE_GPU();
  DeviceBytes a, b, copy;
  Result<CudaStream> stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  std::size_t before = 0, after = 0;
  const auto enqueue = [&]() -> Status {
    cudaStream_t s = stream->get();
    FOVEA_CUDA_TRY(cudaMemsetAsync(a.get() + 3, 0xAB, 1000, s));          // unaligned start, odd length
    FOVEA_CUDA_TRY(cudaMemsetAsync(a.get() + 2001, 0xCD, 7, s));          // shorter than one vector
    FOVEA_CUDA_TRY(cudaMemset2DAsync(b.get() + 5, 300, 0x5C, 77, 9, s));  // pitched rows
    // Order: the copy sees the first value, the later memset overwrites the source after it.
    FOVEA_CUDA_TRY(cudaMemsetAsync(a.get() + 3000, 0x11, 513, s));
    FOVEA_CUDA_TRY(cudaMemcpyAsync(copy.get(), a.get() + 3000, 513, cudaMemcpyDeviceToDevice, s));
    FOVEA_CUDA_TRY(cudaMemsetAsync(a.get() + 3000, 0x22, 513, s));
    return Status::ok();
  };
  const auto rewrite = [&](cudaGraph_t graph) -> Status {
    before = memset_nodes(graph);
    FOVEA_TRY(memsets_as_kernels(graph));
    after = memset_nodes(graph);
    return Status::ok();
  };
  Result<CudaGraph> graph = CudaGraph::capture(stream->get(), enqueue, rewrite);
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  EXPECT_EQ(before, 5u);
  EXPECT_EQ(after, 0u);
  ASSERT_TRUE(graph->launch(stream->get()).is_ok());
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);

  std::vector<unsigned char> want_a(kBytes, kUntouched), want_b(kBytes, kUntouched),
      want_copy(kBytes, kUntouched);
  reference_memset(want_a, 3, 0, 1000, 1, 0xAB, 1);
  reference_memset(want_a, 2001, 0, 7, 1, 0xCD, 1);
  reference_memset(want_b, 5, 300, 77, 9, 0x5C, 1);
  reference_memset(want_copy, 0, 0, 513, 1, 0x11, 1);
  reference_memset(want_a, 3000, 0, 513, 1, 0x22, 1);
  EXPECT_EQ(a.read(), want_a);
  EXPECT_EQ(b.read(), want_b);
  EXPECT_EQ(copy.read(), want_copy);
}

TEST(GraphMemsetsGpu, WideElementsKeepTheirByteOrder) {
  FOVEA_REQUIRE_GPU();
  DeviceBytes a;
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaGraphCreate(&graph, 0), cudaSuccess);
  cudaMemsetParams halves{};
  halves.dst = a.get() + 2;
  halves.pitch = 80;
  halves.value = 0xBEEF;
  halves.elementSize = 2;
  halves.width = 33;
  halves.height = 3;
  cudaMemsetParams words{};
  words.dst = a.get() + 1024;
  words.value = 0xDEADBEEF;
  words.elementSize = 4;
  words.width = 301;
  words.height = 1;
  cudaGraphNode_t first = nullptr, second = nullptr;
  ASSERT_EQ(cudaGraphAddMemsetNode(&first, graph, nullptr, 0, &halves), cudaSuccess);
  ASSERT_EQ(cudaGraphAddMemsetNode(&second, graph, &first, 1, &words), cudaSuccess);
  ASSERT_TRUE(memsets_as_kernels(graph).is_ok());
  EXPECT_EQ(memset_nodes(graph), 0u);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  std::vector<unsigned char> want(kBytes, kUntouched);
  reference_memset(want, 2, 80, 33, 3, 0xBEEF, 2);
  reference_memset(want, 1024, 0, 301, 1, 0xDEADBEEF, 4);
  EXPECT_EQ(a.read(), want);
}

}  // namespace
}  // namespace fovea::runtime::cuda
