// Segmented sort of 64-bit keys (ascending) on the GPU with no host round trip, for kernels that
// run inside a CUDA graph: the NMS of post/nms.cu and of the ONNX op (runtime/cuda/ops/nms.cu).
//
// CUB's DeviceSegmentedSort, at most kSegmentsPerSort segments per call: past a few hundred
// segments (300 to 500 by its tuning; SSD300's NMS has 16 x 81) it partitions them by size, which
// copies the partition sizes to the host and synchronizes the stream, a round trip that also
// breaks graph capture (NmsGpu.RunsInACudaGraphWithNoHostRoundTrip fails if a call synchronizes).
// CUB's segmented radix sort never synchronizes, but it was 0.23 ms slower at the SSD300 shape (1.04
// against 0.85 ms for the whole NMS). Each chunk starts from the same buffer and CUB picks the final
// one from the key size alone, so every chunk ends in the same buffer.
//
//   std::size_t bytes = 0;
//   sort_segments(nullptr, bytes, keys, items, segments, begin, end, stream);  // sizing
//   sort_segments(temp, bytes, keys, items, segments, begin, end, stream);     // keys.Current()
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <cub/device/device_segmented_sort.cuh>

#include "core/cuda_check.h"
#include "core/status.h"

namespace fovea {

inline constexpr int kSegmentsPerSort = 256;

// Segment s holds keys [begin[s], end[s]) of the `items` in `keys` (device arrays; null when sizing).
inline Status sort_segments(void* temp, std::size_t& temp_bytes, cub::DoubleBuffer<std::uint64_t>& keys,
                            std::int64_t items, int segments, const int* begin, const int* end,
                            cudaStream_t stream) {
  cub::DoubleBuffer<std::uint64_t> chunk = keys;
  if (temp == nullptr) {  // sizing: every chunk has at most kSegmentsPerSort segments
    FOVEA_CUDA_TRY(cub::DeviceSegmentedSort::SortKeys(
        temp, temp_bytes, chunk, items, std::min(segments, kSegmentsPerSort), begin, end, stream));
    return Status::ok();
  }
  for (int first = 0; first < segments; first += kSegmentsPerSort) {
    chunk = keys;
    FOVEA_CUDA_TRY(cub::DeviceSegmentedSort::SortKeys(temp, temp_bytes, chunk, items,
                                                      std::min(kSegmentsPerSort, segments - first),
                                                      begin + first, end + first, stream));
  }
  keys = chunk;
  return Status::ok();
}

}  // namespace fovea
