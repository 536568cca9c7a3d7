// Each pass changes the graph as intended and leaves the results unchanged: the planned executor
// (folded, optimized, arena) agrees with a node-by-node evaluation of the loaded graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

#include "runtime/graph_test_util.h"
#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

TEST(PassRemoveIdentities, BypassesIdentityAndDropout) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {3, 5}).output("y", DataType::kFloat32, {3, 5});
  m.node("Identity", {"x"}, {"a"});
  m.node("Relu", {"a"}, {"b"});
  m.node("Dropout", {"b"}, {"c"});
  m.node("Identity", {"c"}, {"y"});
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {3, 5}, 7)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  ASSERT_EQ(plan.graph.nodes.size(), 1u);
  EXPECT_EQ(plan.graph.nodes[0].op_type, "Relu");
  EXPECT_EQ(plan.graph.value(plan.graph.nodes[0].outputs[0]).name, "y");
  expect_same_results(graph, plan, inputs);
}

// A Resize to its input's own size is an identity in every mode (SegFormer's decode head resizes
// its first stage to its own size); one to another size, and tf_crop_and_resize, stay.
TEST(PassRemoveIdentities, AResizeToItsOwnSizeGoes) {
  const Shape shape = {2, 3, 6, 5};
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, shape, 7)};
  const std::pair<const char*, const char*> kept_modes[] = {{"linear", "half_pixel"},
                                                            {"nearest", "asymmetric"},
                                                            {"cubic", "align_corners"},
                                                            {"linear", "tf_crop_and_resize"}};
  for (const auto& [mode, transform] : kept_modes) {
    for (const std::int64_t side : {6, 9}) {
      ModelBuilder m;
      m.input("x", DataType::kFloat32, shape).output("y", DataType::kFloat32, {2, 3, side, 5});
      m.initializer("roi", Tensor::from_vector<float>(DataType::kFloat32, {8}, {0, 0, 0, 0, 1, 1, 1, 1}));
      m.initializer("sizes", Tensor::from_vector<std::int64_t>(DataType::kInt64, {4}, {2, 3, side, 5}));
      auto& resize = m.node("Resize", {"x", "roi", "", "sizes"}, {"r"});
      m.attr(resize, "mode", std::string(mode));
      m.attr(resize, "coordinate_transformation_mode", std::string(transform));
      m.node("Relu", {"r"}, {"y"});
      const Graph graph = load_graph(m);
      const ExecutionPlan plan = plan_for(graph, inputs);
      const bool identity = side == 6 && std::string(transform) != "tf_crop_and_resize";
      EXPECT_EQ(count_ops(plan.graph, "Resize"), identity ? 0 : 1) << mode << " " << transform << " " << side;
      expect_same_results(graph, plan, inputs);
    }
  }
}

ModelBuilder& conv_bn_relu_residual(ModelBuilder& m, std::int64_t channels) {
  const std::vector<std::int64_t> shape = {2, channels, 9, 11};
  m.input("x", DataType::kFloat32, shape).output("y", DataType::kFloat32, shape);
  m.initializer("w", random_tensor(DataType::kFloat32, {channels, channels, 3, 3}, 1));
  m.initializer("b", random_tensor(DataType::kFloat32, {channels}, 2));
  m.initializer("scale", random_tensor(DataType::kFloat32, {channels}, 3, 0.5, 2.0));
  m.initializer("shift", random_tensor(DataType::kFloat32, {channels}, 4));
  m.initializer("mean", random_tensor(DataType::kFloat32, {channels}, 5));
  m.initializer("var", random_tensor(DataType::kFloat32, {channels}, 6, 0.1, 3.0));
  auto& conv = m.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  m.attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"n"}, "bn");
  m.node("Add", {"n", "x"}, {"s"}, "residual");
  m.node("Relu", {"s"}, {"y"}, "relu");
  return m;
}

TEST(PassFoldBatchNorm, FoldsIntoTheConvAndFusesTheEpilogue) {
  ModelBuilder m;
  const Graph graph = load_graph(conv_bn_relu_residual(m, 5));
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 5, 9, 11}, 8)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  ASSERT_EQ(plan.graph.nodes.size(), 1u) << "Conv, BatchNorm, Add and Relu should be one node";
  const Node& fused = plan.graph.nodes[0];
  EXPECT_EQ(fused.domain, "fovea");
  EXPECT_EQ(fused.op_type, "FusedConv");
  ASSERT_EQ(fused.inputs.size(), 4u);
  EXPECT_EQ(plan.graph.value(fused.inputs[3]).name, "x");
  EXPECT_EQ(*fused.attr_string("activation"), "Relu");
  expect_same_results(graph, plan, inputs);
}

// A frozen batch norm (torchvision's FrozenBatchNorm2d, DETR's backbone) is exported as a Mul by a
// per-channel scale and an Add of a per-channel shift: both fold into the Conv, whose ReLU then
// fuses. Constants that vary along another axis, a Sub of the conv's output from a constant, and a
// product of two computed values stay as they are.
TEST(PassFoldBatchNorm, AFrozenBatchNormsMulAndAddFoldIntoTheConv) {
  const std::vector<std::int64_t> shape = {2, 5, 9, 11};
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, shape, 8)};
  for (const Shape& scale_shape : {Shape{5, 1, 1}, Shape{1, 5, 1, 1}, Shape{1}}) {
    ModelBuilder m;
    m.input("x", DataType::kFloat32, shape).output("y", DataType::kFloat32, shape);
    m.initializer("w", random_tensor(DataType::kFloat32, {5, 5, 3, 3}, 1));
    m.initializer("scale", random_tensor(DataType::kFloat32, scale_shape, 3, 0.5, 2.0));
    m.initializer("shift", random_tensor(DataType::kFloat32, {1, 5, 1, 1}, 4));
    m.initializer("offset", random_tensor(DataType::kFloat32, {5, 1, 1}, 5));
    auto& conv = m.node("Conv", {"x", "w"}, {"c"}, "conv");
    m.attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
    m.node("Mul", {"scale", "c"}, {"scaled"});
    m.node("Add", {"scaled", "shift"}, {"shifted"});
    m.node("Sub", {"shifted", "offset"}, {"n"});
    m.node("Relu", {"n"}, {"y"});
    const Graph graph = load_graph(m);
    const ExecutionPlan plan = plan_for(graph, inputs);
    ASSERT_EQ(plan.graph.nodes.size(), 1u) << shape_string(scale_shape);
    EXPECT_EQ(plan.graph.nodes[0].op_type, "FusedConv");
    EXPECT_EQ(*plan.graph.nodes[0].attr_string("activation"), "Relu");
    expect_same_results(graph, plan, inputs);
  }
  ModelBuilder m;
  m.input("x", DataType::kFloat32, shape).output("y", DataType::kFloat32, shape);
  m.initializer("w", random_tensor(DataType::kFloat32, {5, 5, 3, 3}, 1));
  m.initializer("rows", random_tensor(DataType::kFloat32, {1, 1, 9, 1}, 3, 0.5, 2.0));
  m.initializer("offset", random_tensor(DataType::kFloat32, {5, 1, 1}, 5));
  auto& conv = m.node("Conv", {"x", "w"}, {"c"}, "conv");
  m.attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Mul", {"c", "rows"}, {"a"});
  m.node("Sub", {"offset", "a"}, {"b"});
  m.node("Mul", {"b", "x"}, {"y"});
  const Graph graph = load_graph(m);
  const ExecutionPlan plan = plan_for(graph, inputs);
  EXPECT_EQ(count_ops(plan.graph, "Mul"), 2);
  EXPECT_EQ(count_ops(plan.graph, "Sub"), 1);
  expect_same_results(graph, plan, inputs);
}

// SegFormer's round trips between a convolution's map and tokens: NCHW -> [N, C, HW] -> tokens
// [N, HW, C] -> LayerNorm -> back to [N, C, H, W] -> the next convolution. In NHWC both trips keep
// the memory order and become Reshapes: only the chain's two ends transpose.
TEST(PassFoldLayoutRoundTrips, TokenTripsBetweenNhwcConvolutionsAreReshapes) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 4, 6, 5}).output("y", DataType::kFloat32, {2, 8, 6, 5});
  m.initializer("w1", random_tensor(DataType::kFloat32, {8, 4, 3, 3}, 1));
  m.initializer("w2", random_tensor(DataType::kFloat32, {8, 1, 3, 3}, 2));
  m.initializer("gamma", random_tensor(DataType::kFloat32, {8}, 3, 0.5, 1.5));
  m.initializer("beta", random_tensor(DataType::kFloat32, {8}, 4));
  m.initializer("flat", Tensor::from_vector<std::int64_t>(DataType::kInt64, {3}, {2, 8, 30}));
  m.initializer("map", Tensor::from_vector<std::int64_t>(DataType::kInt64, {4}, {2, 8, 6, 5}));
  auto& embed = m.node("Conv", {"x", "w1"}, {"c"}, "embed");
  m.attr(embed, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Reshape", {"c", "flat"}, {"f"});
  auto& to_tokens = m.node("Transpose", {"f"}, {"tokens"});
  m.attr(to_tokens, "perm", std::vector<std::int64_t>{0, 2, 1});
  auto& norm = m.node("LayerNormalization", {"tokens", "gamma", "beta"}, {"n"});
  m.attr(norm, "axis", std::int64_t{-1});
  auto& to_map = m.node("Transpose", {"n"}, {"nt"});
  m.attr(to_map, "perm", std::vector<std::int64_t>{0, 2, 1});
  m.node("Reshape", {"nt", "map"}, {"n_map"});
  auto& depthwise = m.node("Conv", {"n_map", "w2"}, {"y"}, "depthwise");
  m.attr(depthwise, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.attr(depthwise, "group", std::int64_t{8});
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 4, 6, 5}, 9)};
  auto plan = plan_graph(graph, {{"x", {2, 4, 6, 5}}}, {.channels_last = true});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(count_ops(plan->graph, "Transpose"), 2);  // into NHWC at x, back to NCHW at y
  expect_same_results(graph, *plan, inputs);
}

