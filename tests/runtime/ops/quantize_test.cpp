// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear (ops/quantize.cpp) against values worked
// out by hand (ties, saturation at both ends, ONNX's own examples) and against references written
// from ONNX's formulas with explicit coordinates (per tensor, per axis 0 / 1 / -1, blocked; odd
// sizes), plus the inputs each must refuse, with the node and the input named.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/graph_test_util.h"
#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"
#include "runtime/ops/quantize_util.h"
#include "runtime/planner.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kF16 = DataType::kFloat16;
constexpr DataType kI8 = DataType::kInt8;
constexpr DataType kU8 = DataType::kUInt8;
constexpr DataType kI32 = DataType::kInt32;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Node quantize_node(int inputs = 3, int opset = 13) {
  return NodeBuilder("QuantizeLinear", opset).inputs(inputs).build();
}

Node dequantize_node(int inputs = 3, int opset = 13) {
  return NodeBuilder("DequantizeLinear", opset).inputs(inputs).build();
}

Node with_axis(const char* op_type, std::int64_t axis, std::int64_t block_size = 0) {
  NodeBuilder builder(op_type, block_size > 0 ? 21 : 13);
  builder.inputs(3).attr("axis", axis);
  if (block_size > 0) builder.attr("block_size", block_size);
  return builder.build();
}

Tensor scalar(DataType dtype, double value) {
  return tensor_of(dtype, {}, {value});
}

// The scale (and zero point) index of every element of `shape`, from its coordinates: per tensor
// when the scale has one element, else along `axis`, `block` elements per scale when blocked.
std::vector<std::int64_t> scale_indices(const Shape& shape, int axis, std::int64_t scale_numel,
                                        std::int64_t block) {
  std::int64_t outer = 1;
  std::int64_t inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  const std::int64_t along = shape.empty() ? 1 : shape[static_cast<std::size_t>(axis)];
  const std::int64_t blocks = block > 0 ? (along + block - 1) / block : along;
  std::vector<std::int64_t> indices;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t k = 0; k < along; ++k) {
      for (std::int64_t j = 0; j < inner; ++j) {
        if (scale_numel == 1) {
          indices.push_back(0);
        } else if (block > 0) {
          indices.push_back((o * blocks + k / block) * inner + j);
        } else {
          indices.push_back(k);
        }
      }
    }
  }
  return indices;
}

// ONNX's QuantizeLinear: float32 division, round half to even, zero point added, clipped.
Tensor reference_quantize(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int axis,
                          std::int64_t block = 0) {
  const auto indices = scale_indices(x.shape(), axis, scale.numel(), block);
  const bool is_signed = zero_point.dtype() == kI8;
  Tensor y = Tensor::allocate(zero_point.dtype(), x.shape());
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const std::int64_t s = indices[static_cast<std::size_t>(i)];
    const float quotient = x.data<float>()[i] / scale.data<float>()[s];
    const double shifted = std::nearbyint(quotient) + number_at(zero_point, s);
    set_number(y, i, std::clamp(shifted, is_signed ? -128.0 : 0.0, is_signed ? 127.0 : 255.0));
  }
  return y;
}

// ONNX's DequantizeLinear: (float(x) - zero point) * scale in float32.
Tensor reference_dequantize(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int axis,
                            std::int64_t block = 0) {
  const auto indices = scale_indices(x.shape(), axis, scale.numel(), block);
  Tensor y = Tensor::allocate(kF32, x.shape());
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const std::int64_t s = indices[static_cast<std::size_t>(i)];
    const float centered = static_cast<float>(number_at(x, i)) - static_cast<float>(number_at(zero_point, s));
    y.data<float>()[i] = centered * scale.data<float>()[s];
  }
  return y;
}

// Random zero points of `dtype` over their whole range, and scales in [0.01, 0.05): x in [-3, 3)
// then saturates at both ends.
Tensor random_zero_points(DataType dtype, Shape shape, std::uint32_t seed) {
  return dtype == kI8 ? random_tensor(kI8, std::move(shape), seed, -128, 128)
                      : random_tensor(kU8, std::move(shape), seed, 0, 256);
}

Tensor random_scales(Shape shape, std::uint32_t seed) {
  return random_tensor(kF32, std::move(shape), seed, 0.01, 0.05);
}

