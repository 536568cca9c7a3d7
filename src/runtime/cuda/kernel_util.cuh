// Device-side helpers every CUDA op shares: element types, launch shapes, broadcast indexing and
// dtype dispatch. One copy here, so no op grows its own variant.
#pragma once

#include <cuda_fp16.h>
#include <vector_types.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "core/status.h"
#include "runtime/tensor.h"

namespace fovea::runtime::cuda {

// Whether `p` is a multiple of `bytes` (vector accesses, libraries' alignment requirements).
inline bool aligned_to(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// The device type that stores a DataType's elements (float16 is __half, bool one byte).
template <DataType D>
struct DeviceStorageOf;
template <>
struct DeviceStorageOf<DataType::kFloat32> {
  using type = float;
};
template <>
struct DeviceStorageOf<DataType::kFloat64> {
  using type = double;
};
template <>
struct DeviceStorageOf<DataType::kFloat16> {
  using type = __half;
};
template <>
struct DeviceStorageOf<DataType::kInt64> {
  using type = std::int64_t;
};
template <>
struct DeviceStorageOf<DataType::kInt32> {
  using type = std::int32_t;
};
template <>
struct DeviceStorageOf<DataType::kInt8> {
  using type = std::int8_t;
};
template <>
struct DeviceStorageOf<DataType::kUInt8> {
  using type = std::uint8_t;
};
template <>
struct DeviceStorageOf<DataType::kBool> {
  using type = bool;
};

template <typename T>
struct DeviceTypeTag {
  using type = T;
};

// Calls f(DeviceTypeTag<T>{}) with the device storage type of `dtype` when it is one of `Ds`;
// false (and nothing called) otherwise, so the caller reports the unsupported dtype.
template <DataType... Ds, typename F>
bool dispatch_device(DataType dtype, F&& f) {
  return ((dtype == Ds ? (f(DeviceTypeTag<typename DeviceStorageOf<Ds>::type>{}), true) : false) || ...);
}

// The type arithmetic happens in: float for half and float ("half storage, float accumulation"),
// the type itself otherwise.
template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, __half>, float, T>;

template <typename T>
__device__ __forceinline__ ComputeType<T> load_compute(const T* p, std::int64_t i) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(p[i]);
  } else {
    return p[i];
  }
}

template <typename T, typename C>
__device__ __forceinline__ void store_compute(T* p, std::int64_t i, C value) {
  if constexpr (std::is_same_v<T, __half>) {
    p[i] = __float2half_rn(static_cast<float>(value));
  } else {
    p[i] = static_cast<T>(value);
  }
}

// Grid-stride launches over n elements: enough blocks to fill the GPU, capped so each thread
// loops a few times instead of paying for block scheduling.
inline constexpr int kBlockSize = 256;
inline unsigned grid_for(std::int64_t n, int block = kBlockSize) {
  const std::int64_t blocks = (n + block - 1) / block;
  constexpr std::int64_t kMaxBlocks = 132 * 32;  // 32 blocks per SM on an H100/H200
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

#define FOVEA_GRID_STRIDE_LOOP(i, n)                                                               \
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)

// Broadcast indexing for up to kMaxRank dims, passed to kernels by value: for each input, the
// element offset of output element `i` under numpy broadcasting (stride 0 along broadcast dims).
inline constexpr int kMaxRank = 8;

template <int kInputs>
struct BroadcastIndexer {
  int rank = 0;
  std::int64_t out_dims[kMaxRank] = {};
  std::int64_t in_strides[kInputs][kMaxRank] = {};

  __device__ __forceinline__ void offsets(std::int64_t i, std::int64_t (&out)[kInputs]) const {
    for (int k = 0; k < kInputs; ++k) out[k] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const std::int64_t coord = i % out_dims[d];
      i /= out_dims[d];
      for (int k = 0; k < kInputs; ++k) out[k] += coord * in_strides[k][d];
    }
  }
};

// The indexer for `inputs` broadcast to `out_shape` (rank <= kMaxRank, checked by the caller).
template <int kInputs>
BroadcastIndexer<kInputs> make_broadcast_indexer(const Shape& out_shape,
                                                 const Shape* const (&inputs)[kInputs]) {
  BroadcastIndexer<kInputs> indexer;
  indexer.rank = static_cast<int>(out_shape.size());
  FOVEA_CHECK(indexer.rank <= kMaxRank);
  for (int d = 0; d < indexer.rank; ++d) indexer.out_dims[d] = out_shape[static_cast<std::size_t>(d)];
  for (int k = 0; k < kInputs; ++k) {
    const Shape& shape = *inputs[k];
    const int offset = indexer.rank - static_cast<int>(shape.size());
    std::int64_t stride = 1;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      const std::int64_t size = shape[static_cast<std::size_t>(d)];
      indexer.in_strides[k][d + offset] = size == 1 ? 0 : stride;
      stride *= size;
    }
  }
  return indexer;
}

