// Calibration on CUDA (runtime/quant/calibrator.h, `fovea model calibrate --device cuda`): the same
// samples give the tensors, the samples and the ranges the CPU calibration gives, within the float32
// tolerance of the activations they come from.
#include "runtime/quant/calibrator.h"

#include <cmath>
#include <filesystem>
#include <memory>

#include <gtest/gtest.h>

#include "runtime/cuda/cuda_op_test_util.h"
#include "runtime/cuda/cuda_tolerances.h"
#include "runtime/model_builder.h"
#include "runtime/onnx_loader.h"
#include "support/test_media.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;

// x [N, 3, 13, 11] -> conv "c" -> relu "r" -> conv + residual "sum" -> global pool "p" -> flatten "y".
Graph residual_model() {
  const auto dir = std::filesystem::path(fovea::testing::test_temp_dir());
  ModelBuilder m(17);
  m.input("x", kF32, {-1, 3, 13, 11}).output("y", kF32, {-1, 3});
  m.initializer("w1", random_tensor(kF32, {3, 3, 3, 3}, 51, -0.5, 0.5));
  m.initializer("w2", random_tensor(kF32, {3, 3, 3, 3}, 52, -0.5, 0.5));
  m.attr(m.node("Conv", {"x", "w1"}, {"c"}, "conv1"), "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"}, "relu");
  m.attr(m.node("Conv", {"r", "w2"}, {"c2"}, "conv2"), "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Add", {"c2", "x"}, {"sum"}, "residual");
  m.node("GlobalAveragePool", {"sum"}, {"p"}, "pool");
  m.node("Flatten", {"p"}, {"y"}, "flatten");
  Result<Model> model = load_onnx(m.write(dir / "residual.onnx"));
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model.is_ok() ? model->graph : Graph{};
}

quant::CalibrationTable calibrate(const Graph& graph, Device device) {
  Result<std::unique_ptr<quant::Calibrator>> calibrator = quant::Calibrator::create(graph, device);
  EXPECT_TRUE(calibrator.is_ok()) << calibrator.status().to_string();
  if (!calibrator.is_ok()) return {};
  // Batches of 4, then a partial one of 3, planned again.
  for (const auto& [batch, seed] : {std::pair{4, 61}, std::pair{4, 62}, std::pair{3, 63}}) {
    const Status added = (*calibrator)->add_batch({random_tensor(kF32, {batch, 3, 13, 11}, seed, -2.0, 2.0)});
    EXPECT_TRUE(added.is_ok()) << added.to_string();
  }
  Result<quant::CalibrationTable> table = (*calibrator)->finish(quant::CalibrationMethod::kMinMax);
  EXPECT_TRUE(table.is_ok()) << table.status().to_string();
  return table.is_ok() ? *table : quant::CalibrationTable{};
}

TEST(CudaCalibrator, GivesTheRangesTheCpuCalibrationGives) {
  FOVEA_REQUIRE_GPU();
  const Graph graph = residual_model();
  const quant::CalibrationTable cpu = calibrate(graph, Device::kCpu);
  const quant::CalibrationTable cuda = calibrate(graph, Device::kCuda);
  EXPECT_EQ(cuda.samples, 11);
  EXPECT_EQ(cuda.samples, cpu.samples);
  ASSERT_EQ(cuda.tensors.size(), cpu.tensors.size());
  // A max |x| is one of the activation's elements, so the activations' own tolerance applies.
  const Tolerance tolerance = cuda_tolerance(Precision::kFloat32, Accuracy::kAccumulating);
  for (const auto& [name, range] : cpu.tensors) {
    const auto it = cuda.tensors.find(name);
    ASSERT_NE(it, cuda.tensors.end()) << name;
    EXPECT_LE(std::fabs(it->second.amax - range.amax), (tolerance.abs_of_max + tolerance.rel) * range.amax)
        << name;
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