// The tensor holds both ends of its range somewhere, so saturation was exercised.
bool saturates_both_ends(const Tensor& y) {
  const bool is_signed = y.dtype() == kI8;
  bool low = false;
  bool high = false;
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    low = low || number_at(y, i) == (is_signed ? -128 : 0);
    high = high || number_at(y, i) == (is_signed ? 127 : 255);
  }
  return low && high;
}

// ---- QuantizeLinear ----

TEST(OpQuantizeLinear, RoundsHalfToEven) {
  const Tensor x = float_tensor({10}, {0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f, -2.5f, -3.5f, 4.4f, -4.6f});
  EXPECT_TRUE(tensors_near(run_node(quantize_node(), {x, float_tensor({}, {1}), scalar(kI8, 0)})[0],
                           tensor_of(kI8, {10}, {0, 2, 2, 4, 0, -2, -2, -4, 4, -5})));
  // The tie is in x / scale: 5 / 2 = 2.5 -> 2, 7 / 2 = 3.5 -> 4, then the zero point is added.
  EXPECT_TRUE(tensors_near(run_node(quantize_node(), {float_tensor({4}, {5, 7, -5, -7}),
                                                      float_tensor({}, {2}), scalar(kU8, 100)})[0],
                           tensor_of(kU8, {4}, {102, 104, 98, 96})));
}

TEST(OpQuantizeLinear, SaturatesAtBothEnds) {
  // int8, zero point 10, scale 0.5: 2x + 10 clipped to [-128, 127]; NaN gives the low end.
  const Tensor x = float_tensor({9}, {-69, -69.5f, 58.5f, 59, 1e30f, -1e30f, kInf, -kInf, kNaN});
  EXPECT_TRUE(tensors_near(run_node(quantize_node(), {x, float_tensor({}, {0.5f}), scalar(kI8, 10)})[0],
                           tensor_of(kI8, {9}, {-128, -128, 127, 127, 127, -128, 127, -128, -128})));
  // uint8, zero point 128, scale 1.
  const Tensor u = float_tensor({7}, {-128, -129, 127, 128, 1e10f, -0.4f, kNaN});
  EXPECT_TRUE(tensors_near(run_node(quantize_node(), {u, float_tensor({}, {1}), scalar(kU8, 128)})[0],
                           tensor_of(kU8, {7}, {0, 0, 255, 255, 255, 128, 0})));
}

TEST(OpQuantizeLinear, MatchesOnnxExamples) {
  // test_quantizelinear and test_quantizelinear_axis of ONNX's backend tests.
  const Tensor x = float_tensor({6}, {0, 2, 3, 1000, -254, -1000});
  EXPECT_TRUE(tensors_near(run_node(quantize_node(), {x, float_tensor({}, {2}), scalar(kU8, 128)})[0],
                           tensor_of(kU8, {6}, {128, 129, 130, 255, 1, 0})));
  const Tensor x4 = float_tensor({1, 3, 3, 2}, {-162, 10, -100, 232, -20, -50, -76, 0, 0, 252, 32, -44, 245,
                                                -485, -960, -270, -375, -470});
  const Tensor y =
      run_node(quantize_node(), {x4, float_tensor({3}, {2, 4, 5}), tensor_of(kU8, {3}, {84, 24, 196})})[0];
  EXPECT_TRUE(
      tensors_near(y, tensor_of(kU8, {1, 3, 3, 2},
                                {3, 89, 34, 200, 74, 59, 5, 24, 24, 87, 32, 13, 245, 99, 4, 142, 121, 102})));
}

TEST(OpQuantizeLinear, WithoutAZeroPointGivesUint8) {
  const Tensor y =
      run_node(quantize_node(2), {float_tensor({4}, {-1, 0, 1.4f, 300}), float_tensor({}, {1})})[0];
  EXPECT_TRUE(tensors_near(y, tensor_of(kU8, {4}, {0, 0, 1, 255})));
  // output_dtype (opset 21) picks int8 instead.
  const Node int8 = NodeBuilder("QuantizeLinear", 21).inputs(2).attr("output_dtype", 3).build();
  EXPECT_TRUE(tensors_near(run_node(int8, {float_tensor({3}, {-1, 0, 300}), float_tensor({}, {1})})[0],
                           tensor_of(kI8, {3}, {-1, 0, 127})));
}