// Kernels that only move elements (Concat, Transpose, Pad...) see them as unsigned integers of
// their size: dtypes of one size share one instantiation, and up to 16 bytes (uint4) move as one
// vector. Calls f(DeviceTypeTag<U>{}) with U of `bytes` bytes; false for another size.
template <typename F>
bool dispatch_by_bytes(std::size_t bytes, F&& f) {
  switch (bytes) {
    case 1: f(DeviceTypeTag<std::uint8_t>{}); return true;
    case 2: f(DeviceTypeTag<std::uint16_t>{}); return true;
    case 4: f(DeviceTypeTag<std::uint32_t>{}); return true;
    case 8: f(DeviceTypeTag<std::uint64_t>{}); return true;
    case 16: f(DeviceTypeTag<uint4>{}); return true;
    default: return false;
  }
}

// LDG.128/STG.128 are the widest accesses a thread issues; memory-bound kernels need them to get
// near the H200's bandwidth.
inline constexpr std::size_t kVectorBytes = 16;

// V consecutive elements loaded or stored as one access of their combined size.
template <typename T, int V>
struct alignas(sizeof(T) * V) Vector {
  T v[V];
};

// How many elements of `element_bytes` each can move as one vector of at most 16 bytes: the
// largest power of two that divides every count in `counts` (in elements) and whose byte size
// divides the address of every pointer in `pointers`.
inline std::int64_t vector_elements(std::size_t element_bytes, const std::vector<std::int64_t>& counts,
                                    const std::vector<const void*>& pointers) {
  for (auto k = static_cast<std::int64_t>(kVectorBytes / element_bytes); k > 1; k /= 2) {
    const auto bytes = static_cast<std::uintptr_t>(k) * element_bytes;
    bool fits = true;
    for (std::int64_t count : counts) fits = fits && count % k == 0;
    for (const void* p : pointers) fits = fits && reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
    if (fits) return k;
  }
  return 1;
}

// Calls f(DeviceTypeTag<Index>{}) with the type kernels index in: int32 when `largest` (the most
// elements the kernel indexes) is below 2^30, which makes the per-element divisions of index
// decomposition several times cheaper than int64 ones. Signed, for the negative strides of reversed
// slices; 2^30 leaves headroom for a grid-stride loop's last step past the end.
template <typename F>
void dispatch_index(std::int64_t largest, F&& f) {
  if (largest < (std::int64_t{1} << 30)) {
    f(DeviceTypeTag<std::int32_t>{});
  } else {
    f(DeviceTypeTag<std::int64_t>{});
  }
}

// Device memory that a node's prepare() fills from the host (resampling tables, constant values)
// and its state owns: allocated and copied once at plan time, so that run() only reads it (a
// captured run cannot copy from pageable host memory).
inline Result<DeviceMemory> upload_to_device(const void* h_data, std::size_t bytes) {
  FOVEA_ASSIGN_OR_RETURN(DeviceMemory memory, DeviceMemory::allocate(bytes));
  if (bytes > 0) FOVEA_CUDA_TRY(cudaMemcpy(memory.get(), h_data, bytes, cudaMemcpyHostToDevice));
  return Result<DeviceMemory>(std::move(memory));
}

// Lets `kernel` launch with `bytes` of dynamic shared memory (past the default 48 KiB a kernel
// must opt in). The limit belongs to the kernel, not to a launch: it is only ever raised here, so
// that a node prepared later with less never lowers what an earlier node of the plan launches with.
template <typename Kernel>
Status allow_dynamic_shared(Kernel* kernel, std::size_t bytes) {
  cudaFuncAttributes attributes{};
  FOVEA_CUDA_TRY(cudaFuncGetAttributes(&attributes, kernel));
  if (bytes <= static_cast<std::size_t>(attributes.maxDynamicSharedSizeBytes)) return Status::ok();
  FOVEA_CUDA_TRY(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  return Status::ok();
}

}  // namespace fovea::runtime::cuda
