// Non-finite values (NaN, +inf, -inf) in a model's float outputs, counted so that a flow can say so:
// a model that overflows (float16 past 65504, a division by zero) gives NaN or infinite scores and
// pixels, which every head turns silently into no boxes, one class or black pictures.
//
// | input                  | dtype            | result                                          |
// |------------------------|------------------|-------------------------------------------------|
// | any shape, dense       | float32, float16 | the count (CPU); added to a device counter (CUDA) |
//
// Exact on both sides: a value is non-finite when its exponent bits are all ones. The CPU run takes
// host memory, the CUDA run device memory; it adds to the counter on the stream and returns at once.
#pragma once

#include <cstdint>

#include "core/cuda_stream.h"
#include "core/host_device.h"
#include "core/image.h"
#include "core/status.h"

namespace fovea::post {

// float32 or float16, dense, with data; what is wrong is named.
Status check_non_finite_input(const TensorView& values);
Result<std::uint64_t> count_non_finite_cpu(const TensorView& values);
// Adds the count to *counter (device memory), asynchronously on `stream`.
Status count_non_finite_cuda(cudaStream_t stream, const TensorView& values, unsigned long long* counter);

FOVEA_HD bool non_finite_float_bits(std::uint32_t bits) {
  return (bits & 0x7f800000u) == 0x7f800000u;
}
FOVEA_HD bool non_finite_half_bits(std::uint16_t bits) {
  return (bits & 0x7c00u) == 0x7c00u;
}

}  // namespace fovea::post
