#include "core/cuda_raii.h"

#include "core/cuda_check.h"

namespace fovea {

Result<CudaStream> CudaStream::create(Priority priority) {
  int least = 0, greatest = 0;
  FOVEA_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t stream = nullptr;
  FOVEA_CUDA_TRY(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking,
                                              priority == Priority::kHigh ? greatest : least));
  return CudaStream(stream);
}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    if (stream_) {
      cudaStreamDestroy(stream_);
    }
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

CudaStream::~CudaStream() {
  if (stream_) {
    cudaStreamDestroy(stream_);
  }
}

Status CudaStream::synchronize() const {
  FOVEA_CUDA_TRY(cudaStreamSynchronize(stream_));
  return Status::ok();
}

Result<DeviceMemory> DeviceMemory::allocate(std::size_t bytes) {
  void* data = nullptr;
  FOVEA_CUDA_TRY(cudaMalloc(&data, bytes == 0 ? 1 : bytes));
  return DeviceMemory(data);
}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& other) noexcept {
  std::swap(data_, other.data_);
  return *this;
}

DeviceMemory::~DeviceMemory() {
  if (data_ != nullptr) cudaFree(data_);
}

Result<CudaGraph> CudaGraph::capture(cudaStream_t stream, const std::function<Status()>& enqueue,
                                     const std::function<Status(cudaGraph_t)>& rewrite) {
  FOVEA_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const Status enqueued = enqueue();
  CudaGraph captured;
  const cudaError_t ended = cudaStreamEndCapture(stream, &captured.graph_);  // ends it whatever happened
  FOVEA_TRY(enqueued);
  FOVEA_CUDA_TRY(ended);
  if (rewrite) FOVEA_TRY(rewrite(captured.graph_));
  FOVEA_CUDA_TRY(cudaGraphInstantiate(&captured.exec_, captured.graph_, 0));
  return captured;
}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
  if (this != &other) {
    reset();
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

CudaGraph::~CudaGraph() {
  reset();
}

void CudaGraph::reset() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

Status CudaGraph::upload(cudaStream_t stream) const {
  FOVEA_CUDA_TRY(cudaGraphUpload(exec_, stream));
  return Status::ok();
}

Status CudaGraph::launch(cudaStream_t stream) const {
  FOVEA_CUDA_TRY(cudaGraphLaunch(exec_, stream));
  return Status::ok();
}

Result<CudaEvent> CudaEvent::create(bool timing) {
  cudaEvent_t event = nullptr;
  FOVEA_CUDA_TRY(cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
  return CudaEvent(event);
}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_) {
      cudaEventDestroy(event_);
    }
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

CudaEvent::~CudaEvent() {
  if (event_) {
    cudaEventDestroy(event_);
  }
}

Status CudaEvent::record(cudaStream_t stream) const {
  FOVEA_CUDA_TRY(cudaEventRecord(event_, stream));
  return Status::ok();
}

Status CudaEvent::wait_on(cudaStream_t stream) const {
  FOVEA_CUDA_TRY(cudaStreamWaitEvent(stream, event_, 0));
  return Status::ok();
}

Status CudaEvent::synchronize() const {
  FOVEA_CUDA_TRY(cudaEventSynchronize(event_));
  return Status::ok();
}

Result<float> CudaEvent::elapsed_ms_since(const CudaEvent& start) const {
  float ms = 0.0f;
  FOVEA_CUDA_TRY(cudaEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error so later calls are not confused
    return 0;
  }
  return count;
}

}  // namespace fovea
