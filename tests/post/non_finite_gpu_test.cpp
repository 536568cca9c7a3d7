// Counting non-finite values on the GPU against the CPU reference: random float32 and float16 values
// with NaN and infinities at random places, odd counts, views starting at an aligned and an unaligned
// element (the vector loop and the value loop), and counts that accumulate over calls.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/half.h"
#include "image/image_test_util.h"
#include "post/non_finite.h"

namespace fovea::post {
namespace {

std::vector<std::uint8_t> random_values(std::size_t count, DataType dtype, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-70000.0f, 70000.0f);  // past float16's largest
  std::uniform_int_distribution<int> special(0, 99);
  const float specials[3] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity()};
  std::vector<std::uint8_t> bytes(count * data_type_size(dtype));
  for (std::size_t i = 0; i < count; ++i) {
    const int s = special(rng);
    const float v = s < 3 ? specials[s] : value(rng);
    if (dtype == DataType::kFloat32) {
      reinterpret_cast<float*>(bytes.data())[i] = v;
    } else {
      reinterpret_cast<std::uint16_t*>(bytes.data())[i] = float_to_half(v).bits;
    }
  }
  return bytes;
}

TEST(NonFiniteGpu, MatchesTheCpuCount) {
  FOVEA_REQUIRE_GPU();
  void* counter_memory = nullptr;
  ASSERT_EQ(cudaMalloc(&counter_memory, sizeof(unsigned long long)), cudaSuccess);
  auto* counter = static_cast<unsigned long long*>(counter_memory);
  for (const DataType dtype : {DataType::kFloat32, DataType::kFloat16}) {
    for (const std::int64_t count : {1, 7, 8, 1001, 300007}) {
      for (const std::int64_t offset : {0, 1}) {
        SCOPED_TRACE(::testing::Message()
                     << data_type_name(dtype) << " count " << count << " offset " << offset);
        const std::size_t size = data_type_size(dtype);
        std::vector<std::uint8_t> host = random_values(static_cast<std::size_t>(count + offset), dtype, 5);
        void* device = nullptr;
        ASSERT_EQ(cudaMalloc(&device, host.size()), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(device, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
        const TensorView on_host =
            contiguous_tensor(host.data() + offset * size, dtype, MemoryKind::kHost, {count});
        const TensorView on_device = contiguous_tensor(static_cast<std::uint8_t*>(device) + offset * size,
                                                       dtype, MemoryKind::kDevice, {count});
        const Result<std::uint64_t> expected = count_non_finite_cpu(on_host);
        ASSERT_TRUE(expected.is_ok()) << expected.status().to_string();
        ASSERT_EQ(cudaMemset(counter, 0, sizeof(*counter)), cudaSuccess);
        // Twice: the counter accumulates.
        for (int call = 0; call < 2; ++call) {
          const Status status = count_non_finite_cuda(nullptr, on_device, counter);
          ASSERT_TRUE(status.is_ok()) << status.to_string();
        }
        unsigned long long found = 0;
        ASSERT_EQ(cudaMemcpy(&found, counter, sizeof(found), cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(found, 2 * *expected);
        if (count > 1000) {
          EXPECT_GT(*expected, 0u);
        }
        cudaFree(device);
      }
    }
  }
  cudaFree(counter);
}

}  // namespace
}  // namespace fovea::post