// A Transpose that moves only dims of 1 (one attention head's split) is a Reshape; chains that do
// move elements (tokens transposed and then flattened) keep their Transposes.
TEST(PassFoldLayoutRoundTrips, OnlyChainsThatKeepTheMemoryOrderChange) {
  for (const bool moves_elements : {false, true}) {
    ModelBuilder m;
    const std::int64_t heads = moves_elements ? 2 : 1;
    m.input("x", DataType::kFloat32, {2, heads, 7, 3}).output("y", DataType::kFloat32, {2, 7, heads * 3});
    m.initializer("merged", Tensor::from_vector<std::int64_t>(DataType::kInt64, {3}, {2, 7, heads * 3}));
    auto& t = m.node("Transpose", {"x"}, {"t"});
    m.attr(t, "perm", std::vector<std::int64_t>{0, 2, 1, 3});
    m.node("Reshape", {"t", "merged"}, {"r"});
    m.node("Relu", {"r"}, {"y"});
    const Graph graph = load_graph(m);
    const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, heads, 7, 3}, 9)};
    auto plan = plan_graph(graph, {{"x", {2, heads, 7, 3}}}, {.channels_last = true});
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    EXPECT_EQ(count_ops(plan->graph, "Transpose"), moves_elements ? 1 : 0) << heads;
    expect_same_results(graph, *plan, inputs);
  }
}

// Random chains Transpose -> Reshape (a merge or a split of dims) -> Transpose over shapes with
// dims of 1: whatever the pass folds, the planned run gives the unoptimized graph's elements in
// their places; and some chains of them do keep the memory order, so the pass is exercised.
TEST(PassFoldLayoutRoundTrips, RandomChainsKeepTheirResults) {
  std::mt19937 random(7);
  const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(random() % n); };
  const auto permutation = [&](std::size_t rank) {
    std::vector<std::int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), random);
    return perm;
  };
  int folded = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const std::int64_t sizes[] = {1, 1, 2, 3, 4, 6};
    Shape x(3 + pick(2));
    for (std::int64_t& d : x) d = sizes[pick(6)];
    const std::vector<std::int64_t> first = permutation(x.size());
    Shape mid;
    for (std::int64_t p : first) mid.push_back(x[static_cast<std::size_t>(p)]);
    // Merge two neighbouring dims, or split one of 4 or 6 into 2 x (d / 2).
    Shape reshaped = mid;
    const std::size_t at = pick(mid.size() - 1);
    if (trial % 2 == 0) {
      reshaped[at] *= reshaped[at + 1];
      reshaped.erase(reshaped.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    } else if (mid[at] % 2 == 0 && mid[at] > 2) {
      reshaped[at] = 2;
      reshaped.insert(reshaped.begin() + static_cast<std::ptrdiff_t>(at) + 1, mid[at] / 2);
    }
    const std::vector<std::int64_t> second = permutation(reshaped.size());
    Shape y;
    for (std::int64_t p : second) y.push_back(reshaped[static_cast<std::size_t>(p)]);
    ModelBuilder m;
    m.input("x", DataType::kFloat32, x).output("y", DataType::kFloat32, y);
    m.initializer("shape", Tensor::from_vector<std::int64_t>(
                               DataType::kInt64, {static_cast<std::int64_t>(reshaped.size())}, reshaped));
    m.attr(m.node("Transpose", {"x"}, {"a"}), "perm", first);
    m.node("Reshape", {"a", "shape"}, {"b"});
    m.attr(m.node("Transpose", {"b"}, {"c"}), "perm", second);
    m.node("Relu", {"c"}, {"y"});
    const Graph graph = load_graph(m);
    const std::vector<Tensor> inputs = {
        random_tensor(DataType::kFloat32, x, static_cast<std::uint32_t>(trial))};
    auto plan = plan_graph(graph, {{"x", x}}, {.channels_last = true});
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    folded += count_ops(plan->graph, "Transpose") < 2;
    expect_same_results(graph, *plan, inputs);
  }
  EXPECT_GT(folded, 0);
}

TEST(PassChannelsLast, ConvolutionChainsTransposeOnlyAtTheirEnds) {
  ModelBuilder m;
  const Graph graph = load_graph(conv_chain(m));
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 4, 9, 11}, 9)};
  auto plan = plan_graph(graph, {{"x", {2, 4, 9, 11}}}, {.channels_last = true});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  // Into NHWC before the first convolution, back to NCHW after the pool (NHWC too): nothing in
  // between.
  EXPECT_EQ(count_ops(plan->graph, "Transpose"), 2);
  EXPECT_EQ(count_ops(plan->graph, "FusedConv"), 2);
  for (const Node& node : plan->graph.nodes) {
    if (node.op_type == "FusedConv") {
      EXPECT_EQ(*node.attr_int("channels_last"), 1) << node.name;
    }
  }
  expect_same_results(graph, *plan, inputs);
}

// ConvNeXt's block: a convolution, the model's Permute to NHWC, a LayerNorm over channels, the
// Permute back and the next convolution. The model's Transposes meet the pass's: both pairs
// cancel, so only the chain's two ends transpose (six Transposes otherwise).
TEST(PassChannelsLast, TheModelsOwnTransposesCancelWithThePasses) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 8, 9, 11}).output("y", DataType::kFloat32, {2, 8, 9, 11});
  m.initializer("w1", random_tensor(DataType::kFloat32, {8, 1, 3, 3}, 1));
  m.initializer("w2", random_tensor(DataType::kFloat32, {8, 8, 1, 1}, 2));
  m.initializer("gamma", random_tensor(DataType::kFloat32, {8}, 3, 0.5, 1.5));
  m.initializer("beta", random_tensor(DataType::kFloat32, {8}, 4));
  auto& depthwise = m.node("Conv", {"x", "w1"}, {"c"}, "depthwise");
  m.attr(depthwise, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.attr(depthwise, "group", std::int64_t{8});
  auto& to_nhwc = m.node("Transpose", {"c"}, {"c_nhwc"});
  m.attr(to_nhwc, "perm", std::vector<std::int64_t>{0, 2, 3, 1});
  auto& norm = m.node("LayerNormalization", {"c_nhwc", "gamma", "beta"}, {"n"});
  m.attr(norm, "axis", std::int64_t{-1});
  auto& to_nchw = m.node("Transpose", {"n"}, {"n_nchw"});
  m.attr(to_nchw, "perm", std::vector<std::int64_t>{0, 3, 1, 2});
  m.node("Conv", {"n_nchw", "w2"}, {"y"}, "pointwise");
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 8, 9, 11}, 9)};
  auto plan = plan_graph(graph, {{"x", {2, 8, 9, 11}}}, {.channels_last = true});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(count_ops(plan->graph, "Transpose"), 2);
  EXPECT_EQ(count_ops(plan->graph, "FusedConv"), 2);
  expect_same_results(graph, *plan, inputs);
}

