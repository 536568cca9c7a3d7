// RAII owners for CUDA streams, events, graphs and device memory. Non-copyable, movable. Only with
// FOVEA_HAVE_CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <utility>

#include "core/status.h"

namespace fovea {

class CudaStream {
 public:
  // Non-blocking with respect to the legacy default stream: fovea never uses stream 0.
  // kHigh is the device's greatest priority: the scheduler starts its kernels before pending ones
  // of normal streams, so short latency-critical work (decode copies, pre/postprocessing) is not
  // queued behind a long inference.
  enum class Priority { kNormal, kHigh };
  static Result<CudaStream> create(Priority priority = Priority::kNormal);
  CudaStream() = default;
  CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream();

  cudaStream_t get() const { return stream_; }
  Status synchronize() const;

 private:
  explicit CudaStream(cudaStream_t stream) : stream_(stream) {}
  cudaStream_t stream_ = nullptr;
};

class CudaEvent {
 public:
  // Timing is off by default: timed events cost more to record and to wait on.
  static Result<CudaEvent> create(bool timing = false);
  CudaEvent() = default;
  CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent();

  cudaEvent_t get() const { return event_; }
  Status record(cudaStream_t stream) const;
  // Makes `stream` wait for this event on the device; the host does not block.
  Status wait_on(cudaStream_t stream) const;
  Status synchronize() const;
  // Milliseconds between two timed events that have completed.
  Result<float> elapsed_ms_since(const CudaEvent& start) const;

 private:
  explicit CudaEvent(cudaEvent_t event) : event_(event) {}
  cudaEvent_t event_ = nullptr;
};

// A captured, instantiated CUDA graph: the work `enqueue` puts on `stream` (captured in thread-local
// mode, so other threads' CUDA calls are unaffected), replayed by launch() with no host work per
// kernel. `rewrite`, when given, may change the captured graph before it is instantiated.
class CudaGraph {
 public:
  static Result<CudaGraph> capture(cudaStream_t stream, const std::function<Status()>& enqueue,
                                   const std::function<Status(cudaGraph_t)>& rewrite = {});
  CudaGraph() = default;
  CudaGraph(CudaGraph&& other) noexcept
      : graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}
  CudaGraph& operator=(CudaGraph&& other) noexcept;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph();

  explicit operator bool() const { return exec_ != nullptr; }
  // Uploads the graph's work to the device ahead of the first launch.
  Status upload(cudaStream_t stream) const;
  Status launch(cudaStream_t stream) const;

 private:
  void reset();
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// One cudaMalloc'd block, freed on destruction. For memory sized once at plan time (an executor's
// arena, weights, workspaces); steady-state frames come from pools (core/pool.h) instead.
class DeviceMemory {
 public:
  // At least one byte, so that an empty tensor still has a distinct address.
  static Result<DeviceMemory> allocate(std::size_t bytes);
  DeviceMemory() = default;
  DeviceMemory(DeviceMemory&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
  DeviceMemory& operator=(DeviceMemory&& other) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory();

  void* get() const { return data_; }

 private:
  explicit DeviceMemory(void* data) : data_(data) {}
  void* data_ = nullptr;
};

// Number of usable CUDA devices; 0 (not an error) when there is no driver or no GPU.
int cuda_device_count();

}  // namespace fovea
