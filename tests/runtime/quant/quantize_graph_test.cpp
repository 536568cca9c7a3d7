// The int8 rewrite (quant/quantize_graph.h) and Precision::kInt8 sessions on the CPU: where the
// quantize/dequantize pairs go, the weights stored in 8 bits per output channel, what stays float
// and why, and a plan whose every layer reads exactly the values an int8 kernel reads.
#include "runtime/quant/quantize_graph.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "runtime/cpu_executor.h"
#include "runtime/engine.h"
#include "runtime/graph_test_util.h"
#include "runtime/op_test_util.h"
#include "runtime/ops/int8_conv_util.h"
#include "runtime/passes/passes.h"
#include "runtime/planner.h"
#include "runtime/quant/calibrator.h"
#include "runtime/session.h"
#include "runtime/shape_inference.h"
#include "support/test_media.h"

namespace fovea::runtime::testing {
namespace {

using quant::CalibrationTable;
using quant::QuantizedNode;

constexpr DataType kF32 = DataType::kFloat32;

// The graph as plan_graph hands it to the rewrite: shapes inferred, folded and optimized.
Graph optimized(const ModelBuilder& builder) {
  Graph graph = load_graph(builder);
  EXPECT_TRUE(infer_shapes(graph, FoldConstants::kYes).is_ok());
  EXPECT_TRUE(optimize(graph).is_ok());
  return graph;
}

CalibrationTable table_with(std::initializer_list<std::pair<const char*, float>> ranges) {
  CalibrationTable table;
  for (const auto& [name, amax] : ranges) table.tensors[name] = {.amax = amax};
  return table;
}

const QuantizedNode* report_of(const std::vector<QuantizedNode>& report, const std::string& node) {
  const auto it =
      std::find_if(report.begin(), report.end(), [&](const QuantizedNode& n) { return n.node == node; });
  return it == report.end() ? nullptr : &*it;
}

const Node* consumer_of(const Graph& graph, const std::string& op_type) {
  for (const Node& node : graph.nodes) {
    if (node.op_type == op_type) return &node;
  }
  return nullptr;
}

Graph load(const std::filesystem::path& path) {
  auto model = load_onnx(path);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model->graph;
}

float fake_quantize(float x, float scale, float limit_low, float limit_high) {
  return std::clamp(std::nearbyint(x / scale), limit_low, limit_high) * scale;
}

TEST(QuantizeGraph, EveryConvolutionReadsItsActivationAndWeightsThroughPairs) {
  ModelBuilder m;
  Graph graph = optimized(conv_chain(m));
  ASSERT_EQ(count_ops(graph, "FusedConv"), 2);
  auto report = quant::quantize_graph(graph, table_with({{"x", 1.0f}, {"r1", 3.0f}}), {});
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  ASSERT_EQ(report->size(), 2u);
  for (const QuantizedNode& node : *report) EXPECT_TRUE(node.int8) << node.node << ": " << node.reason;
  ASSERT_TRUE(infer_shapes(graph, FoldConstants::kNo).is_ok());

  // One pair per activation (x, r1), one dequantize per weight (w1, w2).
  EXPECT_EQ(count_ops(graph, "QuantizeLinear"), 2);
  EXPECT_EQ(count_ops(graph, "DequantizeLinear"), 4);
  for (const Node& node : graph.nodes) {
    if (node.op_type != "FusedConv") continue;
    EXPECT_EQ(quant::node_precision(graph, node), "int8") << node.name;
    const Value& weights = graph.value(graph.value(node.inputs[1]).producer >= 0
                                           ? graph.nodes[graph.value(node.inputs[1]).producer].inputs[0]
                                           : node.inputs[1]);
    ASSERT_TRUE(weights.constant.has_value()) << node.name;
    EXPECT_EQ(weights.constant->dtype(), DataType::kInt8) << node.name << " stores its weights in 8 bits";
  }
  // conv2's residual is r1 itself: the float epilogue adds the unrounded value.
  const ValueId r1 = graph.find_value("r1");
  const auto residual_reader = std::find_if(graph.nodes.begin(), graph.nodes.end(), [&](const Node& node) {
    return node.op_type == "FusedConv" && node.inputs.size() > 3 && node.inputs[3] == r1;
  });
  EXPECT_NE(residual_reader, graph.nodes.end()) << "the residual input was quantized";
}

TEST(QuantizeGraph, WeightsArePerOutputChannelAtTheirOwnMaximum) {
  ModelBuilder m(17);
  m.input("x", kF32, {1, 2, 5, 5}).output("y", kF32, {1, 3, 3, 3});
  // Channel 0 spans ±0.5, channel 1 ±2, channel 2 is all zeros.
  std::vector<float> w(3 * 2 * 3 * 3, 0.0f);
  for (int i = 0; i < 18; ++i) {
    w[static_cast<std::size_t>(i)] = 0.5f * static_cast<float>(i - 9) / 9.0f;
    w[static_cast<std::size_t>(18 + i)] = 2.0f * static_cast<float>(9 - i) / 9.0f;
  }
  m.initializer("w", Tensor::from_vector(kF32, {3, 2, 3, 3}, w));
  m.node("Conv", {"x", "w"}, {"y"}, "conv");
  Graph graph = optimized(m);
  auto report = quant::quantize_graph(graph, table_with({{"x", 4.0f}}), {});
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  const Node* dequantize = nullptr;
  for (const Node& node : graph.nodes) {
    if (node.op_type == "DequantizeLinear" && graph.value(node.inputs[1]).constant->numel() == 3)
      dequantize = &node;
  }
  ASSERT_NE(dequantize, nullptr);
  EXPECT_EQ(*dequantize->attr_int("axis"), 0);
  const float* scales = graph.value(dequantize->inputs[1]).constant->data<float>();
  EXPECT_FLOAT_EQ(scales[0], 0.5f / 127.0f);
  EXPECT_FLOAT_EQ(scales[1], 2.0f / 127.0f);
  EXPECT_FLOAT_EQ(scales[2], 1.0f) << "a channel of zeros keeps a positive scale";
  const std::int8_t* q = graph.value(dequantize->inputs[0]).constant->data<std::int8_t>();
  EXPECT_EQ(q[0], -127);
  EXPECT_EQ(q[18], 127);
  EXPECT_EQ(q[36], 0);
}

TEST(QuantizeGraph, NodesKeptByNameOrTypeAndNodesWithoutARangeStayFloatSayingWhy) {
  {
    ModelBuilder m;
    Graph graph = optimized(conv_chain(m));
    auto report = quant::quantize_graph(graph, table_with({{"x", 1.0f}}), {});
    ASSERT_TRUE(report.is_ok());
    const QuantizedNode* second = report_of(*report, "conv2");
    ASSERT_NE(second, nullptr);
    EXPECT_FALSE(second->int8);
    EXPECT_EQ(second->reason, "no calibrated range for 'r1'");
    EXPECT_EQ(count_ops(graph, "QuantizeLinear"), 1) << "nothing added for the node left in float";
  }
  {
    ModelBuilder m;
    Graph graph = optimized(conv_chain(m));
    auto report = quant::quantize_graph(graph, table_with({{"x", 1.0f}, {"r1", 3.0f}}), {"conv1"});
    ASSERT_TRUE(report.is_ok());
    EXPECT_FALSE(report_of(*report, "conv1")->int8);
    EXPECT_EQ(report_of(*report, "conv1")->reason, "asked to stay unquantized");
    EXPECT_TRUE(report_of(*report, "conv2")->int8);
  }
  {
    ModelBuilder m;
    Graph graph = optimized(conv_chain(m));
    auto report = quant::quantize_graph(graph, table_with({{"x", 1.0f}, {"r1", 3.0f}}), {"Conv"});
    ASSERT_TRUE(report.is_ok());
    EXPECT_EQ(count_ops(graph, "QuantizeLinear"), 0);
  }
}

// The calibration's SQNR rule: a tensor the cache marks keep_float leaves its readers in float.
TEST(QuantizeGraph, ATensorTheCacheKeepsInFloatLeavesItsReadersInFloatSayingItsSqnr) {
  ModelBuilder m;
  Graph graph = optimized(conv_chain(m));
  CalibrationTable table = table_with({{"x", 1.0f}, {"r1", 3.0f}});
  table.tensors["r1"].sqnr_db = 14.5f;
  table.tensors["r1"].keep_float = true;
  auto report = quant::quantize_graph(graph, table, {});
  ASSERT_TRUE(report.is_ok());
  EXPECT_TRUE(report_of(*report, "conv1")->int8);
  EXPECT_FALSE(report_of(*report, "conv2")->int8);
  EXPECT_EQ(report_of(*report, "conv2")->reason, "the calibration keeps 'r1' in float (int8 SQNR 14.5 dB)");
  EXPECT_EQ(count_ops(graph, "QuantizeLinear"), 1);
}

TEST(QuantizeGraph, GemmAndMatMulWeightsQuantizeAlongTheirOutputAxisAndActivationProductsOnBothSides) {
  ModelBuilder m(17);
  m.input("a", kF32, {4, 6}).input("b", kF32, {6, 5}).output("y", kF32, {4, 3}).output("z", kF32, {4, 5});
  m.initializer("g", random_tensor(kF32, {6, 3}, 5));
  m.node("Gemm", {"a", "g"}, {"y"}, "gemm");  // transB = 0: B is [K, N], channels on axis 1
  m.node("MatMul", {"a", "b"}, {"z"}, "product");
  Graph graph = optimized(m);
  auto report = quant::quantize_graph(graph, table_with({{"a", 1.0f}, {"b", 1.0f}}), {});
  ASSERT_TRUE(report.is_ok());
  EXPECT_TRUE(report_of(*report, "gemm")->int8);
  EXPECT_TRUE(report_of(*report, "product")->int8);
  EXPECT_EQ(count_ops(graph, "QuantizeLinear"), 2) << "a is quantized once for both readers";
  for (const Node& node : graph.nodes) {
    if (node.op_type == "DequantizeLinear" && node.has_attribute("axis")) {
      EXPECT_EQ(*node.attr_int("axis"), 1);
    }
  }
  EXPECT_EQ(quant::node_precision(graph, *consumer_of(graph, "MatMul")), "int8");
}

// A linear layer with its residual Add (fovea.Gemm, fuse_gemm_residual) quantizes as a Gemm does:
// its activation and weights through pairs, the bias and the residual R in float.
TEST(QuantizeGraph, ALinearLayerWithItsResidualQuantizesAsAGemm) {
  ModelBuilder m(17);
  m.input("x", kF32, {4, 6}).input("r", kF32, {4, 3}).output("y", kF32, {4, 3});
  m.initializer("w", random_tensor(kF32, {6, 3}, 5));
  m.initializer("b", random_tensor(kF32, {3}, 6));
  m.node("Gemm", {"x", "w", "b"}, {"xw"}, "linear");
  m.node("Add", {"xw", "r"}, {"y"}, "residual");
  Graph graph = optimized(m);
  const Node* fused = consumer_of(graph, "Gemm");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->domain, "fovea");
  auto report = quant::quantize_graph(graph, table_with({{"x", 1.0f}}), {});
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  ASSERT_NE(report_of(*report, "linear"), nullptr);
  EXPECT_TRUE(report_of(*report, "linear")->int8);
  const Node* quantized = consumer_of(graph, "Gemm");
  ASSERT_NE(quantized, nullptr);
  EXPECT_EQ(quant::node_precision(graph, *quantized), "int8");
  ASSERT_EQ(quantized->inputs.size(), 4u);
  EXPECT_EQ(graph.value(quantized->inputs[3]).name, "r");
}

// A linear layer on x [2, 7, 5] becomes a Gemm reading x through a Reshape (fuse_matmul_bias),
// a tensor calibration never sees: the Gemm takes x's range, and x's keep_float names x.
TEST(QuantizeGraph, AViewOfACalibratedTensorTakesItsRange) {
  ModelBuilder m(17);
  m.input("x", kF32, {2, 7, 5}).output("y", kF32, {2, 7, 6});
  m.initializer("w", random_tensor(kF32, {5, 6}, 1)).initializer("b", random_tensor(kF32, {6}, 2));
  m.node("MatMul", {"x", "w"}, {"xw"}, "linear");
  m.node("Add", {"xw", "b"}, {"y"});
  Graph graph = optimized(m);
  ASSERT_EQ(count_ops(graph, "Gemm"), 1);
  auto report = quant::quantize_graph(graph, table_with({{"x", 1.0f}}), {});
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  ASSERT_NE(report_of(*report, "linear"), nullptr);
  EXPECT_TRUE(report_of(*report, "linear")->int8) << report_of(*report, "linear")->reason;
  EXPECT_EQ(count_ops(graph, "QuantizeLinear"), 1);

  Graph kept = optimized(m);
  CalibrationTable table = table_with({{"x", 1.0f}});
  table.tensors["x"].keep_float = true;
  table.tensors["x"].sqnr_db = 12.0;
  auto kept_report = quant::quantize_graph(kept, table, {});
  ASSERT_TRUE(kept_report.is_ok());
  EXPECT_FALSE(report_of(*kept_report, "linear")->int8);
  EXPECT_EQ(report_of(*kept_report, "linear")->reason,
            "the calibration keeps 'x' in float (int8 SQNR 12.0 dB)");
}

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::path(fovea::testing::test_temp_dir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// x [1, 3, 7, 9] -> conv (3x3, bias, pad 1) -> y [1, 4, 7, 9]; `weights` given.
std::filesystem::path write_conv(const std::filesystem::path& path, const Tensor& weights,
                                 const Tensor& bias) {
  ModelBuilder m(17);
  m.input("x", kF32, {1, 3, 7, 9}).output("y", kF32, {1, 4, 7, 9});
  m.initializer("w", weights).initializer("b", bias);
  m.attr(m.node("Conv", {"x", "w", "b"}, {"y"}, "conv"), "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  return m.write(path);
}

// The model's one input "x" at x's shape.
std::vector<Tensor> run(const std::filesystem::path& model, const SessionOptions& options, const Tensor& x) {
  auto session = InferenceSession::open(model, {{"x", x.shape()}}, options);
  EXPECT_TRUE(session.is_ok()) << session.status().to_string();
  if (!session.is_ok()) return {};
  auto outputs = (*session)->run_host(nullptr, {x});
  EXPECT_TRUE(outputs.is_ok()) << outputs.status().to_string();
  return outputs.is_ok() ? *outputs : std::vector<Tensor>{};
}

// The int8 plan on the CPU computes the float convolution of the fake-quantized input (at the
// calibrated scale, clipped to [-128, 127] steps) and weights (per channel, ±127 steps): the values
// an int8 kernel multiplies, summed in float.
TEST(Int8Session, ComputesTheConvolutionOfExactlyTheQuantizedValues) {
  const auto dir = fresh_dir("int8_session_exact");
  const Tensor weights = random_tensor(kF32, {4, 3, 3, 3}, 11);
  const Tensor bias = random_tensor(kF32, {4}, 12);
  const auto model = write_conv(dir / "conv.onnx", weights, bias);
  CalibrationTable table = table_with({{"x", 0.8f}});  // clips the input's tails at ±0.8
  ASSERT_TRUE(runtime::file_digest(model).is_ok());
  table.model = "conv.onnx";
  table.model_digest = *runtime::file_digest(model);
  ASSERT_TRUE(quant::write_calibration(dir / "conv.calib", table).is_ok());

  const Tensor x = random_tensor(kF32, {1, 3, 7, 9}, 13);
  const std::vector<Tensor> int8 =
      run(model, {.precision = Precision::kInt8, .calibration = dir / "conv.calib"}, x);
  ASSERT_EQ(int8.size(), 1u);

  Tensor x_q = x.clone();
  const float x_scale = 0.8f / 127.0f;
  for (std::int64_t i = 0; i < x_q.numel(); ++i) {
    x_q.data<float>()[i] = fake_quantize(x.data<float>()[i], x_scale, -128.0f, 127.0f);
  }
  Tensor w_q = weights.clone();
  const std::int64_t per_channel = weights.numel() / 4;
  for (std::int64_t c = 0; c < 4; ++c) {
    float amax = 0.0f;
    for (std::int64_t i = 0; i < per_channel; ++i)
      amax = std::max(amax, std::fabs(weights.data<float>()[c * per_channel + i]));
    for (std::int64_t i = 0; i < per_channel; ++i) {
      float& w = w_q.data<float>()[c * per_channel + i];
      w = fake_quantize(w, amax / 127.0f, -127.0f, 127.0f);
    }
  }
  const std::vector<Tensor> reference = run(write_conv(dir / "conv_q.onnx", w_q, bias), {}, x_q);
  ASSERT_EQ(reference.size(), 1u);
  EXPECT_TRUE(tensors_near(int8[0], reference[0], 1e-6, 1e-6));
  // And int8 is not float32 in disguise: the clipped tails change the result.
  const std::vector<Tensor> float32 = run(model, {}, x);
  double largest = 0.0;
  for (std::int64_t i = 0; i < float32[0].numel(); ++i) {
    largest = std::max(
        largest, std::fabs(static_cast<double>(float32[0].data<float>()[i] - int8[0].data<float>()[i])));
  }
  EXPECT_GT(largest, 1e-3);
}

TEST(Int8Session, RefusesAMissingCacheAndAnotherModelsCache) {
  const auto dir = fresh_dir("int8_session_refusals");
  const auto model =
      write_conv(dir / "conv.onnx", random_tensor(kF32, {4, 3, 3, 3}, 1), random_tensor(kF32, {4}, 2));
  const auto other =
      write_conv(dir / "other.onnx", random_tensor(kF32, {4, 3, 3, 3}, 3), random_tensor(kF32, {4}, 4));
  auto missing = InferenceSession::open(model, {}, {.precision = Precision::kInt8});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("needs a calibration cache"), std::string::npos)
      << missing.status().message();

  CalibrationTable table = table_with({{"x", 1.0f}});
  table.model = "other.onnx";
  table.model_digest = *runtime::file_digest(other);
  ASSERT_TRUE(quant::write_calibration(dir / "other.calib", table).is_ok());
  auto stale =
      InferenceSession::open(model, {}, {.precision = Precision::kInt8, .calibration = dir / "other.calib"});
  ASSERT_FALSE(stale.is_ok());
  EXPECT_NE(stale.status().message().find("other.calib"), std::string::npos) << stale.status().message();
}

// x [N, 3, 16, 16] -> conv 3x3 + relu -> conv 3x3 stride 2 + relu -> global pool -> flatten ->
// gemm -> y [N, 10]: a small classifier, every layer quantizable.
std::filesystem::path write_classifier(const std::filesystem::path& path) {
  ModelBuilder m(17);
  m.input("x", kF32, {-1, 3, 16, 16}).output("y", kF32, {-1, 10});
  m.initializer("w1", random_tensor(kF32, {8, 3, 3, 3}, 21, -0.5, 0.5));
  m.initializer("b1", random_tensor(kF32, {8}, 22, -0.1, 0.1));
  m.initializer("w2", random_tensor(kF32, {16, 8, 3, 3}, 23, -0.3, 0.3));
  m.initializer("fc", random_tensor(kF32, {10, 16}, 24, -0.5, 0.5));
  m.attr(m.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& conv2 = m.node("Conv", {"r1", "w2"}, {"c2"}, "conv2");
  m.attr(conv2, "strides", std::vector<std::int64_t>{2, 2});
  m.node("Relu", {"c2"}, {"r2"}, "relu2");
  m.node("GlobalAveragePool", {"r2"}, {"p"}, "pool");
  m.node("Flatten", {"p"}, {"f"}, "flatten");
  m.attr(m.node("Gemm", {"f", "fc"}, {"y"}, "fc"), "transB", std::int64_t{1});
  return m.write(path);
}

// Calibrated on one set of inputs and checked on another, the int8 plan stays within a few percent
// of float32 on every calibration method, and every quantizable layer ran in int8.
TEST(Int8Session, ACalibratedClassifierStaysCloseToFloat32) {
  const auto dir = fresh_dir("int8_session_calibrated");
  const auto model = write_classifier(dir / "classifier.onnx");
  const Graph graph = load(model);
  const Tensor calibration_set = random_tensor(kF32, {32, 3, 16, 16}, 31);
  const Tensor test_set = random_tensor(kF32, {8, 3, 16, 16}, 32);
  const std::vector<Tensor> reference = run(model, {}, test_set);
  ASSERT_EQ(reference.size(), 1u);
  for (quant::CalibrationMethod method :
       {quant::CalibrationMethod::kEntropy, quant::CalibrationMethod::kPercentile,
        quant::CalibrationMethod::kMinMax}) {
    SCOPED_TRACE(std::string(quant::calibration_method_name(method)));
    auto calibrator = quant::Calibrator::create(graph, Device::kCpu);
    ASSERT_TRUE(calibrator.is_ok()) << calibrator.status().to_string();
    ASSERT_TRUE((*calibrator)->add_batch({calibration_set}).is_ok());
    Result<CalibrationTable> table = (*calibrator)->finish(method);
    ASSERT_TRUE(table.is_ok()) << table.status().to_string();
    table->model_digest = *runtime::file_digest(model);
    ASSERT_TRUE(quant::write_calibration(dir / "classifier.calib", *table).is_ok());

    const SessionOptions int8{.precision = Precision::kInt8, .calibration = dir / "classifier.calib"};
    auto session = InferenceSession::open(model, {{"x", {8, 3, 16, 16}}}, int8);
    ASSERT_TRUE(session.is_ok()) << session.status().to_string();
    const ExecutionPlan& plan = (*session)->plan();
    EXPECT_EQ(count_ops(plan.graph, "QuantizeLinear"), 3) << "x, r1 and the pooled features";
    for (const Node& node : plan.graph.nodes) {
      if (node.op_type == "FusedConv" || node.op_type == "Gemm") {
        EXPECT_EQ(quant::node_precision(plan.graph, node), "int8") << node.name;
      }
    }
    auto outputs = (*session)->run_host(nullptr, {test_set});
    ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
    // Error relative to the outputs' spread: 8 bits on three layers cost about a percent.
    double error = 0.0, spread = 0.0;
    for (std::int64_t i = 0; i < reference[0].numel(); ++i) {
      const double want = reference[0].data<float>()[i];
      error = std::max(error, std::fabs((*outputs)[0].data<float>()[i] - want));
      spread = std::max(spread, std::fabs(want));
    }
    EXPECT_LT(error, 0.05 * spread);
    EXPECT_GT(error, 0.0) << "int8 rounds somewhere";
  }
}

// The CUDA executor's int8 plan (int8_tensor_cores: NHWC, fovea.Int8Conv, float16 elsewhere), run
// by the CPU executor, against the CPU reference plan of the same calibration (every layer between
// quantize/dequantize pairs in float32): the convolutions the kernel takes are Int8Conv, those
// whose output only the next layers read write int8 themselves, so does the one whose output is
// also an identity residual (read as int8 at the next layer's scale), and the outputs agree within
// the float16 storage of the rest and the residual's int8 rounding.
TEST(Int8TensorCorePlan, ConvolutionsTheKernelTakesBecomeInt8ConvAndMatchTheReference) {
  const auto dir = fresh_dir("int8_tensor_core_plan");
  ModelBuilder builder(17);
  const auto model = int8_residual_stack(builder).write(dir / "stack.onnx");
  const Graph graph = load(model);
  auto calibrator = quant::Calibrator::create(graph, Device::kCpu);
  ASSERT_TRUE(calibrator.is_ok()) << calibrator.status().to_string();
  ASSERT_TRUE((*calibrator)->add_batch({random_tensor(kF32, {8, 16, 10, 10}, 46)}).is_ok());
  Result<CalibrationTable> table = (*calibrator)->finish(quant::CalibrationMethod::kMinMax);
  ASSERT_TRUE(table.is_ok()) << table.status().to_string();
  const auto calibration = std::make_shared<const CalibrationTable>(*table);

  const InputShapes shapes{{"x", {2, 16, 10, 10}}};
  PlanOptions options = device_plan_options(Precision::kInt8);
  options.calibration = calibration;
  auto plan = plan_graph(graph, shapes, options);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(count_ops(plan->graph, "Int8Conv"), 6)
      << "conv1-conv3, shortcut, conv6, conv7; conv4's 5 output channels stay float16";
  EXPECT_EQ(count_ops(plan->graph, "DequantizeLinear"), 0);
  EXPECT_EQ(count_ops(plan->graph, "QuantizeLinear"), 1) << "x alone: the convolutions write int8 themselves";
  // conv7 reads block 1's output r3 as its identity residual, int8 at the scale its writer (conv3
  // or the shortcut, whichever the Add fused into) writes it.
  const Node* conv7 = find_node(plan->graph, "conv7");
  ASSERT_NE(conv7, nullptr);
  ASSERT_GT(conv7->inputs.size(), static_cast<std::size_t>(ops::kInt8ConvZScale));
  const Value& r3 = plan->graph.value(conv7->inputs[ops::kInt8ConvZ]);
  ASSERT_EQ(r3.type.dtype, DataType::kInt8);
  ASSERT_GE(r3.producer, 0);
  const Node& block1 = plan->graph.nodes[static_cast<std::size_t>(r3.producer)];
  EXPECT_TRUE(block1.name == "conv3" || block1.name == "shortcut") << block1.name;
  EXPECT_EQ(conv7->inputs[ops::kInt8ConvZScale], block1.inputs[ops::kInt8ConvYScale]);
  for (const Node& node : plan->graph.nodes) {
    if (node.op_type != "Int8Conv") continue;
    const DataType out = plan->graph.value(node.outputs[0]).type.dtype;
    const bool int8_out =
        node.name == "conv1" || node.name == "conv2" || node.name == "conv6" || &node == &block1;
    EXPECT_EQ(out, int8_out ? DataType::kInt8 : DataType::kFloat16) << node.name;
  }
  PlanOptions float_residuals = options;
  float_residuals.int8_residuals = false;  // r3 stays float16 and is quantized for conv6 apart
  auto slower = plan_graph(graph, shapes, float_residuals);
  ASSERT_TRUE(slower.is_ok()) << slower.status().to_string();
  EXPECT_EQ(count_ops(slower->graph, "QuantizeLinear"), 2);
  const Node* float_conv7 = find_node(slower->graph, "conv7");
  ASSERT_NE(float_conv7, nullptr);
  EXPECT_EQ(slower->graph.value(float_conv7->inputs[ops::kInt8ConvZ]).type.dtype, DataType::kFloat16);
  std::set<std::string> names;  // the plan is written to engine files, which need unique names
  for (const Value& value : plan->graph.values) EXPECT_TRUE(names.insert(value.name).second) << value.name;
  auto reference = plan_graph(graph, shapes, {.precision = Precision::kInt8, .calibration = calibration});
  ASSERT_TRUE(reference.is_ok()) << reference.status().to_string();
  EXPECT_EQ(count_ops(reference->graph, "Int8Conv"), 0);

  const Tensor x = random_tensor(kF32, {2, 16, 10, 10}, 47);
  CpuExecutor fused(*plan), unfused(*reference);
  auto y = fused.run({x});
  auto want = unfused.run({x});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  // float16 storage of the float values (the model-level float16 bound) plus one int8 step (1/127
  // of a range) where the two plans round a value next to a tie apart, and the int8 residual's half
  // step.
  double error = 0.0, spread = 0.0;
  for (std::int64_t i = 0; i < (*want)[0].numel(); ++i) {
    const double expected = (*want)[0].data<float>()[i];
    error = std::max(error, std::fabs((*y)[0].data<float>()[i] - expected));
    spread = std::max(spread, std::fabs(expected));
  }
  EXPECT_LT(error, (2e-2 + 2.0 / 127) * spread);
}

}  // namespace
}  // namespace fovea::runtime::testing
