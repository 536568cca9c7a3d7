// A calibration cache: the per-tensor ranges that let a float model run in 8 bits, kept in a small,
// versioned, human-readable JSON file (the counterpart of TensorRT's calibration cache and
// DeepStream's int8-calib-file). Keyed by tensor name as the ONNX file names it, and tied to the
// model by the digest of the file's bytes: a cache made for another model (or an edited one) is
// refused with the reason, never silently reused.
//
//   {"format": "fovea-calibration", "version": 1, "model": "resnet18.onnx", "model_digest": "...",
//    "method": "entropy", "samples": 500, "preprocess": "224x224 imagenet rgb",
//    "tensors": {"input": {"amax": 2.64, "scale": 0.0208, "sqnr_db": 38.2}, "relu_1": {...}, ...}}
//
// `amax` is the clipping threshold the method chose; `scale` = amax / 127 (symmetric int8, zero
// point 0): the value one step of the quantized tensor stands for. `sqnr_db` is the tensor's
// signal-to-quantization-noise ratio at that scale, estimated from the calibration's histogram;
// `"keep_float": true` (set by calibration's rule, --min-sqnr, or by hand) leaves the layers that
// read the tensor in float. Both are optional: caches written before them still read. Weights are not in the
// cache: they are quantized per output channel from their own values when the model is planned.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fovea::runtime::quant {

inline constexpr int kCalibrationVersion = 1;
inline constexpr float kInt8Max = 127.0f;

// How the clipping threshold of a tensor is chosen from its histogram of |x| (calibrator.h).
enum class CalibrationMethod { kEntropy, kPercentile, kMinMax };
std::string_view calibration_method_name(CalibrationMethod method);  // "entropy", "percentile", "minmax"
// Parses a name above; anything else is an error naming the text and the choices.
Result<CalibrationMethod> parse_calibration_method(std::string_view text);

struct TensorRange {
  float amax = 0.0f;  // clipping threshold, > 0
  std::optional<float> sqnr_db;
  bool keep_float = false;
  float scale() const { return amax / kInt8Max; }
};

struct CalibrationTable {
  std::string model;         // the model file's name, for people reading the file
  std::string model_digest;  // runtime::file_digest of the model file
  CalibrationMethod method = CalibrationMethod::kEntropy;
  int samples = 0;         // how many inputs (images or frames) were seen
  std::string preprocess;  // how they were prepared, for people reading the file
  std::map<std::string, TensorRange, std::less<>> tensors;
};

Status write_calibration(const std::filesystem::path& path, const CalibrationTable& table);
// Reads `path`; errors name the file and the fault (not JSON, another format or version, a tensor
// with an amax that is not a positive finite number).
Result<CalibrationTable> read_calibration(const std::filesystem::path& path);
// read_calibration, then refuses a cache whose digest is not `model`'s: the error names both files
// and says to calibrate again.
Result<CalibrationTable> read_calibration_for(const std::filesystem::path& path,
                                              const std::filesystem::path& model);

}  // namespace fovea::runtime::quant