TEST(OpQuantizeLinear, PerAxisAlongAnyAxis) {
  const Shape shape{3, 5, 7};
  std::uint32_t seed = 1;
  for (std::int64_t axis : {0, 1, -1}) {
    const int a = axis < 0 ? 2 : static_cast<int>(axis);
    for (DataType dtype : {kI8, kU8}) {
      const Tensor x = random_tensor(kF32, shape, seed++, -3, 3);
      const Tensor scale = random_scales({shape[static_cast<std::size_t>(a)]}, seed++);
      const Tensor zero_point = random_zero_points(dtype, {shape[static_cast<std::size_t>(a)]}, seed++);
      const Tensor y = run_node(with_axis("QuantizeLinear", axis), {x, scale, zero_point})[0];
      EXPECT_TRUE(tensors_near(y, reference_quantize(x, scale, zero_point, a))) << "axis " << axis;
      EXPECT_TRUE(saturates_both_ends(y)) << "axis " << axis;
    }
  }
  // A one-element 1-D scale is per tensor whatever x's dim along the axis (ONNX's reference).
  const Tensor x = random_tensor(kF32, {13, 3}, seed++, -3, 3);
  const Tensor scale = random_scales({1}, seed++);
  const Tensor zero_point = random_zero_points(kI8, {1}, seed++);
  EXPECT_TRUE(tensors_near(run_node(quantize_node(), {x, scale, zero_point})[0],
                           reference_quantize(x, scale, zero_point, 1)));
}

TEST(OpQuantizeLinear, BlockedScales) {
  struct Case {
    Shape shape;
    int axis;
    std::int64_t block;
  };
  // 7 along the axis in blocks of 3: the last block holds one element.
  const Case cases[] = {{{2, 7, 3}, 1, 3}, {{5, 4}, 0, 2}, {{3, 13}, -1, 4}, {{3, 5}, 1, 5}};
  std::uint32_t seed = 20;
  for (const Case& c : cases) {
    const int a = c.axis < 0 ? static_cast<int>(c.shape.size()) + c.axis : c.axis;
    Shape scale_shape = c.shape;
    scale_shape[static_cast<std::size_t>(a)] = (c.shape[static_cast<std::size_t>(a)] + c.block - 1) / c.block;
    const Tensor x = random_tensor(kF32, c.shape, seed++, -3, 3);
    const Tensor scale = random_scales(scale_shape, seed++);
    const Tensor zero_point = random_zero_points(kI8, scale_shape, seed++);
    const Tensor y = run_node(with_axis("QuantizeLinear", c.axis, c.block), {x, scale, zero_point})[0];
    EXPECT_TRUE(tensors_near(y, reference_quantize(x, scale, zero_point, a, c.block)))
        << shape_string(c.shape) << " axis " << c.axis;
  }
}

TEST(OpQuantizeLinear, LayoutIndexesAlikeInBothWidths) {
  // Tensors past 2^32 elements index in 64 bits; the same layouts, forced to either width, agree
  // with the coordinates everywhere.
  struct Case {
    Shape shape;
    int axis;
    std::int64_t block;
    ops::QuantMode mode;
  };
  const Case cases[] = {{{3, 5, 7}, 1, 0, ops::QuantMode::kPerAxis},
                        {{3, 5, 7}, 2, 0, ops::QuantMode::kPerAxis},
                        {{2, 7, 3}, 1, 3, ops::QuantMode::kBlocked},
                        {{9, 5}, 0, 4, ops::QuantMode::kBlocked}};
  for (const Case& c : cases) {
    ops::QuantLayout layout;
    layout.mode = c.mode;
    layout.axis_dim = c.shape[static_cast<std::size_t>(c.axis)];
    for (std::size_t d = static_cast<std::size_t>(c.axis) + 1; d < c.shape.size(); ++d)
      layout.inner *= c.shape[d];
    if (c.block > 0) {
      layout.block = c.block;
      layout.blocks = (layout.axis_dim + c.block - 1) / c.block;
    }
    const auto expected = scale_indices(c.shape, c.axis, 2, c.block);
    for (const bool narrow : {false, true}) {
      layout.narrow = narrow;
      for (std::size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(layout.scale_index(static_cast<std::int64_t>(i)), expected[i])
            << shape_string(c.shape) << " element " << i << (narrow ? " (32 bits)" : " (64 bits)");
      }
    }
  }
}

