#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "core/cuda_raii.h"
#include "core/pool.h"

namespace fovea {
namespace {

class PoolGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) {
      GTEST_SKIP() << "no CUDA device";
    }
  }
};

TEST_F(PoolGpu, DeviceBlocksAreDeviceMemoryAndReused) {
  Result<BufferPool> pool = BufferPool::create("device", MemoryKind::kDevice, 1 << 20, 4);
  ASSERT_TRUE(pool.is_ok());
  void* address = nullptr;
  {
    Result<PooledBuffer> buffer = pool->acquire();
    ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
    cudaPointerAttributes attributes{};
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, buffer->data()), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
    address = buffer->data();
  }
  Result<PooledBuffer> again = pool->acquire();
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->data(), address);
  EXPECT_EQ(pool->stats().hits, 1u);
}

TEST_F(PoolGpu, PinnedBlocksCopyRoundTrip) {
  Result<BufferPool> pinned = BufferPool::create("pinned", MemoryKind::kPinnedHost, 4096);
  Result<BufferPool> device = BufferPool::create("device", MemoryKind::kDevice, 4096);
  ASSERT_TRUE(pinned.is_ok() && device.is_ok());
  Result<PooledBuffer> host = pinned->acquire();
  Result<PooledBuffer> gpu = device->acquire();
  ASSERT_TRUE(host.is_ok() && gpu.is_ok());
  auto* bytes = static_cast<unsigned char*>(host->data());
  for (int i = 0; i < 4096; ++i) {
    bytes[i] = static_cast<unsigned char>(i * 7);
  }
  Result<CudaStream> stream = CudaStream::create();
  ASSERT_TRUE(stream.is_ok());
  ASSERT_EQ(cudaMemcpyAsync(gpu->data(), host->data(), 4096, cudaMemcpyHostToDevice, stream->get()),
            cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(host->data(), 0, 4096, stream->get()), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(host->data(), gpu->data(), 4096, cudaMemcpyDeviceToHost, stream->get()),
            cudaSuccess);
  ASSERT_TRUE(stream->synchronize().is_ok());
  for (int i = 0; i < 4096; ++i) {
    ASSERT_EQ(bytes[i], static_cast<unsigned char>(i * 7)) << i;
  }
}

TEST_F(PoolGpu, EventsOrderStreams) {
  Result<CudaStream> a = CudaStream::create();
  Result<CudaStream> b = CudaStream::create();
  Result<CudaEvent> start = CudaEvent::create(true);
  Result<CudaEvent> done = CudaEvent::create(true);
  ASSERT_TRUE(a.is_ok() && b.is_ok() && start.is_ok() && done.is_ok());
  ASSERT_TRUE(start->record(a->get()).is_ok());
  ASSERT_TRUE(done->record(a->get()).is_ok());
  ASSERT_TRUE(done->wait_on(b->get()).is_ok());
  ASSERT_TRUE(b->synchronize().is_ok());
  Result<float> ms = done->elapsed_ms_since(*start);
  ASSERT_TRUE(ms.is_ok());
  EXPECT_GE(*ms, 0.0f);
}

// A captured graph replays its work each launch, and does nothing at capture time.
TEST_F(PoolGpu, GraphsReplayWhatWasCaptured) {
  Result<CudaStream> stream = CudaStream::create();
  Result<DeviceMemory> memory = DeviceMemory::allocate(256);
  ASSERT_TRUE(stream.is_ok() && memory.is_ok());
  ASSERT_EQ(cudaMemsetAsync(memory->get(), 0, 256, stream->get()), cudaSuccess);
  ASSERT_TRUE(stream->synchronize().is_ok());
  unsigned char value = 0;
  Result<CudaGraph> graph = CudaGraph::capture(stream->get(), [&]() -> Status {
    ++value;  // host code runs once, at capture
    if (cudaMemsetAsync(memory->get(), value, 256, stream->get()) != cudaSuccess) {
      return make_error(StatusCode::kInternal, "memset");
    }
    return Status::ok();
  });
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  std::vector<unsigned char> bytes(256, 9);
  ASSERT_EQ(cudaMemcpy(bytes.data(), memory->get(), 256, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(bytes[0], 0) << "captured work must not run at capture";
  ASSERT_TRUE(graph->launch(stream->get()).is_ok());
  ASSERT_TRUE(stream->synchronize().is_ok());
  ASSERT_EQ(cudaMemcpy(bytes.data(), memory->get(), 256, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(bytes[255], 1);

  // Work that fails while captured: its error comes back and the stream is usable afterwards.
  Result<CudaGraph> failed =
      CudaGraph::capture(stream->get(), [] { return make_error(StatusCode::kInternal, "no"); });
  EXPECT_FALSE(failed.is_ok());
  ASSERT_EQ(cudaMemsetAsync(memory->get(), 5, 256, stream->get()), cudaSuccess);
  EXPECT_TRUE(stream->synchronize().is_ok());
}

}  // namespace
}  // namespace fovea