// ConvNeXt's residual: each block adds its input to the model's Permute back to NCHW. With both in
// NHWC the Add runs there too, so a chain of blocks transposes only at its ends (two per block
// otherwise). The layer scale comes in both forms: a row [C] before the Permute, and torchvision's
// Mul(gamma [C, 1, 1], Permute(...)) after it, which sink_transposes moves before the Permute;
// fuse_matmul_bias folds either into the Linear's weights.
TEST(PassChannelsLast, AResidualAddOfTwoNhwcValuesRunsInNhwc) {
  constexpr std::int64_t kC = 8;
  for (const bool torchvision_scale : {false, true}) {
    ModelBuilder m;
    m.input("x", DataType::kFloat32, {2, 3, 9, 11}).output("y", DataType::kFloat32, {2, kC, 9, 11});
    m.initializer("stem_w", random_tensor(DataType::kFloat32, {kC, 3, 3, 3}, 1));
    auto& stem = m.node("Conv", {"x", "stem_w"}, {"b0"}, "stem");
    m.attr(stem, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
    for (int block = 0; block < 2; ++block) {
      const std::string in = "b" + std::to_string(block);
      const std::string p = "blk" + std::to_string(block) + "_";
      const std::string out = block == 1 ? std::string("y") : "b" + std::to_string(block + 1);
      m.initializer(p + "dw", random_tensor(DataType::kFloat32, {kC, 1, 3, 3}, 10 + block));
      m.initializer(p + "gamma", random_tensor(DataType::kFloat32, {kC}, 20 + block, 0.5, 1.5));
      m.initializer(p + "beta", random_tensor(DataType::kFloat32, {kC}, 30 + block));
      m.initializer(p + "up", random_tensor(DataType::kFloat32, {kC, 2 * kC}, 40 + block));
      m.initializer(p + "up_b", random_tensor(DataType::kFloat32, {2 * kC}, 45 + block));
      m.initializer(p + "down", random_tensor(DataType::kFloat32, {2 * kC, kC}, 50 + block));
      m.initializer(p + "down_b", random_tensor(DataType::kFloat32, {kC}, 55 + block));
      m.initializer(p + "scale", random_tensor(DataType::kFloat32,
                                               torchvision_scale ? Shape{kC, 1, 1} : Shape{kC}, 60 + block));
      auto& depthwise = m.node("Conv", {in, p + "dw"}, {p + "c"}, p + "depthwise");
      m.attr(depthwise, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
      m.attr(depthwise, "group", kC);
      auto& to_nhwc = m.node("Transpose", {p + "c"}, {p + "c_nhwc"});
      m.attr(to_nhwc, "perm", std::vector<std::int64_t>{0, 2, 3, 1});
      auto& norm = m.node("LayerNormalization", {p + "c_nhwc", p + "gamma", p + "beta"}, {p + "n"});
      m.attr(norm, "axis", std::int64_t{-1});
      m.node("MatMul", {p + "n", p + "up"}, {p + "u"});
      m.node("Add", {p + "u", p + "up_b"}, {p + "ub"});
      m.node("Relu", {p + "ub"}, {p + "r"});
      m.node("MatMul", {p + "r", p + "down"}, {p + "d"});
      m.node("Add", {p + "down_b", p + "d"}, {p + "db"});
      const std::string scaled = torchvision_scale ? p + "s" : p + "s_nchw";
      if (!torchvision_scale) m.node("Mul", {p + "db", p + "scale"}, {p + "s"});
      auto& to_nchw = m.node("Transpose", {torchvision_scale ? p + "db" : p + "s"}, {p + "t"});
      m.attr(to_nchw, "perm", std::vector<std::int64_t>{0, 3, 1, 2});
      if (torchvision_scale) m.node("Mul", {p + "scale", p + "t"}, {p + "s"});
      m.node("Add", {in, torchvision_scale ? p + "s" : p + "t"}, {out});
    }
    const Graph graph = load_graph(m);
    const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 3, 9, 11}, 9)};
    auto plan = plan_graph(graph, {{"x", {2, 3, 9, 11}}}, {.channels_last = true});
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    EXPECT_EQ(count_ops(plan->graph, "Transpose"), 2)
        << torchvision_scale;  // the input to NHWC, the output back
    EXPECT_EQ(count_ops(plan->graph, "FusedConv"), 3);
    EXPECT_EQ(count_ops(plan->graph, "Gemm"), 4);
    EXPECT_EQ(count_ops(plan->graph, "Mul"), 0);  // both scales are in the Linear's weights
    expect_same_results(graph, *plan, inputs);
  }
}

// op(Transpose(x), c) becomes Transpose(op(x, c')) for Add/Sub/Mul/Div of a constant on either
// side, the constant's axes put back (here one of two non-1 dims, so its data moves), along a chain;
// a Transpose another node also reads, and an op that broadcasts the transposed value, stay.
TEST(PassSinkTransposes, ConstantOpsMoveBeforeATransposeTheyAloneRead) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3, 4, 5}).output("y", DataType::kFloat32, {2, 4, 5, 3});
  m.initializer("c", random_tensor(DataType::kFloat32, {5, 3}, 1));
  m.initializer("d", random_tensor(DataType::kFloat32, {1, 4, 1, 1}, 2, 0.5, 1.5));
  auto& t = m.node("Transpose", {"x"}, {"t"});
  m.attr(t, "perm", std::vector<std::int64_t>{0, 2, 3, 1});
  m.node("Mul", {"t", "c"}, {"a"});
  m.node("Sub", {"c", "a"}, {"b"});
  m.node("Div", {"b", "d"}, {"y"});
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 3, 4, 5}, 3)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  ASSERT_EQ(count_ops(plan.graph, "Transpose"), 1);
  EXPECT_EQ(plan.graph.nodes.back().op_type, "Transpose");  // past all three ops
  expect_same_results(graph, plan, inputs);

  for (int variant = 0; variant < 2; ++variant) {
    ModelBuilder k;
    k.input("x", DataType::kFloat32, {2, 3, 1}).output("y", DataType::kFloat32, {2, 4, 3});
    k.initializer("c", random_tensor(DataType::kFloat32, variant == 0 ? Shape{3} : Shape{4, 1}, 1));
    auto& kt = k.node("Transpose", {"x"}, {"t"});
    k.attr(kt, "perm", std::vector<std::int64_t>{0, 2, 1});
    if (variant == 0) k.output("t", DataType::kFloat32, {2, 1, 3});  // read by the graph too
    k.node("Add", {"t", "c"}, {variant == 0 ? "y0" : "y"});
    if (variant == 0) k.node("Expand", {"y0", "shape"}, {"y"});
    if (variant == 0)
      k.initializer("shape", Tensor::from_vector<std::int64_t>(DataType::kInt64, {3}, {2, 4, 3}));
    const Graph kept = load_graph(k);
    const std::vector<Tensor> kept_inputs = {random_tensor(DataType::kFloat32, {2, 3, 1}, 3)};
    const ExecutionPlan kept_plan = plan_for(kept, kept_inputs);
    EXPECT_EQ(kept_plan.graph.nodes.front().op_type, "Transpose") << variant;
    expect_same_results(kept, kept_plan, kept_inputs);
  }
}

TEST(PassConvertFloat16, NarrowsDataButNotTheScalesResizeTypesAsFloat32) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {1, 2, 3, 5}).output("y", DataType::kFloat32, {1, 2, 6, 10});
  m.initializer("scales", float_tensor({4}, {1, 1, 2, 2}));
  m.node("Resize", {"x", "", "scales"}, {"y"}, "upsample");
  const Graph graph = load_graph(m);
  auto plan = plan_graph(graph, {{"x", {1, 2, 3, 5}}}, {.precision = Precision::kFloat16});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  for (const Node& node : plan->graph.nodes) {
    if (node.op_type != "Resize") continue;
    EXPECT_EQ(plan->graph.value(node.inputs[0]).type.dtype, DataType::kFloat16);
    EXPECT_EQ(plan->graph.value(node.inputs[2]).type.dtype, DataType::kFloat32);
  }
  EXPECT_EQ(count_ops(plan->graph, "Cast"), 2);  // into float16 and back out
}

// With a float16 interface the caller hands over float16 and gets float16: no Casts at the edges,
// only around a node kept in float32.
TEST(PassConvertFloat16, Float16InterfaceHasNoCastsAtTheEdges) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {1, 2, 3, 5}).output("y", DataType::kFloat32, {1, 2, 6, 10});
  m.initializer("scales", float_tensor({4}, {1, 1, 2, 2}));
  m.node("Relu", {"x"}, {"r"}, "relu");
  m.node("Resize", {"r", "", "scales"}, {"y"}, "upsample");
  const Graph graph = load_graph(m);
  const InputShapes shapes = {{"x", {1, 2, 3, 5}}};
  auto plan = plan_graph(graph, shapes, {.precision = Precision::kFloat16, .float16_interface = true});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan->graph.value(plan->graph.inputs[0]).type.dtype, DataType::kFloat16);
  EXPECT_EQ(plan->graph.value(plan->graph.outputs[0]).type.dtype, DataType::kFloat16);
  EXPECT_EQ(count_ops(plan->graph, "Cast"), 0);

  auto kept = plan_graph(
      graph, shapes, {.precision = Precision::kFloat16, .keep_float32 = {"relu"}, .float16_interface = true});
  ASSERT_TRUE(kept.is_ok()) << kept.status().to_string();
  EXPECT_EQ(kept->graph.value(kept->graph.inputs[0]).type.dtype, DataType::kFloat16);
  EXPECT_EQ(count_ops(kept->graph, "Cast"), 2);  // into the float32 Relu and back out
}