TEST(OpQuantizeLinear, Float16InputsComputeInFloat32) {
  // Values exact in float16: x / 0.5 = 2x.
  const Tensor x = tensor_of(kF16, {5}, {0.5, 1.25, 2.5, 100, -3});
  const Tensor expected = tensor_of(kI8, {5}, {1, 2, 5, 127, -6});
  EXPECT_TRUE(tensors_near(run_node(quantize_node(), {x, scalar(kF16, 0.5), scalar(kI8, 0)})[0], expected));
  // A float16 plan keeps the scale float32 (OpDef::float32_inputs): x float16, scale float32.
  EXPECT_TRUE(tensors_near(run_node(quantize_node(), {x, scalar(kF32, 0.5), scalar(kI8, 0)})[0], expected));
}

TEST(OpQuantizeLinear, AFloat16PlanKeepsTheScaleFloat32) {
  // x -> Relu -> QuantizeLinear(0.1) -> q, and q -> DequantizeLinear(0.1) -> y. 25.046875 (exact in
  // float16) / 0.1 is 250.47, which rounds to 250; divided by float16's 0.1 (0.099976) it would be
  // 250.53 -> 251. The float16 plan must give the float32 plan's integers.
  ModelBuilder m(13);
  m.input("x", kF32, {1, 4}).initializer("scale", float_tensor({}, {0.1f}));
  m.node("Relu", {"x"}, {"r"});
  m.node("QuantizeLinear", {"r", "scale"}, {"q"});
  m.node("DequantizeLinear", {"q", "scale"}, {"y"});
  m.output("q", kU8, {1, 4}).output("y", kF32, {1, 4});
  const Graph graph = load_graph(m);
  const Tensor x = float_tensor({1, 4}, {25.046875f, 0.5f, 12.546875f, 3});
  const Tensor expected = tensor_of(kU8, {1, 4}, {250, 5, 125, 30});
  for (Precision precision : {Precision::kFloat32, Precision::kFloat16}) {
    auto plan = plan_graph(graph, {{"x", {1, 4}}}, {.precision = precision});
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    for (const Node& node : plan->graph.nodes) {
      // QuantizeLinear's scale stays float32; DequantizeLinear's follows the plan (its output's type).
      if (node.op_type == "QuantizeLinear") {
        EXPECT_EQ(plan->graph.value(node.inputs[1]).type.dtype, kF32);
      } else if (node.op_type == "DequantizeLinear") {
        EXPECT_EQ(plan->graph.value(node.inputs[1]).type.dtype,
                  precision == Precision::kFloat16 ? kF16 : kF32);
      }
    }
    auto outputs = CpuExecutor(std::move(*plan)).run({x});
    ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
    EXPECT_TRUE(tensors_near((*outputs)[0], expected)) << precision_name(precision);
    EXPECT_TRUE(tensors_near((*outputs)[1],
                             reference_dequantize(expected, float_tensor({}, {0.1f}), scalar(kU8, 0), 0),
                             1e-3, 1e-3))
        << precision_name(precision);
  }
}

TEST(OpQuantizeLinear, InfersTypeAndShape) {
  const Dims x{Dim::unknown("N"), Dim::known_size(3)};
  auto types = infer_types(quantize_node(),
                           {{kF32, x}, {kF32, Dims{Dim::known_size(3)}}, {kI8, Dims{Dim::known_size(3)}}});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  EXPECT_EQ((*types)[0].dtype, kI8);
  EXPECT_EQ((*types)[0].dims, x);
  // float16 x with a float32 scale (a float16 plan), and no zero point: uint8.
  types = infer_types(quantize_node(2), {{kF16, x}, {kF32, Dims{}}});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  EXPECT_EQ((*types)[0].dtype, kU8);
  // Unknown rank: nothing to check yet.
  types = infer_types(quantize_node(), {{kF32, std::nullopt}, {kF32, std::nullopt}, {kU8, std::nullopt}});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  EXPECT_FALSE((*types)[0].dims.has_value());
}

