// Counting non-finite values on the CPU: NaN and both infinities in float32 and float16, and nothing
// else (the largest finite values, subnormals, negative zero); other dtypes and gapped views refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "core/half.h"
#include "post/non_finite.h"

namespace fovea::post {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

const std::vector<float> kValues = {0.0f, -0.0f, 1.0f,    kNan,  65504.0f, -kInf, 1e-7f,
                                    kInf, -kNan, 3.4e38f, 6e-8f, -2.5f,    kNan};
constexpr std::uint64_t kNonFinite = 5;

TEST(NonFinite, CountsNanAndInfinitiesInFloat32) {
  std::vector<float> values = kValues;
  const TensorView view = contiguous_tensor(values.data(), DataType::kFloat32, MemoryKind::kHost,
                                            {static_cast<std::int64_t>(values.size())});
  const Result<std::uint64_t> found = count_non_finite_cpu(view);
  ASSERT_TRUE(found.is_ok()) << found.status().to_string();
  EXPECT_EQ(*found, kNonFinite);
}

// In float16, 3.4e38 overflows to infinity as a cast does: one more than in float32.
TEST(NonFinite, CountsNanAndInfinitiesInFloat16) {
  std::vector<std::uint16_t> halves;
  for (const float v : kValues) halves.push_back(float_to_half(v).bits);
  const TensorView view = contiguous_tensor(halves.data(), DataType::kFloat16, MemoryKind::kHost,
                                            {1, static_cast<std::int64_t>(halves.size())});
  const Result<std::uint64_t> found = count_non_finite_cpu(view);
  ASSERT_TRUE(found.is_ok()) << found.status().to_string();
  EXPECT_EQ(*found, kNonFinite + 1);
}

TEST(NonFinite, OtherDtypesAndGappedViewsAreRefused) {
  std::vector<std::int32_t> integers(6, 0);
  const TensorView ints = contiguous_tensor(integers.data(), DataType::kInt32, MemoryKind::kHost, {6});
  EXPECT_EQ(count_non_finite_cpu(ints).status().code(), StatusCode::kUnsupported);
  std::vector<float> values(12, 0.0f);
  TensorView gapped = contiguous_tensor(values.data(), DataType::kFloat32, MemoryKind::kHost, {3, 2});
  gapped.strides[0] = 4;
  const Result<std::uint64_t> found = count_non_finite_cpu(gapped);
  ASSERT_FALSE(found.is_ok());
  EXPECT_NE(found.status().message().find("dense"), std::string::npos) << found.status().message();
}

}  // namespace
}  // namespace fovea::post