TEST(PassFuseConv, LeavesAResidualThatIsReadElsewhere) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {1, 2, 5, 5}).output("y", DataType::kFloat32, {1, 2, 5, 5});
  m.output("c_out", DataType::kFloat32, {1, 2, 5, 5});
  m.initializer("w", random_tensor(DataType::kFloat32, {2, 2, 1, 1}, 1));
  m.node("Conv", {"x", "w"}, {"c_out"}, "conv");  // a graph output: the Add cannot absorb it
  m.node("Add", {"c_out", "x"}, {"y"}, "add");
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {1, 2, 5, 5}, 2)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  EXPECT_EQ(count_ops(plan.graph, "Add"), 1);
  expect_same_results(graph, plan, inputs);
}

// ResNet's projection block: the main path's last conv and the shortcut conv, added, then ReLU. One
// conv absorbs the Add and ReLU; the other reads as its residual and hands over its bias.
TEST(PassFuseConv, MovesAResidualConvsBiasIntoItsReader) {
  ModelBuilder m;
  const std::vector<std::int64_t> shape = {2, 6, 7, 9};
  m.input("x", DataType::kFloat32, {2, 3, 7, 9}).output("y", DataType::kFloat32, shape);
  m.initializer("w_main", random_tensor(DataType::kFloat32, {6, 3, 3, 3}, 1));
  m.initializer("b_main", random_tensor(DataType::kFloat32, {6}, 2));
  m.initializer("w_short", random_tensor(DataType::kFloat32, {6, 3, 1, 1}, 3));
  m.initializer("b_short", random_tensor(DataType::kFloat32, {6}, 4));
  auto& main = m.node("Conv", {"x", "w_main", "b_main"}, {"main"}, "main");
  m.attr(main, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Conv", {"x", "w_short", "b_short"}, {"short"}, "shortcut");
  m.node("Add", {"main", "short"}, {"s"}, "add");
  m.node("Relu", {"s"}, {"y"}, "relu");
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 3, 7, 9}, 5)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  ASSERT_EQ(plan.graph.nodes.size(), 2u);
  const Node& bare = plan.graph.nodes[0];
  const Node& reader = plan.graph.nodes[1];
  EXPECT_EQ(bare.name, "main");
  EXPECT_EQ(bare.inputs.size(), 2u) << "the conv read as a residual keeps no bias";
  EXPECT_FALSE(bare.has_attribute("activation"));
  ASSERT_EQ(reader.inputs.size(), 4u);
  EXPECT_EQ(reader.inputs[3], bare.outputs[0]);
  const Tensor& bias = *plan.graph.value(reader.inputs[2]).constant;
  const Tensor& b_main = *graph.value(graph.find_value("b_main")).constant;
  const Tensor& b_short = *graph.value(graph.find_value("b_short")).constant;
  for (std::int64_t c = 0; c < 6; ++c) {
    EXPECT_FLOAT_EQ(bias.data<float>()[c], b_main.data<float>()[c] + b_short.data<float>()[c]) << c;
  }
  expect_same_results(graph, plan, inputs);
}

// The chain PyTorch exports for x.view(x.size(0), -1).
// EfficientNet's Conv + BatchNorm + SiLU, the SiLU exported as x * Sigmoid(x) (both Mul orders):
// one FusedConv with a Silu epilogue. A SiLU whose gate is read elsewhere stays as written.
TEST(PassFuseConv, SiluWrittenOutBecomesTheEpilogue) {
  for (int variant = 0; variant < 3; ++variant) {
    ModelBuilder m;
    const std::vector<std::int64_t> shape = {2, 6, 7, 9};
    m.input("x", DataType::kFloat32, shape).output("y", DataType::kFloat32, shape);
    if (variant == 2) m.output("s", DataType::kFloat32, shape);
    m.initializer("w", random_tensor(DataType::kFloat32, {6, 6, 3, 3}, 1));
    m.initializer("scale", random_tensor(DataType::kFloat32, {6}, 3, 0.5, 2.0));
    m.initializer("shift", random_tensor(DataType::kFloat32, {6}, 4));
    m.initializer("mean", random_tensor(DataType::kFloat32, {6}, 5));
    m.initializer("var", random_tensor(DataType::kFloat32, {6}, 6, 0.1, 3.0));
    auto& conv = m.node("Conv", {"x", "w"}, {"c"}, "conv");
    m.attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
    m.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"n"}, "bn");
    m.node("Sigmoid", {"n"}, {"s"});
    if (variant == 1) {
      m.node("Mul", {"s", "n"}, {"y"});
    } else {
      m.node("Mul", {"n", "s"}, {"y"});
    }
    const Graph graph = load_graph(m);
    const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, shape, 8)};
    const ExecutionPlan plan = plan_for(graph, inputs);
    if (variant == 2) {
      EXPECT_EQ(count_ops(plan.graph, "Sigmoid"), 1);
      EXPECT_EQ(count_ops(plan.graph, "Mul"), 1);
    } else {
      ASSERT_EQ(plan.graph.nodes.size(), 1u) << "variant " << variant;
      EXPECT_EQ(plan.graph.nodes[0].op_type, "FusedConv");
      EXPECT_EQ(*plan.graph.nodes[0].attr_string("activation"), "Silu");
    }
    expect_same_results(graph, plan, inputs);
  }
}

TEST(PassFoldConstants, ShapeChainsBecomeConstants) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {-1, 3, 4, 5}).output("y", DataType::kFloat32, {-1, 60});
  m.initializer("zero", Tensor::from_vector<std::int64_t>(DataType::kInt64, {}, {0}));
  m.initializer("axes", Tensor::from_vector<std::int64_t>(DataType::kInt64, {1}, {0}));
  m.initializer("minus_one", Tensor::from_vector<std::int64_t>(DataType::kInt64, {1}, {-1}));
  m.node("Shape", {"x"}, {"shape"});
  m.node("Gather", {"shape", "zero"}, {"batch"});
  m.node("Unsqueeze", {"batch", "axes"}, {"batch1"});
  auto& concat = m.node("Concat", {"batch1", "minus_one"}, {"target"});
  m.attr(concat, "axis", std::int64_t{0});
  m.node("Reshape", {"x", "target"}, {"y"});
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 3, 4, 5}, 3)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  ASSERT_EQ(plan.graph.nodes.size(), 1u);
  EXPECT_EQ(plan.graph.nodes[0].op_type, "Reshape");
  EXPECT_TRUE(plan.graph.is_constant(plan.graph.nodes[0].inputs[1]));
  EXPECT_EQ(dims_string(*plan.graph.value(plan.graph.outputs[0]).type.dims), "[2, 60]");
  expect_same_results(graph, plan, inputs);
}

Tensor scalar(float value) {
  return Tensor::from_vector<float>(DataType::kFloat32, {}, {value});
}

// nn.GELU() as PyTorch exports it before opset 20, in its two orders of the 0.5 and with Div or
// Mul by 1/sqrt 2: one Gelu node, the same results, and an intermediate read elsewhere (a graph
// output) keeps the pattern as written.
TEST(PassFuseGelu, TheErfFormsBecomeOneGelu) {
  for (int variant = 0; variant < 3; ++variant) {
    ModelBuilder m;
    m.input("x", DataType::kFloat32, {2, 3, 7}).output("y", DataType::kFloat32, {2, 3, 7});
    m.initializer("sqrt2", scalar(1.4142135f)).initializer("inv_sqrt2", scalar(0.70710678f));
    m.initializer("one", scalar(1.0f)).initializer("half", scalar(0.5f));
    m.node("Relu", {"x"}, {"r"});  // the GELU's input is computed, as in a network
    if (variant == 1) {
      m.node("Mul", {"r", "inv_sqrt2"}, {"d"});
    } else {
      m.node("Div", {"r", "sqrt2"}, {"d"});
    }
    m.node("Erf", {"d"}, {"e"});
    m.node("Add", {"one", "e"}, {"a"});
    if (variant == 2) {
      m.node("Mul", {"half", "r"}, {"h"});
      m.node("Mul", {"h", "a"}, {"y"});
    } else {
      m.node("Mul", {"r", "a"}, {"p"});
      m.node("Mul", {"p", "half"}, {"y"});
    }
    const Graph graph = load_graph(m);
    const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 3, 7}, 5, -4, 4)};
    const ExecutionPlan plan = plan_for(graph, inputs);
    ASSERT_EQ(plan.graph.nodes.size(), 2u) << "variant " << variant;
    EXPECT_EQ(plan.graph.nodes[1].op_type, "Gelu");
    EXPECT_EQ(*plan.graph.nodes[1].attr_string("approximate"), "none");
    EXPECT_EQ(plan.graph.value(plan.graph.nodes[1].inputs[0]).name, "r");
    expect_same_results(graph, plan, inputs);
  }
}

