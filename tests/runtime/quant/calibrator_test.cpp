// Calibration (runtime/quant/calibrator.h): the three methods on distributions whose answer is
// known, histograms that grow across batches as if they had seen everything at once, and the
// Calibrator on small models: every float activation observed under its ONNX name, a tensor of
// zeros given a usable range, a NaN refused naming the tensor.
#include "runtime/quant/calibrator.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/model_builder.h"
#include "runtime/onnx_loader.h"
#include "runtime/op_test_util.h"
#include "support/test_media.h"

namespace fovea::runtime::quant {
namespace {

namespace fs = std::filesystem;
constexpr DataType kF32 = DataType::kFloat32;

std::vector<float> uniform(std::size_t count, float low, float high, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(low, high);
  std::vector<float> values(count);
  for (float& v : values) v = value(random);
  return values;
}

AbsHistogram histogram_of(const std::vector<float>& values) {
  AbsHistogram histogram;
  histogram.add(values);
  return histogram;
}

// The value of rank ceil(percentile% of n) among the sorted |x|: the exact percentile.
float exact_percentile(const std::vector<float>& values, double percentile) {
  std::vector<float> magnitudes(values.size());
  std::transform(values.begin(), values.end(), magnitudes.begin(), [](float v) { return std::fabs(v); });
  std::sort(magnitudes.begin(), magnitudes.end());
  const auto rank =
      static_cast<std::size_t>(std::ceil(percentile / 100.0 * static_cast<double>(values.size())));
  return magnitudes[rank - 1];
}

TEST(CalibrationMethods, MinMaxIsTheLargestMagnitudeExactly) {
  std::vector<float> values = uniform(100000, -3.0f, 3.0f, 1);
  values[4321] = -3.5f;
  EXPECT_EQ(minmax_amax(histogram_of(values)), 3.5f);
  EXPECT_EQ(method_amax(histogram_of(values), CalibrationMethod::kMinMax, kDefaultPercentile), 3.5f);
}

TEST(CalibrationMethods, PercentileIsWithinOneBinAboveTheExactPercentile) {
  const std::vector<float> values = uniform(200001, -1.0f, 1.0f, 2);
  const AbsHistogram histogram = histogram_of(values);
  for (double percentile : {50.0, 90.0, 99.0, 99.99, 100.0}) {
    const float exact = exact_percentile(values, percentile);
    const float amax = percentile_amax(histogram, percentile);
    EXPECT_GE(amax, exact) << percentile;
    EXPECT_LE(amax, exact + histogram.bin_width()) << percentile;
    EXPECT_LE(amax, histogram.max_abs()) << percentile;
  }
  // Uniform |x| on [0, 1): the p-th percentile is about p / 100.
  EXPECT_NEAR(percentile_amax(histogram, 99.0), 0.99, 0.005);
}

TEST(CalibrationMethods, EntropyClipsFarOutliersButKeepsTheBulkOfAGaussian) {
  std::mt19937 random(3);
  std::normal_distribution<float> gaussian(0.0f, 1.0f);
  std::vector<float> values(100000);
  for (float& v : values) v = gaussian(random);
  for (int i = 0; i < 5; ++i) values.push_back(i % 2 == 0 ? 50.0f : -50.0f);  // sigma = 1, outliers at 50
  const AbsHistogram histogram = histogram_of(values);
  const float amax = entropy_amax(histogram);
  EXPECT_GT(amax, 3.0f);                        // keeps 99.7% of the Gaussian unclipped
  EXPECT_LT(amax, histogram.max_abs() / 5.0f);  // the outliers do not spend the 8 bits
  EXPECT_EQ(minmax_amax(histogram), 50.0f);
}

TEST(CalibrationMethods, EntropyKeepsADistributionWithoutOutliers) {
  // Uniform values leave nothing worth clipping: every threshold below the max loses a whole tail.
  const AbsHistogram histogram = histogram_of(uniform(100000, -2.0f, 2.0f, 4));
  EXPECT_GT(entropy_amax(histogram), 0.9f * histogram.max_abs());
}

TEST(CalibrationMethods, ATensorOfZerosGetsTheSmallestUsableRange) {
  const AbsHistogram zeros = histogram_of(std::vector<float>(1000, 0.0f));
  EXPECT_EQ(zeros.range(), 0.0f);
  for (CalibrationMethod method :
       {CalibrationMethod::kEntropy, CalibrationMethod::kPercentile, CalibrationMethod::kMinMax}) {
    EXPECT_EQ(method_amax(zeros, method, kDefaultPercentile), kMinAmax);
  }
  EXPECT_GT(kMinAmax, 0.0f);
  EXPECT_TRUE(std::isnormal(TensorRange{kMinAmax}.scale()));
  // Values too small for any scale an int8 tensor can have are zeros too.
  EXPECT_EQ(minmax_amax(histogram_of({1e-40f, -2e-41f})), kMinAmax);
}

// Values filling [0, A] evenly, quantized at amax A: signal A^2 / 3 over noise (A / 127)^2 / 12,
// 4 * 127^2, 48.1 dB.
TEST(QuantizationSqnr, ValuesFillingTheRangeQuantizeAtTheTheoreticalRatio) {
  const AbsHistogram histogram = histogram_of(uniform(200000, -3.0f, 3.0f, 11));
  EXPECT_NEAR(quantization_sqnr_db(histogram, histogram.max_abs()), 10.0 * std::log10(4.0 * 127.0 * 127.0),
              0.3);
}

// |x| of a unit Gaussian clipped at 4: rounding noise (4 / 127)^2 / 12 plus the clipped tail's
// 2 * integral of (x - 4)^2 phi(x) beyond 4, about 8.3e-5 + 0.8e-5 of a signal of 1: 40.4 dB, the
// figure calibrator.h's threshold is set against.
TEST(QuantizationSqnr, AGaussianClippedAtFourSigmaQuantizesAtFortyDecibels) {
  std::mt19937 random(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(400000);
  for (float& v : values) v = normal(random);
  EXPECT_NEAR(quantization_sqnr_db(histogram_of(values), 4.0f), 40.4, 0.5);
}

// One value 300 times the bulk's largest: a range that holds it leaves the bulk a level or two (the
// values below half a step round to zero), one that clips it loses its energy; both fall under the
// automatic rule's default, while the bulk alone quantizes at 48 dB.
TEST(QuantizationSqnr, AnOutlierCostsTheRatioWhetherItIsKeptOrClipped) {
  std::vector<float> values = uniform(10000, 0.0f, 1.0f, 12);
  values.push_back(300.0f);
  const AbsHistogram histogram = histogram_of(values);
  const double kept = quantization_sqnr_db(histogram, 300.0f);
  const double clipped = quantization_sqnr_db(histogram, 1.0f);
  EXPECT_LT(kept, kDefaultMinSqnrDb);
  EXPECT_GT(kept, 10.0);  // 93,333 over about 3,333: 14.5 dB
  EXPECT_LT(clipped, 1.0);
  EXPECT_EQ(quantization_sqnr_db(histogram_of(std::vector<float>(100, 0.0f)), kMinAmax), kNoiselessSqnrDb);
}

TEST(AbsHistogram, GrowingAcrossBatchesEqualsOneHistogramOfEverything) {
  const std::vector<float> zeros(100, 0.0f);
  std::vector<float> first = uniform(5000, -1.0f, 1.0f, 5);
  first[10] = 1.0f;  // the first range: just above 1
  std::vector<float> second = uniform(7000, -4.0f, 4.0f, 6);
  second[20] = -4.0f;  // two doublings
  AbsHistogram batches;
  batches.add(zeros);
  EXPECT_EQ(batches.range(), 0.0f);
  batches.add(first);
  const float first_range = batches.range();
  EXPECT_GT(first_range, 1.0f);
  EXPECT_LT(first_range, 1.0f + 1e-6f);
  batches.add(second);
  EXPECT_EQ(batches.range(), 4.0f * first_range);

  std::vector<float> everything = zeros;
  everything.insert(everything.end(), first.begin(), first.end());
  everything.insert(everything.end(), second.begin(), second.end());
  const AbsHistogram once = histogram_of(everything);
  EXPECT_EQ(once.range(), batches.range());
  EXPECT_EQ(once.max_abs(), batches.max_abs());
  EXPECT_EQ(once.count(), batches.count());
  EXPECT_EQ(once.bins(), batches.bins());
  EXPECT_EQ(batches.count(), static_cast<std::int64_t>(everything.size()));
}

TEST(AbsHistogram, RefusesNothingButReportsNonFiniteValues) {
  EXPECT_FALSE(has_non_finite(std::vector<float>{0.0f, -1.0f, 3e38f}));
  EXPECT_TRUE(has_non_finite(std::vector<float>{0.0f, std::numeric_limits<float>::quiet_NaN()}));
  EXPECT_TRUE(has_non_finite(std::vector<float>{-std::numeric_limits<float>::infinity()}));
}

fs::path fresh_dir() {
  const fs::path dir = fs::path(fovea::testing::test_temp_dir()) / "calibrator";
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

Graph load(const fs::path& path) {
  Result<Model> model = load_onnx(path);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model.is_ok() ? model->graph : Graph{};
}

// x [N, 3, 7, 5] -> conv (+ bias) "c" -> relu "r" -> global pool "p" -> flatten "f" -> gemm "y".
Graph classifier(const fs::path& dir) {
  testing::ModelBuilder m(17);
  m.input("x", kF32, {-1, 3, 7, 5}).output("y", kF32, {-1, 4});
  m.initializer("w", testing::random_tensor(kF32, {6, 3, 3, 3}, 11));
  m.initializer("b", testing::random_tensor(kF32, {6}, 12));
  m.initializer("fc_w", testing::random_tensor(kF32, {4, 6}, 13));
  m.attr(m.node("Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"}, "relu");
  m.node("GlobalAveragePool", {"r"}, {"p"}, "pool");
  m.node("Flatten", {"p"}, {"f"}, "flatten");
  m.attr(m.node("Gemm", {"f", "fc_w"}, {"y"}, "fc"), "transB", std::int64_t{1});
  return load(m.write(dir / "classifier.onnx"));
}

std::set<std::string> names_of(const CalibrationTable& table) {
  std::set<std::string> names;
  for (const auto& [name, range] : table.tensors) names.insert(name);
  return names;
}

float max_abs(const Tensor& tensor) {
  float largest = 0.0f;
  for (std::int64_t i = 0; i < tensor.numel(); ++i)
    largest = std::max(largest, std::fabs(tensor.data<float>()[i]));
  return largest;
}

TEST(Calibrator, ObservesEveryFloatActivationUnderItsOnnxNameAcrossBatchesOfAnySize) {
  const Graph graph = classifier(fresh_dir());
  Result<std::unique_ptr<Calibrator>> calibrator = Calibrator::create(graph, Device::kCpu);
  ASSERT_TRUE(calibrator.is_ok()) << calibrator.status().to_string();
  const Tensor first = testing::random_tensor(kF32, {3, 3, 7, 5}, 21, -2.0, 2.0);
  const Tensor last = testing::random_tensor(kF32, {1, 3, 7, 5}, 22, -3.0, 3.0);  // a partial batch
  ASSERT_TRUE((*calibrator)->add_batch({first}).is_ok());
  ASSERT_TRUE((*calibrator)->add_batch({last}).is_ok());
  EXPECT_EQ((*calibrator)->samples(), 4);

  const Result<CalibrationTable> table = (*calibrator)->finish(CalibrationMethod::kMinMax);
  ASSERT_TRUE(table.is_ok()) << table.status().to_string();
  EXPECT_EQ(table->samples, 4);
  EXPECT_EQ(table->method, CalibrationMethod::kMinMax);
  // The input and every node output; no weight.
  EXPECT_EQ(names_of(*table), (std::set<std::string>{"x", "c", "r", "p", "f", "y"}));
  EXPECT_EQ(table->tensors.at("x").amax, std::max(max_abs(first), max_abs(last)));
  EXPECT_LE(table->tensors.at("r").amax, table->tensors.at("c").amax);  // the relu of c

  // The output's range is what the model alone gives on the same samples. The model alone is
  // planned with its convolution and relu fused, which sums in another order: a few float32 ulps
  // (graph_test_util.h's tolerance).
  float expected = 0.0f;
  for (const Tensor& batch : {first, last}) {
    Result<std::unique_ptr<InferenceSession>> session =
        InferenceSession::create(graph, {{"x", batch.shape()}});
    ASSERT_TRUE(session.is_ok()) << session.status().to_string();
    Result<std::vector<Tensor>> outputs = (*session)->run_host(nullptr, {batch});
    ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
    expected = std::max(expected, max_abs(outputs->front()));
  }
  EXPECT_NEAR(table->tensors.at("y").amax, expected, 8 * std::numeric_limits<float>::epsilon() * expected);

  // Every method gives every tensor a range within what was seen.
  for (CalibrationMethod method : {CalibrationMethod::kEntropy, CalibrationMethod::kPercentile}) {
    const Result<CalibrationTable> other = (*calibrator)->finish(method);
    ASSERT_TRUE(other.is_ok());
    EXPECT_EQ(names_of(*other), names_of(*table));
    for (const auto& [name, range] : other->tensors) {
      EXPECT_GT(range.amax, 0.0f) << name;
      EXPECT_LE(range.amax, table->tensors.at(name).amax) << name;
    }
  }
  EXPECT_FALSE((*calibrator)->finish(CalibrationMethod::kPercentile, 0.0).is_ok());
  EXPECT_FALSE((*calibrator)->finish(CalibrationMethod::kPercentile, 100.5).is_ok());

  // Every tensor's SQNR is measured, and the rule marks the tensors below its threshold: all of
  // them at 200 dB, none at 0.
  for (const auto& [name, range] : table->tensors) {
    ASSERT_TRUE(range.sqnr_db.has_value()) << name;
    EXPECT_EQ(range.keep_float, *range.sqnr_db < kDefaultMinSqnrDb) << name;
  }
  for (const double threshold : {0.0, 200.0}) {
    const Result<CalibrationTable> ruled = (*calibrator)->finish(CalibrationMethod::kMinMax, 99.0, threshold);
    ASSERT_TRUE(ruled.is_ok());
    for (const auto& [name, range] : ruled->tensors) EXPECT_EQ(range.keep_float, threshold > 0.0) << name;
  }
}

// x [N, 4] -> log "log" (NaN for x < 0), and x * 0 -> "zeros".
Graph log_and_zeros(const fs::path& dir) {
  testing::ModelBuilder m(17);
  m.input("x", kF32, {-1, 4}).output("log", kF32, {-1, 4}).output("zeros", kF32, {-1, 4});
  m.initializer("zero", testing::float_tensor({}, {0.0f}));
  m.node("Log", {"x"}, {"log"}, "log");
  m.node("Mul", {"x", "zero"}, {"zeros"}, "mul");
  return load(m.write(dir / "log.onnx"));
}

TEST(Calibrator, ATensorOfZerosGetsTheSmallestUsableRange) {
  Result<std::unique_ptr<Calibrator>> calibrator =
      Calibrator::create(log_and_zeros(fresh_dir()), Device::kCpu);
  ASSERT_TRUE(calibrator.is_ok()) << calibrator.status().to_string();
  ASSERT_TRUE((*calibrator)->add_batch({testing::random_tensor(kF32, {2, 4}, 31, 0.5, 4.0)}).is_ok());
  for (CalibrationMethod method :
       {CalibrationMethod::kEntropy, CalibrationMethod::kPercentile, CalibrationMethod::kMinMax}) {
    const Result<CalibrationTable> table = (*calibrator)->finish(method);
    ASSERT_TRUE(table.is_ok()) << table.status().to_string();
    EXPECT_EQ(table->tensors.at("zeros").amax, kMinAmax);
    EXPECT_GT(table->tensors.at("log").amax, kMinAmax);
  }
}

TEST(Calibrator, ANanIsRefusedNamingTheTensorAndTheSamplesSoFar) {
  Result<std::unique_ptr<Calibrator>> calibrator =
      Calibrator::create(log_and_zeros(fresh_dir()), Device::kCpu);
  ASSERT_TRUE(calibrator.is_ok()) << calibrator.status().to_string();
  ASSERT_TRUE((*calibrator)->add_batch({testing::random_tensor(kF32, {3, 4}, 41, 0.5, 4.0)}).is_ok());
  const std::int64_t seen = (*calibrator)->histograms().at("log").count();
  Tensor negative = testing::random_tensor(kF32, {2, 4}, 42, 0.5, 4.0);
  negative.data<float>()[5] = -1.0f;
  const Status refused = (*calibrator)->add_batch({negative});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("'log'"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("first 3 samples"), std::string::npos) << refused.message();
  // The refused batch left nothing behind: the calibration goes on from where it was.
  EXPECT_EQ((*calibrator)->samples(), 3);
  EXPECT_EQ((*calibrator)->histograms().at("log").count(), seen);
  EXPECT_TRUE((*calibrator)->finish(CalibrationMethod::kEntropy).is_ok());
}

TEST(Calibrator, FinishingWithoutSamplesIsAnError) {
  Result<std::unique_ptr<Calibrator>> calibrator =
      Calibrator::create(log_and_zeros(fresh_dir()), Device::kCpu);
  ASSERT_TRUE(calibrator.is_ok());
  const Result<CalibrationTable> table = (*calibrator)->finish(CalibrationMethod::kEntropy);
  ASSERT_FALSE(table.is_ok());
  EXPECT_NE(table.status().message().find("no samples"), std::string::npos) << table.status().message();
}

}  // namespace
}  // namespace fovea::runtime::quant
