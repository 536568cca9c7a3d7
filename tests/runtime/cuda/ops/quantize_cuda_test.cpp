// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear on CUDA (cuda/ops/quantize.cu) against
// the CPU reference, integer outputs exactly: odd sizes, batch 1 and N, scales per tensor, per axis
// (0, 1, -1) and blocked (a partial last block), int8 and uint8 with and without a zero point, scales
// as plan-time constants and as run-time inputs, ties, saturation, NaN and infinities, float32 and
// float16 plans (QuantizeLinear's scale float32 as a float16 plan keeps it, and float16 as a float16
// model stores it).
#include <limits>

#include "runtime/cuda/ops/elementwise_cuda_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kI8 = DataType::kInt8;
constexpr DataType kU8 = DataType::kUInt8;
constexpr DataType kI32 = DataType::kInt32;

enum class Mode { kPerTensor, kPerAxis, kBlocked };

struct QuantCase {
  Shape shape;
  Mode mode;
  std::int64_t axis = 1;
  std::int64_t block = 0;
};

const QuantCase kCases[] = {
    {{5, 3, 13, 17}, Mode::kPerTensor},
    {{1, 3, 13, 17}, Mode::kPerTensor},
    {{(1 << 16) + 3}, Mode::kPerTensor, 0},  // more elements than one grid-stride pass
    {{4, 6, 10, 16}, Mode::kPerTensor},      // whole vectors of 8: the vectorized per-tensor path
    {{}, Mode::kPerTensor},
    {{5, 3, 13, 17}, Mode::kPerAxis, 1},
    {{1, 3, 13, 17}, Mode::kPerAxis, 1},
    {{13, 127}, Mode::kPerAxis, 0},
    {{13, 127}, Mode::kPerAxis, -1},
    {{2, 7, 13}, Mode::kBlocked, 1, 3},
    {{13, 127}, Mode::kBlocked, -1, 8},
    {{9, 5}, Mode::kBlocked, 0, 4},
};

std::string case_string(const QuantCase& c) {
  return fmt::format("{} mode {} axis {} block {}", shape_string(c.shape), static_cast<int>(c.mode), c.axis,
                     c.block);
}

Node case_node(const char* op_type, const QuantCase& c, int inputs) {
  NodeBuilder builder(op_type, c.mode == Mode::kBlocked ? 21 : 13);
  builder.inputs(inputs).attr("axis", c.axis);
  if (c.mode == Mode::kBlocked) builder.attr("block_size", c.block);
  return builder.build();
}

Shape scale_shape(const QuantCase& c) {
  if (c.mode == Mode::kPerTensor) return {};
  const auto axis =
      static_cast<std::size_t>(c.axis < 0 ? static_cast<std::int64_t>(c.shape.size()) + c.axis : c.axis);
  if (c.mode == Mode::kPerAxis) return {c.shape[axis]};
  Shape shape = c.shape;
  shape[axis] = (shape[axis] + c.block - 1) / c.block;
  return shape;
}

Tensor random_levels(DataType dtype, Shape shape, std::uint32_t seed) {
  if (dtype == kI8) return random_tensor(kI8, std::move(shape), seed, -128, 128);
  if (dtype == kU8) return random_tensor(kU8, std::move(shape), seed, 0, 256);
  return random_tensor(kI32, std::move(shape), seed, -1e6, 1e6);
}