TEST(OpQuantizeLinear, RefusesBadScalesNamingTheNodeAndInput) {
  const Tensor x = float_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  for (float bad : {0.0f, -1.0f, kNaN, kInf}) {
    const Status status = run_node_status(quantize_node(), {x, float_tensor({}, {bad}), scalar(kU8, 0)});
    EXPECT_TRUE(fails_with(status, StatusCode::kInvalidArgument, "y_scale holds")) << bad;
    EXPECT_TRUE(fails_with(status, StatusCode::kInvalidArgument, "'QuantizeLinear_under_test'")) << bad;
  }
  EXPECT_TRUE(fails_with(
      run_node_status(quantize_node(), {x, float_tensor({3}, {0.5f, 0, 1}), tensor_of(kU8, {3}, {0, 0, 0})}),
      StatusCode::kInvalidArgument, "at element 1"));
  // A constant scale is refused at shape inference, before anything runs.
  const Tensor zero = float_tensor({}, {0});
  const auto inferred =
      infer_node(nullptr, quantize_node(2), {{kF32, dims_of({2, 3})}, {kF32, Dims{}}}, {nullptr, &zero});
  EXPECT_TRUE(fails_with(inferred.status(), StatusCode::kInvalidArgument, "y_scale holds 0"));
}

TEST(OpQuantizeLinear, RefusesMismatchedShapesAndTypes) {
  const Tensor x = float_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor one = float_tensor({}, {1});
  EXPECT_TRUE(fails_with(run_node_status(quantize_node(), {x, float_tensor({4}, {1, 1, 1, 1}),
                                                           tensor_of(kU8, {4}, {0, 0, 0, 0})}),
                         StatusCode::kInvalidArgument, "y_scale has 4 elements"));
  EXPECT_TRUE(fails_with(
      run_node_status(quantize_node(), {x, float_tensor({3}, {1, 1, 1}), tensor_of(kU8, {2}, {0, 0})}),
      StatusCode::kInvalidArgument, "same shape"));
  EXPECT_TRUE(fails_with(run_node_status(quantize_node(), {x, float_tensor({2, 3}, {1, 1, 1, 1, 1, 1}),
                                                           tensor_of(kU8, {2, 3}, {0, 0, 0, 0, 0, 0})}),
                         StatusCode::kInvalidArgument, "without block_size"));
  EXPECT_TRUE(fails_with(run_node_status(with_axis("QuantizeLinear", 2),
                                         {x, float_tensor({3}, {1, 1, 1}), tensor_of(kU8, {3}, {0, 0, 0})}),
                         StatusCode::kInvalidArgument, "axis 2"));
  EXPECT_TRUE(fails_with(run_node_status(quantize_node(), {float_tensor({}, {1}), float_tensor({2}, {1, 1}),
                                                           tensor_of(kU8, {2}, {0, 0})}),
                         StatusCode::kInvalidArgument, "rank >= 1"));
  // Blocked: [2, 7] in blocks of 3 along axis 1 needs a [2, 3] scale.
  const Tensor x7 = random_tensor(kF32, {2, 7}, 3);
  EXPECT_TRUE(fails_with(run_node_status(with_axis("QuantizeLinear", 1, 3),
                                         {x7, random_scales({2, 2}, 4), random_zero_points(kI8, {2, 2}, 5)}),
                         StatusCode::kInvalidArgument, "must be [2, 3]"));
  // Types: x, zero points fovea cannot quantize to, output_dtype against the zero point.
  EXPECT_TRUE(fails_with(
      run_node_status(quantize_node(), {tensor_of(DataType::kInt64, {2}, {1, 2}), one, scalar(kU8, 0)}),
      StatusCode::kInvalidArgument, "type mismatch"));
  EXPECT_TRUE(fails_with(run_node_status(quantize_node(), {x, one, scalar(kI32, 0)}),
                         StatusCode::kUnsupported, "quantizing to int32 is not supported"));
  const Node int8_output = NodeBuilder("QuantizeLinear", 21).inputs(3).attr("output_dtype", 3).build();
  EXPECT_TRUE(fails_with(run_node_status(int8_output, {x, one, scalar(kU8, 0)}), StatusCode::kInvalidArgument,
                         "output_dtype is int8 but y_zero_point is uint8"));
  for (std::int64_t code : {5, 17, 21}) {  // INT16, FLOAT8E4M3FN, UINT4
    const Node node = NodeBuilder("QuantizeLinear", 21).inputs(2).attr("output_dtype", code).build();
    EXPECT_TRUE(fails_with(run_node_status(node, {x, one}), StatusCode::kUnsupported, "output_dtype"))
        << code;
  }
}

