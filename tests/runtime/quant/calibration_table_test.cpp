// The calibration cache (runtime/quant/calibration_table.h): what is written reads back exactly,
// a cache is tied to its model's bytes, and a file that is not a cache fovea reads is refused
// naming the file and, where one is at fault, the tensor.
#include "runtime/quant/calibration_table.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "runtime/engine.h"
#include "support/cli_process.h"
#include "support/test_media.h"

namespace fovea::runtime::quant {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir() {
  const fs::path dir = fs::path(fovea::testing::test_temp_dir()) / "calibration_table";
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

fs::path write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// A cache file around `tensors` (the JSON of the "tensors" member) with every other field valid.
std::string cache_text(const std::string& tensors, int version = kCalibrationVersion) {
  return R"({"format": "fovea-calibration", "version": )" + std::to_string(version) +
         R"(, "model": "m.onnx", "model_digest": "0123456789abcdef", "method": "entropy", "samples": 3,
            "preprocess": "8x8 none rgb", "tensors": )" +
         tensors + "}";
}

TEST(CalibrationTable, RoundTripsEveryFieldAndEveryFloatExactly) {
  const fs::path dir = fresh_dir();
  CalibrationTable table{.model = "resnet18.onnx",
                         .model_digest = "00ff00ff00ff00ff",
                         .method = CalibrationMethod::kPercentile,
                         .samples = 500,
                         .preprocess = "224x224 imagenet rgb"};
  // Floats of every magnitude, the smallest amax a calibration gives, and names with the characters
  // exporters put in them.
  std::mt19937 random(7);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-120, 120);
  for (int i = 0; i < 200; ++i) {
    table.tensors["t" + std::to_string(i)].amax = std::ldexp(mantissa(random), exponent(random));
  }
  table.tensors["/backbone/conv1/Conv_output_0"].amax = 2.64f;
  table.tensors["x:0 \"quoted\""].amax = std::numeric_limits<float>::max();
  table.tensors["tiny"].amax = kInt8Max * std::numeric_limits<float>::min();
  table.tensors["tiny"].sqnr_db = 38.25f;
  table.tensors["tiny"].keep_float = true;
  const fs::path path = dir / "m.calib";
  ASSERT_TRUE(write_calibration(path, table).is_ok());

  const Result<CalibrationTable> read = read_calibration(path);
  ASSERT_TRUE(read.is_ok()) << read.status().to_string();
  EXPECT_EQ(read->model, table.model);
  EXPECT_EQ(read->model_digest, table.model_digest);
  EXPECT_EQ(read->method, table.method);
  EXPECT_EQ(read->samples, table.samples);
  EXPECT_EQ(read->preprocess, table.preprocess);
  ASSERT_EQ(read->tensors.size(), table.tensors.size());
  for (const auto& [name, range] : table.tensors) {
    const auto it = read->tensors.find(name);
    ASSERT_NE(it, read->tensors.end()) << name;
    EXPECT_EQ(it->second.amax, range.amax) << name;  // bit for bit, not merely close
    EXPECT_EQ(it->second.keep_float, range.keep_float) << name;
    EXPECT_EQ(it->second.sqnr_db.has_value(), range.sqnr_db.has_value()) << name;
  }
  EXPECT_FLOAT_EQ(*read->tensors.at("tiny").sqnr_db, 38.3f);  // written to 0.1 dB
  // Human-readable: the shortest decimal of each float, the scale beside it.
  const std::string text = fovea::testing::read_text(path);
  EXPECT_NE(text.find(R"("amax": 2.64)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("format": "fovea-calibration")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("method": "percentile")"), std::string::npos) << text;
}

TEST(CalibrationTable, ACacheForAnotherModelIsRefusedNamingBothFiles) {
  const fs::path dir = fresh_dir();
  const fs::path model = write_text(dir / "model.onnx", "the model's bytes");
  const fs::path edited = write_text(dir / "edited.onnx", "the model's bytes, edited");
  CalibrationTable table{.model = "model.onnx", .model_digest = file_digest(model).value()};
  table.tensors["x"].amax = 1.0f;
  const fs::path path = dir / "model.calib";
  ASSERT_TRUE(write_calibration(path, table).is_ok());

  const Result<CalibrationTable> same = read_calibration_for(path, model);
  ASSERT_TRUE(same.is_ok()) << same.status().to_string();
  EXPECT_EQ(same->tensors.at("x").amax, 1.0f);
  const Result<CalibrationTable> other = read_calibration_for(path, edited);
  ASSERT_FALSE(other.is_ok());
  EXPECT_NE(other.status().message().find(path.string()), std::string::npos) << other.status().message();
  EXPECT_NE(other.status().message().find(edited.string()), std::string::npos) << other.status().message();
  EXPECT_NE(other.status().message().find("calibrate again"), std::string::npos) << other.status().message();
  EXPECT_FALSE(read_calibration_for(path, dir / "missing.onnx").is_ok());
}