TEST(PassFuseGelu, TheTanhFormBecomesOneGelu) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {4, 9}).output("y", DataType::kFloat32, {4, 9});
  m.initializer("three", scalar(3.0f)).initializer("cubic", scalar(0.044715f));
  m.initializer("k", scalar(0.7978845608f))
      .initializer("one", scalar(1.0f))
      .initializer("half", scalar(0.5f));
  m.node("Pow", {"x", "three"}, {"c"});
  m.node("Mul", {"c", "cubic"}, {"c1"});
  m.node("Add", {"x", "c1"}, {"s"});
  m.node("Mul", {"k", "s"}, {"u"});
  m.node("Tanh", {"u"}, {"t"});
  m.node("Add", {"t", "one"}, {"a"});
  m.node("Mul", {"x", "half"}, {"h"});
  m.node("Mul", {"h", "a"}, {"y"});
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {4, 9}, 6, -5, 5)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  ASSERT_EQ(plan.graph.nodes.size(), 1u);
  EXPECT_EQ(plan.graph.nodes[0].op_type, "Gelu");
  EXPECT_EQ(*plan.graph.nodes[0].attr_string("approximate"), "tanh");
  expect_same_results(graph, plan, inputs);
}

TEST(PassFuseGelu, LeavesPatternsThatDifferOrAreReadElsewhere) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {5})
      .output("y", DataType::kFloat32, {5})
      .output("e", DataType::kFloat32, {5});
  m.output("z", DataType::kFloat32, {5});
  m.initializer("sqrt2", scalar(1.4142135f))
      .initializer("one", scalar(1.0f))
      .initializer("half", scalar(0.5f));
  m.initializer("two", scalar(2.0f));
  // The Erf's output is a graph output too: fusing would lose it.
  m.node("Div", {"x", "sqrt2"}, {"d"});
  m.node("Erf", {"d"}, {"e"});
  m.node("Add", {"e", "one"}, {"a"});
  m.node("Mul", {"x", "a"}, {"p"});
  m.node("Mul", {"p", "half"}, {"y"});
  // Divided by 2, not sqrt 2: not a GELU.
  m.node("Div", {"x", "two"}, {"d2"});
  m.node("Erf", {"d2"}, {"e2"});
  m.node("Add", {"e2", "one"}, {"a2"});
  m.node("Mul", {"x", "a2"}, {"p2"});
  m.node("Mul", {"p2", "half"}, {"z"});
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {5}, 7)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  for (const Node& node : plan.graph.nodes) EXPECT_NE(node.op_type, "Gelu");
  EXPECT_EQ(plan.graph.nodes.size(), 10u);
  expect_same_results(graph, plan, inputs);
}

TEST(PassEliminateDeadNodes, DropsBranchesNoOutputNeeds) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {4}).output("y", DataType::kFloat32, {4});
  m.node("Relu", {"x"}, {"y"});
  m.node("Exp", {"x"}, {"unused"});
  m.node("Neg", {"unused"}, {"also_unused"});
  const Graph graph = load_graph(m);
  const ExecutionPlan plan = plan_for(graph, {random_tensor(DataType::kFloat32, {4}, 1)});
  ASSERT_EQ(plan.graph.nodes.size(), 1u);
  EXPECT_EQ(plan.graph.nodes[0].op_type, "Relu");
}

// q, k, v [2, 3, 5, 8] in, y [2, 3, 5, 8] out; `scores` builds the chain from q and k to the
// Softmax's input, named "s". With `nan_guard`, the probabilities go through Hugging Face's
// Where(IsNaN(p), 0, p) before the product with v.
Graph attention_graph(const std::function<void(ModelBuilder&)>& scores, bool extra_reader = false,
                      bool nan_guard = false) {
  ModelBuilder m;
  for (const char* name : {"q", "k", "v"}) m.input(name, DataType::kFloat32, {2, 3, 5, 8});
  m.output("y", DataType::kFloat32, {2, 3, 5, 8});
  if (extra_reader) m.output("p", DataType::kFloat32, {2, 3, 5, 5});
  auto& kt = m.node("Transpose", {"k"}, {"kt"});
  m.attr(kt, "perm", std::vector<std::int64_t>{0, 1, 3, 2});
  scores(m);
  auto& softmax = m.node("Softmax", {"s"}, {"p"});
  m.attr(softmax, "axis", std::int64_t{-1});
  if (nan_guard) {
    m.initializer("zero", scalar(0.0f));
    m.node("IsNaN", {"p"}, {"nan"});
    m.node("Where", {"nan", "zero", "p"}, {"guarded"});
  }
  m.node("MatMul", {nan_guard ? "guarded" : "p", "v"}, {"y"});
  return load_graph(m);
}

std::vector<Tensor> attention_inputs() {
  return {random_tensor(DataType::kFloat32, {2, 3, 5, 8}, 1),
          random_tensor(DataType::kFloat32, {2, 3, 5, 8}, 2),
          random_tensor(DataType::kFloat32, {2, 3, 5, 8}, 3)};
}

// PyTorch's export of scaled_dot_product_attention scales Q and KT by sqrt(scale) each.
TEST(PassFuseAttention, ScaledQAndKtBecomeOneNode) {
  const Graph graph = attention_graph([](ModelBuilder& m) {
    m.initializer("root_scale", scalar(0.59460356f));
    m.node("Mul", {"q", "root_scale"}, {"qs"});
    m.node("Mul", {"kt", "root_scale"}, {"kts"});
    m.node("MatMul", {"qs", "kts"}, {"s"});
  });
  const ExecutionPlan plan = plan_for(graph, attention_inputs());
  EXPECT_EQ(count_ops(plan.graph, "Attention"), 1);
  EXPECT_EQ(count_ops(plan.graph, "Softmax"), 0);
  EXPECT_EQ(count_ops(plan.graph, "MatMul"), 0);
  EXPECT_EQ(count_ops(plan.graph, "Transpose"), 0);  // the node reads k's rows: fold_attention_views
  expect_same_results(graph, plan, attention_inputs());
}

// Hugging Face's attention (DETR, ViT) guards its softmax with Where(IsNaN(p), 0, p). With no
// bias, or a constant one every row of which keeps a float16-finite value, finite scores give no NaN
// and the guard goes with the rest of the chain; with a bias computed at run time, or a row masked
// entirely, it stays and so do the ops.
TEST(PassFuseAttention, HuggingFacesNanGuardGoesWhereItCannotFire) {
  const Tensor masked_row = Tensor::from_vector<float>(
      DataType::kFloat32, {1, 1, 5, 5},
      {0, -1e30f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1e30f, 0, 0, 0, 0, 0, -1e30f, 0, 0, 0, 0});
  Tensor masked_entirely = masked_row.clone();
  for (int i = 5; i < 10; ++i) masked_entirely.data<float>()[i] = -3e38f;
  for (int variant = 0; variant < 5; ++variant) {
    const Graph graph = attention_graph(
        [&](ModelBuilder& m) {
          m.node("MatMul", {"q", "kt"}, {variant == 0 ? "s" : "qk"});
          if (variant == 0) return;
          if (variant == 3) {
            m.node("MatMul", {"v", "kt"}, {"bias"});  // computed at run time
          } else if (variant == 4) {
            m.initializer("bias", Tensor::from_vector<float>(DataType::kFloat32, {2, 1, 5, 5},
                                                             std::vector<float>(50, 0.0f)));  // adds nothing
          } else {
            m.initializer("bias", variant == 1 ? masked_row : masked_entirely);
          }
          m.node("Add", {"qk", "bias"}, {"s"});
        },
        false, true);
    const ExecutionPlan plan = plan_for(graph, attention_inputs());
    const bool fused = variant < 2 || variant == 4;
    EXPECT_EQ(count_ops(plan.graph, "Attention"), fused ? 1 : 0) << variant;
    EXPECT_EQ(count_ops(plan.graph, "Where"), fused ? 0 : 1) << variant;
    if (variant == 4) {
      EXPECT_EQ(plan.graph.nodes.back().inputs.size(), 3u) << "the zero mask is dropped";
    }
    expect_same_results(graph, plan, attention_inputs());
  }
}

// Swin: the scores divided after the product, plus a relative-position bias that broadcasts over
// the batch (written first in the Add).
TEST(PassFuseAttention, ABiasAddedEitherWayRoundJoinsTheNode) {
  const Graph graph = attention_graph([](ModelBuilder& m) {
    m.initializer("root_d", scalar(2.828427f));
    m.initializer("bias", random_tensor(DataType::kFloat32, {3, 5, 5}, 7));
    m.node("MatMul", {"q", "kt"}, {"qk"});
    m.node("Div", {"qk", "root_d"}, {"scaled"});
    m.node("Add", {"bias", "scaled"}, {"s"});
  });
  const ExecutionPlan plan = plan_for(graph, attention_inputs());
  EXPECT_EQ(count_ops(plan.graph, "Attention"), 1);
  EXPECT_EQ(count_ops(plan.graph, "Add"), 0);
  expect_same_results(graph, plan, attention_inputs());
}