// The checks of one QuantizeLinear: float32, float16 with the scale kept float32 (the float16 plan),
// float16 with a float16 scale (a float16 model); scale and zero point constant or not.
::testing::AssertionResult quantize_matches(const Node& node, const std::vector<Tensor>& inputs) {
  const std::vector<int> constants = inputs.size() > 2 ? std::vector<int>{1, 2} : std::vector<int>{1};
  for (const bool constant : {true, false}) {
    const std::vector<int> constant_inputs = constant ? constants : std::vector<int>{};
    const CudaCheck checks[] = {
        {.precision = Precision::kFloat32, .constant_inputs = constant_inputs},
        {.precision = Precision::kFloat16, .constant_inputs = constant_inputs, .keep_float32_inputs = {1}},
        {.precision = Precision::kFloat16, .constant_inputs = constant_inputs},
    };
    for (const CudaCheck& check : checks) {
      auto agree = cuda_matches_cpu(node, inputs, check);
      if (!agree) return agree << (constant ? " (constant scale)" : " (run-time scale)");
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(CudaQuantizeLinear, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 1;
  for (const QuantCase& c : kCases) {
    // x in [-3, 3) at scales in [0.01, 0.05): both ends saturate.
    const Tensor x = random_tensor(kF32, c.shape, seed++, -3, 3);
    const Tensor scale = random_tensor(kF32, scale_shape(c), seed++, 0.01, 0.05);
    for (DataType dtype : {kI8, kU8}) {
      const Tensor zero_point = random_levels(dtype, scale_shape(c), seed++);
      EXPECT_TRUE(quantize_matches(case_node("QuantizeLinear", c, 3), {x, scale, zero_point}))
          << case_string(c) << " " << data_type_name(dtype);
    }
    // No zero point: uint8 around 0.
    EXPECT_TRUE(quantize_matches(case_node("QuantizeLinear", c, 2), {x, scale})) << case_string(c);
  }
}

TEST(CudaQuantizeLinear, TiesSaturationAndNonFinite) {
  FOVEA_REQUIRE_GPU();
  // x / 0.25 = k + 0.5 exactly: every element is a tie, rounded to even on both sides.
  Tensor ties = Tensor::allocate(kF32, {13, 17});
  for (std::int64_t i = 0; i < ties.numel(); ++i) {
    ties.data<float>()[i] = (static_cast<float>(i - 110) + 0.5f) * 0.25f;
  }
  for (DataType dtype : {kI8, kU8}) {
    EXPECT_TRUE(quantize_matches(NodeBuilder("QuantizeLinear", 13).inputs(3).build(),
                                 {ties, float_tensor({}, {0.25f}), tensor_of(dtype, {}, {3})}))
        << data_type_name(dtype);
  }
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const Tensor extremes = float_tensor(
      {9}, {std::numeric_limits<float>::quiet_NaN(), kInf, -kInf, 1e30f, -1e30f, 3e9f, -3e9f, 0.0f, -0.0f});
  EXPECT_TRUE(quantize_matches(NodeBuilder("QuantizeLinear", 13).inputs(3).build(),
                               {extremes, float_tensor({}, {0.5f}), tensor_of(kI8, {}, {-7})}));
}

TEST(CudaDequantizeLinear, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 100;
  for (const QuantCase& c : kCases) {
    const Tensor scale = random_tensor(kF32, scale_shape(c), seed++, 0.01, 0.05);
    for (DataType dtype : {kI8, kU8, kI32}) {
      const Tensor x = random_levels(dtype, c.shape, seed++);
      // int32 has no zero point (ONNX), the 8-bit types are tried with and without one.
      std::vector<std::vector<Tensor>> input_sets{{x, scale}};
      if (dtype != kI32) input_sets.push_back({x, scale, random_levels(dtype, scale_shape(c), seed++)});
      for (const std::vector<Tensor>& inputs : input_sets) {
        const Node node = case_node("DequantizeLinear", c, static_cast<int>(inputs.size()));
        const std::vector<int> constants = inputs.size() > 2 ? std::vector<int>{1, 2} : std::vector<int>{1};
        for (Precision p : kPrecisions) {
          for (const std::vector<int>& constant_inputs : {constants, std::vector<int>{}}) {
            EXPECT_TRUE(cuda_matches_cpu(node, inputs, {.precision = p, .constant_inputs = constant_inputs}))
                << case_string(c) << " " << data_type_name(dtype) << " inputs " << inputs.size();
          }
        }
      }
    }
  }
}

TEST(CudaDynamicQuantizeLinear, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  const Node node = NodeBuilder("DynamicQuantizeLinear", 11).outputs(3).build();
  std::uint32_t seed = 200;
  // The last spans many grid-stride passes of every block, so the blocks' ranges are folded.
  for (const Shape& shape : {Shape{1}, Shape{13, 127}, Shape{5, 3, 13, 17}, Shape{(1 << 22) + 5}}) {
    for (const auto& [low, high] : {std::pair{-2.0, 5.0}, std::pair{0.5, 3.0}, std::pair{-4.0, -1.0}}) {
      const Tensor x = random_tensor(kF32, shape, seed++, low, high);
      for (Precision p : kPrecisions) {
        EXPECT_TRUE(cuda_matches_cpu(node, {x}, {.precision = p}))
            << shape_string(shape) << " in [" << low << ", " << high << ")";
      }
    }
  }
}

TEST(CudaDynamicQuantizeLinear, EmptyRangesAndNaN) {
  FOVEA_REQUIRE_GPU();
  const Node node = NodeBuilder("DynamicQuantizeLinear", 11).outputs(3).build();
  // All zeros: scale 1, zero point 0. Nothing at all: the same.
  for (const Shape& shape : {Shape{7, 9}, Shape{0}}) {
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(node, {Tensor::allocate(kF32, shape)}, {.precision = p}))
          << shape_string(shape);
    }
  }
  // NaN is left out of the range on both sides, whichever block sees it.
  Tensor x = random_tensor(kF32, {13, 127}, 300, -2, 5);
  for (std::int64_t i = 0; i < x.numel(); i += 97)
    x.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(cuda_matches_cpu(node, {x}));
}

}  // namespace
}  // namespace fovea::runtime::testing