// ---- DequantizeLinear ----

TEST(OpDequantizeLinear, SubtractsTheZeroPointAndScales) {
  // test_dequantizelinear of ONNX's backend tests.
  EXPECT_TRUE(tensors_near(run_node(dequantize_node(), {tensor_of(kU8, {4}, {0, 3, 128, 255}),
                                                        float_tensor({}, {2}), scalar(kU8, 128)})[0],
                           float_tensor({4}, {-256, -250, 0, 254}), 0, 0));
  EXPECT_TRUE(tensors_near(
      run_node(dequantize_node(2), {tensor_of(kI8, {4}, {-128, 127, 0, -1}), float_tensor({}, {0.5f})})[0],
      float_tensor({4}, {-64, 63.5f, 0, -0.5f}), 0, 0));
  // int32 (a bias) has no zero point; x is rounded to float first, as the reference's astype.
  EXPECT_TRUE(tensors_near(run_node(dequantize_node(2), {tensor_of(kI32, {3}, {-1000000, 3, 16777217}),
                                                         float_tensor({}, {0.5f})})[0],
                           float_tensor({3}, {-500000, 1.5f, 8388608}), 0, 0));
}

TEST(OpDequantizeLinear, PerAxisAlongAnyAxis) {
  const Shape shape{3, 5, 7};
  std::uint32_t seed = 40;
  for (std::int64_t axis : {0, 1, -1}) {
    const int a = axis < 0 ? 2 : static_cast<int>(axis);
    for (DataType dtype : {kI8, kU8}) {
      const Tensor x = random_zero_points(dtype, shape, seed++);
      const Tensor scale = random_scales({shape[static_cast<std::size_t>(a)]}, seed++);
      const Tensor zero_point = random_zero_points(dtype, {shape[static_cast<std::size_t>(a)]}, seed++);
      EXPECT_TRUE(tensors_near(run_node(with_axis("DequantizeLinear", axis), {x, scale, zero_point})[0],
                               reference_dequantize(x, scale, zero_point, a), 0, 0))
          << "axis " << axis;
    }
  }
  // test_dequantizelinear_axis of ONNX's backend tests: QuantizeLinear's example backwards.
  const Tensor x = tensor_of(kU8, {1, 3, 3, 2},
                             {3, 89, 34, 200, 74, 59, 5, 24, 24, 87, 32, 13, 245, 99, 4, 142, 121, 102});
  EXPECT_TRUE(tensors_near(
      run_node(dequantize_node(), {x, float_tensor({3}, {2, 4, 5}), tensor_of(kU8, {3}, {84, 24, 196})})[0],
      float_tensor({1, 3, 3, 2}, {-162, 10, -100, 232, -20, -50, -76, 0, 0, 252, 32, -44, 245, -485, -960,
                                  -270, -375, -470}),
      0, 0));
}

TEST(OpDequantizeLinear, BlockedScales) {
  const Tensor x = random_zero_points(kI8, {3, 13}, 60);
  const Tensor scale = random_scales({3, 4}, 61);
  const Tensor zero_point = random_zero_points(kI8, {3, 4}, 62);
  EXPECT_TRUE(tensors_near(run_node(with_axis("DequantizeLinear", 1, 4), {x, scale, zero_point})[0],
                           reference_dequantize(x, scale, zero_point, 1, 4), 0, 0));
  const Tensor columns = random_zero_points(kU8, {5, 2}, 63);
  const Tensor column_scale = random_scales({2, 2}, 64);
  const Tensor column_zero = random_zero_points(kU8, {2, 2}, 65);
  EXPECT_TRUE(
      tensors_near(run_node(with_axis("DequantizeLinear", 0, 3), {columns, column_scale, column_zero})[0],
                   reference_dequantize(columns, column_scale, column_zero, 0, 3), 0, 0));
}