// The weights read elsewhere (here a graph output), or a bias that widens the scores: nothing fuses,
// and the results stay the same.
TEST(PassFuseAttention, ChainsReadElsewhereOrWidenedStayAsTheyAre) {
  const Graph read_twice = attention_graph(
      [](ModelBuilder& m) {
        m.node("MatMul", {"q", "kt"}, {"s"});
      },
      true);
  const ExecutionPlan plan = plan_for(read_twice, attention_inputs());
  EXPECT_EQ(count_ops(plan.graph, "Attention"), 0);
  expect_same_results(read_twice, plan, attention_inputs());

  ModelBuilder m;
  for (const char* name : {"q", "k", "v"}) m.input(name, DataType::kFloat32, {2, 3, 1, 8});
  m.input("wide", DataType::kFloat32, {2, 3, 5, 1});
  m.output("y", DataType::kFloat32, {2, 3, 5, 8});
  auto& kt = m.node("Transpose", {"k"}, {"kt"});
  m.attr(kt, "perm", std::vector<std::int64_t>{0, 1, 3, 2});
  m.node("MatMul", {"q", "kt"}, {"qk"});  // [2, 3, 1, 1]
  m.node("Add", {"qk", "wide"}, {"s"});   // [2, 3, 5, 1]: the bias widens the scores
  auto& softmax = m.node("Softmax", {"s"}, {"p"});
  m.attr(softmax, "axis", std::int64_t{-1});
  m.node("MatMul", {"p", "v"}, {"y"});
  const Graph widened = load_graph(m);
  const std::vector<Tensor> inputs = {
      random_tensor(DataType::kFloat32, {2, 3, 1, 8}, 1), random_tensor(DataType::kFloat32, {2, 3, 1, 8}, 2),
      random_tensor(DataType::kFloat32, {2, 3, 1, 8}, 3), random_tensor(DataType::kFloat32, {2, 3, 5, 1}, 4)};
  const ExecutionPlan widened_plan = plan_for(widened, inputs);
  EXPECT_EQ(count_ops(widened_plan.graph, "Attention"), 0);
  expect_same_results(widened, widened_plan, inputs);
}

const Node* attention_node_of(const Graph& graph) {
  for (const Node& node : graph.nodes) {
    if (node.op_type == "Attention") return &node;
  }
  return nullptr;
}

Tensor int64_constant(std::vector<std::int64_t> dims, std::vector<std::int64_t> values) {
  return Tensor::from_vector<std::int64_t>(DataType::kInt64, std::move(dims), values);
}

// torch's multi-head attention as exported: the packed projection p [T 6, B 2, 3 * E] (E 12, 3
// heads of 4) through Reshape, Unsqueeze, Transpose, Squeeze and a Gather per operand, each then
// Reshape -> Transpose -> Reshape to [B, H, T, D]; the output Transposed back to [T, B, H, D] and
// flattened to [T * B, E].
// Adds the head split of `p` [6, b, 36], the attention, and the head merge into `y` [6 * b, 12].
void add_head_split(ModelBuilder& m, std::int64_t b) {
  m.initializer("packed", int64_constant({4}, {6, b, 3, 12}));
  m.initializer("axis0", int64_constant({1}, {0}));
  m.initializer("axis3", int64_constant({1}, {3}));
  m.initializer("heads", int64_constant({3}, {6, 3 * b, 4}));
  m.initializer("split", int64_constant({4}, {b, 3, 6, 4}));
  m.initializer("merged", int64_constant({2}, {6 * b, 12}));
  m.node("Reshape", {"p", "packed"}, {"p4"});
  m.node("Unsqueeze", {"p4", "axis0"}, {"p5"});
  m.attr(m.node("Transpose", {"p5"}, {"p5t"}), "perm", std::vector<std::int64_t>{3, 1, 2, 0, 4});
  m.node("Squeeze", {"p5t", "axis3"}, {"qkv"});
  for (int i = 0; i < 3; ++i) {
    const std::string name(1, "qkv"[i]);
    m.initializer("index" + name, int64_constant({}, {i}));
    m.node("Gather", {"qkv", "index" + name}, {name + "_rows"});
    m.node("Reshape", {name + "_rows", "heads"}, {name + "_heads"});
    m.attr(m.node("Transpose", {name + "_heads"}, {name + "_major"}), "perm",
           std::vector<std::int64_t>{1, 0, 2});
    m.node("Reshape", {name + "_major", "split"}, {name});
  }
  m.attr(m.node("Transpose", {"k"}, {"kt"}), "perm", std::vector<std::int64_t>{0, 1, 3, 2});
  m.initializer("scale", scalar(0.5f));
  m.node("MatMul", {"q", "kt"}, {"qk"});
  m.node("Mul", {"qk", "scale"}, {"s"});
  m.attr(m.node("Softmax", {"s"}, {"w"}), "axis", std::int64_t{-1});
  m.node("MatMul", {"w", "v"}, {"o"});
  m.attr(m.node("Transpose", {"o"}, {"ot"}), "perm", std::vector<std::int64_t>{2, 0, 1, 3});
  m.node("Reshape", {"ot", "merged"}, {"y"});
}

Graph head_split_graph() {
  ModelBuilder m;
  m.input("p", DataType::kFloat32, {6, 2, 36}).output("y", DataType::kFloat32, {12, 12});
  add_head_split(m, 2);
  return load_graph(m);
}

TEST(PassFoldAttentionViews, TheHeadSplitAndMergeBecomeTheKernelsStridedReads) {
  const Graph graph = head_split_graph();
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {6, 2, 36}, 11)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  EXPECT_EQ(count_ops(plan.graph, "Attention"), 1);
  EXPECT_EQ(count_ops(plan.graph, "Transpose"), 0);
  EXPECT_EQ(count_ops(plan.graph, "Gather"), 0);
  const Node* attention = attention_node_of(plan.graph);
  ASSERT_NE(attention, nullptr);
  // Every operand reads p itself: Q (b, h, t, e) at b * 36 + h * 4 + t * 72 + e, K 12 further on as
  // key rows (KT's D stride 1), V 24 further on; Y written as [T, B, H, D].
  const auto ints = [&](const char* key) { return attention->attr_ints(key).value(); };
  EXPECT_EQ(ints("q_view"), (std::vector<std::int64_t>{0, 2, 36, 3, 4, 6, 72, 4, 1}));
  EXPECT_EQ(ints("kt_view"), (std::vector<std::int64_t>{12, 2, 36, 3, 4, 4, 1, 6, 72}));
  EXPECT_EQ(ints("v_view"), (std::vector<std::int64_t>{24, 2, 36, 3, 4, 6, 72, 4, 1}));
  EXPECT_EQ(ints("y_perm"), (std::vector<std::int64_t>{2, 0, 1, 3}));
  for (ValueId input : attention->inputs) EXPECT_EQ(plan.graph.value(input).name, "p");
  expect_same_results(graph, plan, inputs);
}

// Q's rows strided (a Transpose that moves the last axis): Q stays a copy. V's Transpose too, but
// the two Reshapes after it are views of that copy, which V reads. Results do not change.
TEST(PassFoldAttentionViews, WhatIsNotAStridedViewStaysAsItIs) {
  ModelBuilder m;
  for (const char* name : {"q", "k", "v"}) m.input(name, DataType::kFloat32, {2, 8, 5});
  m.output("y", DataType::kFloat32, {2, 5, 8});
  m.initializer("flat", int64_constant({2}, {2, 40}));
  m.initializer("back", int64_constant({3}, {2, 5, 8}));
  m.attr(m.node("Transpose", {"q"}, {"qt"}), "perm", std::vector<std::int64_t>{0, 2, 1});  // [2, 5, 8]
  m.attr(m.node("Transpose", {"v"}, {"vt"}), "perm", std::vector<std::int64_t>{0, 2, 1});
  m.node("Reshape", {"vt", "flat"}, {"vf"});
  m.node("Reshape", {"vf", "back"}, {"vr"});
  m.node("MatMul", {"qt", "k"}, {"s"});  // KT is k itself: [2, 8, 5]
  m.attr(m.node("Softmax", {"s"}, {"w"}), "axis", std::int64_t{-1});
  m.node("MatMul", {"w", "vr"}, {"y"});
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 8, 5}, 1),
                                      random_tensor(DataType::kFloat32, {2, 8, 5}, 2),
                                      random_tensor(DataType::kFloat32, {2, 8, 5}, 3)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  const Node* attention = attention_node_of(plan.graph);
  ASSERT_NE(attention, nullptr);
  EXPECT_FALSE(attention->has_attribute("q_view"));
  EXPECT_FALSE(attention->has_attribute("kt_view"));
  EXPECT_EQ(attention->attr_ints("v_view").value(), (std::vector<std::int64_t>{0, 2, 40, 5, 8, 8, 1}));
  EXPECT_EQ(plan.graph.value(attention->inputs[2]).name, "vt");
  EXPECT_EQ(count_ops(plan.graph, "Transpose"), 2);
  EXPECT_EQ(count_ops(plan.graph, "Reshape"), 0);
  expect_same_results(graph, plan, inputs);
}