TEST(CalibrationTable, RefusesFilesThatAreNoCacheItReadsNamingFileAndTensor) {
  const fs::path dir = fresh_dir();
  struct Case {
    const char* name;
    std::string text;
    StatusCode code;
    std::string expected;  // in the message, besides the file's name
  };
  const Case cases[] = {
      {"not_json", "{\"format\": \"fovea-calibration\", ", StatusCode::kCorruptData, "not JSON"},
      {"empty", "", StatusCode::kCorruptData, "not JSON"},
      {"other_json", R"({"layers": []})", StatusCode::kCorruptData, "not a fovea calibration cache"},
      {"format_number", R"({"format": 1})", StatusCode::kCorruptData, "not a fovea calibration cache"},
      {"version", cache_text(R"({"x": {"amax": 1}})", kCalibrationVersion + 1), StatusCode::kUnsupported,
       "version 2"},
      {"zero", cache_text(R"({"x": {"amax": 1}, "conv_1": {"amax": 0}})"), StatusCode::kCorruptData,
       "tensor 'conv_1'"},
      {"negative", cache_text(R"({"relu": {"amax": -2.5}})"), StatusCode::kCorruptData, "tensor 'relu'"},
      {"nan", cache_text(R"({"relu": {"amax": null}})"), StatusCode::kCorruptData, "tensor 'relu'"},
      {"beyond_float", cache_text(R"({"relu": {"amax": 1e39}})"), StatusCode::kCorruptData, "tensor 'relu'"},
      {"no_amax", cache_text(R"({"relu": {"scale": 0.1}})"), StatusCode::kCorruptData, "tensor 'relu'"},
      {"keep_float_text", cache_text(R"({"relu": {"amax": 1, "keep_float": "yes"}})"),
       StatusCode::kCorruptData, "tensor 'relu': 'keep_float' is not true or false"},
      {"sqnr_text", cache_text(R"({"relu": {"amax": 1, "sqnr_db": "high"}})"), StatusCode::kCorruptData,
       "tensor 'relu': 'sqnr_db' is not a number"},
      {"bad_method", R"({"format": "fovea-calibration", "version": 1, "model": "m", "model_digest": "d",
          "method": "kl", "samples": 1, "preprocess": "", "tensors": {}})",
       StatusCode::kInvalidArgument, "'kl'"},
      {"no_tensors", R"({"format": "fovea-calibration", "version": 1, "model": "m", "model_digest": "d",
          "method": "minmax", "samples": 1, "preprocess": ""})",
       StatusCode::kCorruptData, "'tensors'"},
  };
  for (const Case& c : cases) {
    const fs::path path = write_text(dir / (std::string(c.name) + ".calib"), c.text);
    const Result<CalibrationTable> read = read_calibration(path);
    ASSERT_FALSE(read.is_ok()) << c.name;
    EXPECT_EQ(read.status().code(), c.code) << c.name << ": " << read.status().to_string();
    EXPECT_NE(read.status().message().find(path.string()), std::string::npos) << read.status().message();
    EXPECT_NE(read.status().message().find(c.expected), std::string::npos) << read.status().message();
  }
  const Result<CalibrationTable> missing = read_calibration(dir / "missing.calib");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing.calib"), std::string::npos);
}

TEST(CalibrationTable, NeverWritesWhatItWouldRefuse) {
  const fs::path dir = fresh_dir();
  for (float amax :
       {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    CalibrationTable table;
    table.tensors["good"].amax = 1.0f;
    table.tensors["bad"].amax = amax;
    const Status written = write_calibration(dir / "bad.calib", table);
    ASSERT_FALSE(written.is_ok()) << amax;
    EXPECT_NE(written.message().find("tensor 'bad'"), std::string::npos) << written.message();
    EXPECT_FALSE(fs::exists(dir / "bad.calib"));
  }
}

TEST(CalibrationTable, MethodNamesParseBackAndOthersAreRefused) {
  for (CalibrationMethod method :
       {CalibrationMethod::kEntropy, CalibrationMethod::kPercentile, CalibrationMethod::kMinMax}) {
    const Result<CalibrationMethod> parsed = parse_calibration_method(calibration_method_name(method));
    ASSERT_TRUE(parsed.is_ok());
    EXPECT_EQ(*parsed, method);
  }
  const Result<CalibrationMethod> unknown = parse_calibration_method("max");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("'max'"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("entropy, percentile or minmax"), std::string::npos);
}

}  // namespace
}  // namespace fovea::runtime::quant