TEST(OpDequantizeLinear, Float16ScaleGivesFloat16) {
  const Tensor y =
      run_node(dequantize_node(), {tensor_of(kU8, {3}, {0, 10, 200}), scalar(kF16, 0.1), scalar(kU8, 10)})[0];
  ASSERT_EQ(y.dtype(), kF16);
  // (x - 10) times float16's 0.1, in float32, rounded once to float16.
  const float scale = half_to_float(float_to_half(0.1f));
  const Tensor expected = tensor_of(kF16, {3}, {-10 * scale, 0, 190 * scale});
  EXPECT_TRUE(tensors_near(y, expected, 0, 0));
}

TEST(OpDequantizeLinear, RefusesBadScalesTypesAndShapes) {
  const Tensor x = tensor_of(kU8, {2, 3}, {1, 2, 3, 4, 5, 6});
  for (float bad : {0.0f, -0.5f, kNaN, -kInf}) {
    EXPECT_TRUE(fails_with(run_node_status(dequantize_node(), {x, float_tensor({}, {bad}), scalar(kU8, 0)}),
                           StatusCode::kInvalidArgument, "x_scale holds"))
        << bad;
  }
  EXPECT_TRUE(fails_with(run_node_status(dequantize_node(), {x, float_tensor({}, {1}), scalar(kI8, 0)}),
                         StatusCode::kInvalidArgument, "type mismatch"));
  EXPECT_TRUE(fails_with(
      run_node_status(dequantize_node(), {float_tensor({2}, {1, 2}), float_tensor({}, {1}), scalar(kU8, 0)}),
      StatusCode::kInvalidArgument, "type mismatch"));
  EXPECT_TRUE(fails_with(
      run_node_status(dequantize_node(), {x, float_tensor({2}, {1, 1}), tensor_of(kU8, {2}, {0, 0})}),
      StatusCode::kInvalidArgument, "x_scale has 2 elements"));
  EXPECT_TRUE(fails_with(
      run_node_status(dequantize_node(), {x, float_tensor({3}, {1, 1, 1}), tensor_of(kU8, {1}, {0})}),
      StatusCode::kInvalidArgument, "x_zero_point is [1] but x_scale is [3]"));
}

TEST(OpDequantizeLinear, UndoesQuantizeLinearWithinHalfAStep) {
  const Tensor x = random_tensor(kF32, {7, 11}, 70, -1, 1);
  const Tensor scale = float_tensor(
      {11}, {0.01f, 0.02f, 0.03f, 0.005f, 0.011f, 0.013f, 0.017f, 0.019f, 0.023f, 0.029f, 0.031f});
  const Tensor zero_point = random_zero_points(kI8, {11}, 71);
  const Tensor q = run_node(with_axis("QuantizeLinear", -1), {x, scale, zero_point})[0];
  const Tensor back = run_node(with_axis("DequantizeLinear", -1), {q, scale, zero_point})[0];
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const float step = scale.data<float>()[i % 11];
    const std::int64_t level = static_cast<std::int64_t>(number_at(q, i));
    if (level == -128 || level == 127) continue;  // saturated: the value is lost
    // Half a step, plus float32's rounding of x / scale and of the product (|x| <= 1).
    EXPECT_LE(std::abs(back.data<float>()[i] - x.data<float>()[i]), step * 0.5f + 1e-6f) << i;
  }
}

// ---- DynamicQuantizeLinear ----

Node dynamic_node() {
  return NodeBuilder("DynamicQuantizeLinear", 11).outputs(3).build();
}