// A Transpose that moves the output's last axis (here of width 1) stays: the kernels write rows.
TEST(PassFoldAttentionViews, AnOutputTransposeThatMovesTheLastAxisStays) {
  ModelBuilder m;
  for (const char* name : {"q", "k"}) m.input(name, DataType::kFloat32, {2, 5, 4});
  m.input("v", DataType::kFloat32, {2, 5, 1});
  m.output("y", DataType::kFloat32, {2, 1, 5});
  m.attr(m.node("Transpose", {"k"}, {"kt"}), "perm", std::vector<std::int64_t>{0, 2, 1});
  m.node("MatMul", {"q", "kt"}, {"s"});
  m.attr(m.node("Softmax", {"s"}, {"w"}), "axis", std::int64_t{-1});
  m.node("MatMul", {"w", "v"}, {"o"});
  m.attr(m.node("Transpose", {"o"}, {"y"}), "perm", std::vector<std::int64_t>{0, 2, 1});
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 5, 4}, 1),
                                      random_tensor(DataType::kFloat32, {2, 5, 4}, 2),
                                      random_tensor(DataType::kFloat32, {2, 5, 1}, 3)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  ASSERT_NE(attention_node_of(plan.graph), nullptr);
  EXPECT_FALSE(attention_node_of(plan.graph)->has_attribute("y_perm"));
  EXPECT_EQ(count_ops(plan.graph, "Transpose"), 1);
  expect_same_results(graph, plan, inputs);
}

// x [2, 7, 5] (or [4, 5]) times W [5, 6] plus a bias row: one Gemm, through Reshapes for rank 3.
TEST(PassFuseMatmulBias, ALinearLayerBecomesAGemmAtAnyRank) {
  for (const std::vector<std::int64_t>& x_dims : {std::vector<std::int64_t>{2, 7, 5}, {4, 5}}) {
    std::vector<std::int64_t> y_dims = x_dims;
    y_dims.back() = 6;
    ModelBuilder m;
    m.input("x", DataType::kFloat32, x_dims).output("y", DataType::kFloat32, y_dims);
    m.initializer("w", random_tensor(DataType::kFloat32, {5, 6}, 1));
    m.initializer("b", random_tensor(DataType::kFloat32, {1, 6}, 2));
    m.node("MatMul", {"x", "w"}, {"xw"});
    m.node("Add", {"b", "xw"}, {"y"});
    const Graph graph = load_graph(m);
    const std::vector<Tensor> inputs = {
        random_tensor(DataType::kFloat32, Shape(x_dims.begin(), x_dims.end()), 3)};
    const ExecutionPlan plan = plan_for(graph, inputs);
    EXPECT_EQ(count_ops(plan.graph, "Gemm"), 1);
    EXPECT_EQ(count_ops(plan.graph, "MatMul"), 0);
    EXPECT_EQ(count_ops(plan.graph, "Add"), 0);
    EXPECT_EQ(count_ops(plan.graph, "Reshape"), x_dims.size() == 2 ? 0 : 2);
    expect_same_results(graph, plan, inputs);
  }
}

// A Mul of the sum by a constant row (either operand order) is folded into W and the bias; a Mul by
// a column (a scale per row) stays.
TEST(PassFuseMatmulBias, AScaleRowAfterTheBiasGoesIntoTheWeights) {
  for (const bool row : {true, false}) {
    ModelBuilder m;
    m.input("x", DataType::kFloat32, {2, 7, 5}).output("y", DataType::kFloat32, {2, 7, 6});
    m.initializer("w", random_tensor(DataType::kFloat32, {5, 6}, 1));
    m.initializer("b", random_tensor(DataType::kFloat32, {6}, 2));
    m.initializer("s", random_tensor(DataType::kFloat32, row ? Shape{1, 1, 6} : Shape{7, 1}, 4));
    m.node("MatMul", {"x", "w"}, {"xw"});
    m.node("Add", {"xw", "b"}, {"xwb"});
    m.node("Mul", {"s", "xwb"}, {"y"});
    const Graph graph = load_graph(m);
    const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 7, 5}, 3)};
    const ExecutionPlan plan = plan_for(graph, inputs);
    EXPECT_EQ(count_ops(plan.graph, "Gemm"), 1) << row;
    EXPECT_EQ(count_ops(plan.graph, "Mul"), row ? 0 : 1);
    expect_same_results(graph, plan, inputs);
  }
}

// A bias that is an input or a whole matrix, or a product read elsewhere, stays as written.
TEST(PassFuseMatmulBias, OtherAddsStayAsTheyAre) {
  for (int variant = 0; variant < 3; ++variant) {
    ModelBuilder m;
    m.input("x", DataType::kFloat32, {3, 5}).output("y", DataType::kFloat32, {3, 6});
    m.initializer("w", random_tensor(DataType::kFloat32, {5, 6}, 1));
    if (variant == 0) m.input("b", DataType::kFloat32, {6});
    if (variant == 1) m.initializer("b", random_tensor(DataType::kFloat32, {3, 6}, 2));
    if (variant == 2) {
      m.initializer("b", random_tensor(DataType::kFloat32, {6}, 2));
      m.output("xw", DataType::kFloat32, {3, 6});
    }
    m.node("MatMul", {"x", "w"}, {"xw"});
    m.node("Add", {"xw", "b"}, {"y"});
    const Graph graph = load_graph(m);
    std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {3, 5}, 3)};
    if (variant == 0) inputs.push_back(random_tensor(DataType::kFloat32, {6}, 4));
    const ExecutionPlan plan = plan_for(graph, inputs);
    EXPECT_EQ(count_ops(plan.graph, "Gemm"), 0) << variant;
    expect_same_results(graph, plan, inputs);
  }
}

// torch's batch-first multi-head attention block as exported: x [B, 6, 12] transposed to [6, B,
// 12] for the QKV projection (MatMul + bias), the head split, attention and merge, the output
// projection on [6 * B, 12], back to [6, B, 12] and transposed to [B, 6, 12], then x added back.
Graph batch_first_attention_graph(std::int64_t b) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {b, 6, 12}).output("out", DataType::kFloat32, {b, 6, 12});
  m.attr(m.node("Transpose", {"x"}, {"xt"}), "perm", std::vector<std::int64_t>{1, 0, 2});
  m.initializer("w_qkv", random_tensor(DataType::kFloat32, {12, 36}, 1));
  m.initializer("b_qkv", random_tensor(DataType::kFloat32, {36}, 2));
  m.node("MatMul", {"xt", "w_qkv"}, {"pw"});
  m.node("Add", {"pw", "b_qkv"}, {"p"});
  add_head_split(m, b);
  m.initializer("w_out", random_tensor(DataType::kFloat32, {12, 12}, 3));
  m.initializer("b_out", random_tensor(DataType::kFloat32, {12}, 4));
  m.initializer("unflat", int64_constant({3}, {6, b, 12}));
  m.attr(m.node("Gemm", {"y", "w_out", "b_out"}, {"proj"}), "transB", std::int64_t{1});
  m.node("Reshape", {"proj", "unflat"}, {"proj3"});
  m.attr(m.node("Transpose", {"proj3"}, {"projt"}), "perm", std::vector<std::int64_t>{1, 0, 2});
  m.node("Add", {"projt", "x"}, {"out"});
  return load_graph(m);
}

// Both Transposes go: the QKV projection reads x's rows as they are and the attention reads its
// product through views; the attention writes its output in [B, T, H, D] order for the output
// projection, which adds x back inside the product (fovea.Gemm). At a batch of 1 too, where the
// merging Reshapes meet dims of 1.
TEST(PassMoveTransposesToAttention, BatchFirstAttentionRunsWithoutCopies) {
  for (std::int64_t b : {2, 1}) {
    const Graph graph = batch_first_attention_graph(b);
    const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {b, 6, 12}, 5)};
    const ExecutionPlan plan = plan_for(graph, inputs);
    EXPECT_EQ(count_ops(plan.graph, "Attention"), 1) << "batch " << b;
    EXPECT_EQ(count_ops(plan.graph, "Transpose"), 0) << "batch " << b;
    EXPECT_EQ(count_ops(plan.graph, "Add"), 0) << "batch " << b;
    const Node* attention = attention_node_of(plan.graph);
    ASSERT_NE(attention, nullptr);
    // (At a batch of 1 the Transpose moves no element: [T, 1, H, D] is [1, T, H, D] in memory.)
    if (b > 1) {
      EXPECT_EQ(attention->attr_ints("y_perm").value(), (std::vector<std::int64_t>{0, 2, 1, 3}));
    }
    expect_same_results(graph, plan, inputs);
  }
}

// A projection whose product something else than an attention reads keeps its Transpose before it
// (moved after, it would copy the wider product).
TEST(PassMoveTransposesToAttention, AProductReadElsewhereKeepsItsTranspose) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 6, 12}).output("y", DataType::kFloat32, {12, 12});
  m.output("p", DataType::kFloat32, {6, 2, 36});
  m.attr(m.node("Transpose", {"x"}, {"xt"}), "perm", std::vector<std::int64_t>{1, 0, 2});
  m.initializer("w_qkv", random_tensor(DataType::kFloat32, {12, 36}, 1));
  m.initializer("b_qkv", random_tensor(DataType::kFloat32, {36}, 2));
  m.node("MatMul", {"xt", "w_qkv"}, {"pw"});
  m.node("Add", {"pw", "b_qkv"}, {"p"});
  add_head_split(m, 2);
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 6, 12}, 5)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  EXPECT_EQ(count_ops(plan.graph, "Transpose"), 1);
  expect_same_results(graph, plan, inputs);
}

// Heads split as [B * H, T, D] (an older exporter's form) are no strided view of the projection: the
// attention copies its operands either way, so the Transpose stays on the projection's narrower
// input instead of moving onto its product.
TEST(PassMoveTransposesToAttention, OperandsThatAreNoViewKeepTheTransposeOnTheInput) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 6, 12}).output("y", DataType::kFloat32, {6, 6, 4});
  m.attr(m.node("Transpose", {"x"}, {"xt"}), "perm", std::vector<std::int64_t>{1, 0, 2});
  m.initializer("w_qkv", random_tensor(DataType::kFloat32, {12, 36}, 1));
  m.initializer("b_qkv", random_tensor(DataType::kFloat32, {36}, 2));
  m.node("MatMul", {"xt", "w_qkv"}, {"pw"});
  m.node("Add", {"pw", "b_qkv"}, {"p"});
  m.initializer("packed", int64_constant({4}, {6, 2, 3, 12}));
  m.initializer("heads", int64_constant({3}, {6, 6, 4}));
  m.node("Reshape", {"p", "packed"}, {"p4"});
  for (int i = 0; i < 3; ++i) {
    const std::string name(1, "qkv"[i]);
    m.initializer("index" + name, int64_constant({}, {i}));
    m.attr(m.node("Gather", {"p4", "index" + name}, {name + "_rows"}), "axis", std::int64_t{2});
    m.node("Reshape", {name + "_rows", "heads"}, {name + "_heads"});
    m.attr(m.node("Transpose", {name + "_heads"}, {name}), "perm", std::vector<std::int64_t>{1, 0, 2});
  }
  m.attr(m.node("Transpose", {"k"}, {"kt"}), "perm", std::vector<std::int64_t>{0, 2, 1});
  m.node("MatMul", {"q", "kt"}, {"s"});
  m.attr(m.node("Softmax", {"s"}, {"w"}), "axis", std::int64_t{-1});
  m.node("MatMul", {"w", "v"}, {"y"});
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 6, 12}, 5)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  EXPECT_EQ(count_ops(plan.graph, "Attention"), 1);
  const auto reads_x = [&](const Node& node) {
    return node.op_type == "Transpose" && plan.graph.value(node.inputs[0]).name == "x";
  };
  EXPECT_TRUE(std::any_of(plan.graph.nodes.begin(), plan.graph.nodes.end(), reads_x));
  expect_same_results(graph, plan, inputs);
}

// A linear layer's residual Add (either operand order, at rank 3 through the Reshapes and at rank 2)
// becomes fovea.Gemm's R.
TEST(PassFuseGemmResidual, TheResidualAddJoinsTheLinearLayer) {
  for (const bool rank3 : {true, false}) {
    for (const bool residual_first : {true, false}) {
      const Shape x_shape = rank3 ? Shape{2, 7, 5} : Shape{4, 5};
      Shape y_shape = x_shape;
      y_shape.back() = 6;
      ModelBuilder m;
      m.input("x", DataType::kFloat32, x_shape).input("r", DataType::kFloat32, y_shape);
      m.output("y", DataType::kFloat32, y_shape);
      m.initializer("w", random_tensor(DataType::kFloat32, {5, 6}, 1));
      m.initializer("b", random_tensor(DataType::kFloat32, {6}, 2));
      m.node("MatMul", {"x", "w"}, {"xw"});
      m.node("Add", {"xw", "b"}, {"xwb"});
      m.node("Add",
             residual_first ? std::vector<std::string>{"r", "xwb"} : std::vector<std::string>{"xwb", "r"},
             {"y"});
      const Graph graph = load_graph(m);
      const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, x_shape, 3),
                                          random_tensor(DataType::kFloat32, y_shape, 4)};
      const ExecutionPlan plan = plan_for(graph, inputs);
      EXPECT_EQ(count_ops(plan.graph, "Add"), 0) << rank3 << residual_first;
      ASSERT_EQ(count_ops(plan.graph, "Gemm"), 1);
      for (const Node& node : plan.graph.nodes) {
        if (node.op_type == "Gemm") {
          EXPECT_EQ(node.domain, "fovea");
        }
      }
      expect_same_results(graph, plan, inputs);
    }
  }
}

// A residual that broadcasts, or a product read elsewhere, leaves the Add as it is.
TEST(PassFuseGemmResidual, BroadcastsAndSharedProductsStay) {
  for (const bool broadcast : {true, false}) {
    ModelBuilder m;
    m.input("x", DataType::kFloat32, {4, 5})
        .input("r", DataType::kFloat32, broadcast ? Shape{1, 6} : Shape{4, 6});
    m.output("y", DataType::kFloat32, {4, 6});
    if (!broadcast) m.output("xwb", DataType::kFloat32, {4, 6});
    m.initializer("w", random_tensor(DataType::kFloat32, {5, 6}, 1));
    m.initializer("b", random_tensor(DataType::kFloat32, {6}, 2));
    m.node("MatMul", {"x", "w"}, {"xw"});
    m.node("Add", {"xw", "b"}, {"xwb"});
    m.node("Add", {"xwb", "r"}, {"y"});
    const Graph graph = load_graph(m);
    const std::vector<Tensor> inputs = {
        random_tensor(DataType::kFloat32, {4, 5}, 3),
        random_tensor(DataType::kFloat32, broadcast ? Shape{1, 6} : Shape{4, 6}, 4)};
    const ExecutionPlan plan = plan_for(graph, inputs);
    EXPECT_EQ(count_ops(plan.graph, "Add"), 1) << broadcast;
    expect_same_results(graph, plan, inputs);
  }
}

// x [2, 7, 5] -> MatMul -> Add(bias) -> Gelu(approximate) -> y [2, 7, 6]: ViT's MLP's first half;
// `shared` makes the biased product a graph output too.
Graph linear_gelu(const std::string& approximate, bool shared) {
  ModelBuilder m(20);
  m.input("x", DataType::kFloat32, {2, 7, 5}).output("y", DataType::kFloat32, {2, 7, 6});
  if (shared) m.output("xwb", DataType::kFloat32, {2, 7, 6});
  m.initializer("w", random_tensor(DataType::kFloat32, {5, 6}, 1));
  m.initializer("b", random_tensor(DataType::kFloat32, {6}, 2));
  m.node("MatMul", {"x", "w"}, {"xw"});
  m.node("Add", {"xw", "b"}, {"xwb"});
  m.attr(m.node("Gelu", {"xwb"}, {"y"}), "approximate", approximate);
  return load_graph(m);
}

// A linear layer's GELU joins the product as fovea.Gemm's "gelu_tanh" (cuBLASLt's GELU epilogue):
// the tanh form in any precision, the erf form only where the product is float16.
TEST(PassFuseGemmGelu, TheGeluJoinsTheLinearLayer) {
  for (const std::string approximate : {"tanh", "none"}) {
    for (const Precision precision : {Precision::kFloat32, Precision::kFloat16}) {
      const Graph graph = linear_gelu(approximate, false);
      const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 7, 5}, 3)};
      const ExecutionPlan plan = plan_for(graph, inputs, {.precision = precision});
      const bool fused = approximate == "tanh" || precision == Precision::kFloat16;
      EXPECT_EQ(count_ops(plan.graph, "Gelu"), fused ? 0 : 1) << approximate << precision_name(precision);
      for (const Node& node : plan.graph.nodes) {
        if (node.op_type != "Gemm") continue;
        EXPECT_EQ(node.attr_string("activation", "").value(), fused ? "gelu_tanh" : "");
      }
      if (precision == Precision::kFloat32) expect_same_results(graph, plan, inputs);
    }
  }
}

// A product that something else reads too keeps its Gelu (fused, the other reader would see the
// GELU's output).
TEST(PassFuseGemmGelu, AProductReadElsewhereKeepsItsGelu) {
  const Graph graph = linear_gelu("tanh", true);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {2, 7, 5}, 3)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  EXPECT_EQ(count_ops(plan.graph, "Gelu"), 1);
  expect_same_results(graph, plan, inputs);
}

}  // namespace
}  // namespace fovea::runtime::testing