TEST(OpDynamicQuantizeLinear, MatchesOnnxExamples) {
  // test_dynamicquantizelinear, _max_adjusted and _min_adjusted of ONNX's backend tests. In the first,
  // 0.5 / scale rounds to exactly 25.5 in float32 and then to 26 (even): float32 division matters.
  auto out = run_node(dynamic_node(), {float_tensor({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f})});
  EXPECT_TRUE(tensors_near(out[0], tensor_of(kU8, {6}, {153, 255, 0, 26, 221, 179})));
  EXPECT_TRUE(tensors_near(out[1], float_tensor({}, {0.019607843831181526f}), 0, 0));
  EXPECT_TRUE(tensors_near(out[2], scalar(kU8, 153)));
  out = run_node(dynamic_node(), {float_tensor({6}, {-1, -2.1f, -1.3f, -2.5f, -3.34f, -4})});
  EXPECT_TRUE(tensors_near(out[0], tensor_of(kU8, {6}, {191, 121, 172, 96, 42, 0})));
  EXPECT_TRUE(tensors_near(out[1], float_tensor({}, {0.01568627543747425f}), 0, 0));
  EXPECT_TRUE(tensors_near(out[2], scalar(kU8, 255)));
  out = run_node(dynamic_node(),
                 {float_tensor({3, 4}, {1, 2.1f, 1.3f, 2.5f, 3.34f, 4, 1.5f, 2.6f, 3.9f, 4, 3, 2.345f})});
  EXPECT_TRUE(tensors_near(
      out[0], tensor_of(kU8, {3, 4}, {64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149})));
  EXPECT_TRUE(tensors_near(out[1], float_tensor({}, {0.01568627543747425f}), 0, 0));
  EXPECT_TRUE(tensors_near(out[2], scalar(kU8, 0)));
}

TEST(OpDynamicQuantizeLinear, AllZerosGetScaleOne) {
  // ONNX's reference: an empty range gives scale 1 and zero point 0 instead of dividing by 0.
  for (const Shape& shape : {Shape{5}, Shape{0}}) {
    const auto out = run_node(dynamic_node(), {Tensor::allocate(kF32, shape)});
    EXPECT_TRUE(tensors_near(out[0], Tensor::allocate(kU8, shape)));
    EXPECT_TRUE(tensors_near(out[1], float_tensor({}, {1}), 0, 0));
    EXPECT_TRUE(tensors_near(out[2], scalar(kU8, 0)));
  }
}

TEST(OpDynamicQuantizeLinear, MatchesTheFormulaOnOddSizes) {
  std::uint32_t seed = 80;
  for (const Shape& shape : {Shape{13, 127}, Shape{1}, Shape{3, 5, 7}}) {
    const Tensor x = random_tensor(kF32, shape, seed++, -2, 5);
    const float* v = x.data<float>();
    const float low = std::min(0.0f, *std::min_element(v, v + x.numel()));
    const float high = std::max(0.0f, *std::max_element(v, v + x.numel()));
    const float scale = (high - low) / 255.0f;
    const float zero_point = std::nearbyint(std::clamp(0.0f - low / scale, 0.0f, 255.0f));
    const auto out = run_node(dynamic_node(), {x});
    EXPECT_TRUE(tensors_near(out[1], float_tensor({}, {scale}), 0, 0));
    EXPECT_TRUE(tensors_near(out[2], scalar(kU8, zero_point)));
    EXPECT_TRUE(tensors_near(out[0], reference_quantize(x, out[1], out[2], 0))) << shape_string(shape);
  }
}

TEST(OpDynamicQuantizeLinear, IgnoresNaNInTheRange) {
  // The range is [-51, 204]: scale 1, zero point 51. NaN quantizes to the low end, not the zero point.
  const auto out = run_node(dynamic_node(), {float_tensor({4}, {kNaN, -51, 204, kNaN})});
  EXPECT_TRUE(tensors_near(out[1], float_tensor({}, {1}), 0, 0));
  EXPECT_TRUE(tensors_near(out[2], scalar(kU8, 51)));
  EXPECT_TRUE(tensors_near(out[0], tensor_of(kU8, {4}, {0, 0, 255, 0})));
}

TEST(OpDynamicQuantizeLinear, InfersTypesAndRefusesNonFloat) {
  const Dims x{Dim::unknown("N"), Dim::known_size(7)};
  const auto types = infer_types(dynamic_node(), {{kF32, x}});
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  EXPECT_EQ((*types)[0].dtype, kU8);
  EXPECT_EQ((*types)[0].dims, x);
  EXPECT_EQ((*types)[1].dtype, kF32);
  EXPECT_EQ((*types)[1].dims, Dims{});
  EXPECT_EQ((*types)[2].dtype, kU8);
  EXPECT_TRUE(fails_with(run_node_status(dynamic_node(), {tensor_of(kU8, {2}, {1, 2})}),
                         StatusCode::kInvalidArgument, "type mismatch"));
}

}  // namespace
}  // namespace fovea::runtime::testing
