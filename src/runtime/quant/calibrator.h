// Post-training calibration: a float model runs over sample inputs, and what each activation held
// becomes the clipping threshold (amax) of its 8-bit form, kept in a calibration cache
// (calibration_table.h) that Precision::kInt8 plans with.
//
//   FOVEA_ASSIGN_OR_RETURN(auto calibrator, Calibrator::create(model.graph, Device::kCuda));
//   for (...) FOVEA_TRY(calibrator->add_batch({batch}));     // preprocessed as the flow will
//   FOVEA_ASSIGN_OR_RETURN(CalibrationTable table, calibrator->finish(CalibrationMethod::kEntropy));
//   table.model = ...; table.model_digest = file_digest(...); write_calibration(path, table);
//
// Every float32 activation is observed: the graph inputs and every node output that is not a
// constant, under the names the ONNX file gives them. The planner's fusions keep the name of a
// chain's last output, so whatever the int8 rewrite finds in the optimized graph has its range here.
// Each tensor gets a histogram of |x| (AbsHistogram), folded batch by batch, so that one pass over
// the samples serves every method:
//   minmax      amax = max |x|: nothing is clipped, and one outlier spends the 8 bits.
//   percentile  the |x| below which `percentile`% of the values lie (99.99 by default): clips a
//               fixed share, whatever the distribution's shape.
//   entropy     TensorRT's: the threshold whose 8-bit form of the distribution loses the least
//               information (the Kullback-Leibler divergence of the quantized distribution from the
//               clipped one); entropy_amax says how.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/graph.h"
#include "runtime/quant/calibration_table.h"
#include "runtime/session.h"

#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_raii.h"
#endif

namespace fovea::runtime::quant {

// The smallest amax a calibration gives: its scale (amax / 127) is float's smallest normal number.
// A tensor that held only zeros gets it (any scale quantizes zeros exactly, and it must be positive
// and finite), as does one whose values all lie below it (they are zeros to 8 bits anyway).
inline constexpr float kMinAmax = kInt8Max * std::numeric_limits<float>::min();
inline constexpr double kDefaultPercentile = 99.99;
// The automatic rule's threshold: a tensor whose int8 SQNR is below it keeps its readers in float.
// A half-normal activation (a ReLU's output) clipped at 4 sigma quantizes at about 40 dB; 20 dB is
// a range some 30 times its typical value (outliers, a minmax range), where the bulk of the values
// share a handful of the 127 levels. 30 dB because 20 was not enough where it was measured: a
// trained ResNet-50's top-1 agreement with float32 went from 98.0-98.3% at 20 dB to 99.0-99.3% at
// 30 (entropy, percentile), at the same int8 speed (docs/perf.md, calls 66-68).
inline constexpr double kDefaultMinSqnrDb = 30.0;
// What quantization_sqnr_db gives a tensor without quantization noise (all zeros, or all exact).
inline constexpr double kNoiselessSqnrDb = 200.0;

// The histogram of |x| of one tensor, over everything folded into it: kBins bins of equal width over
// [0, range). The first values that are not all zero set the range just above their max |x| (zeros
// before them are counted in bin 0, which holds 0 whatever the range); a later, larger |x| doubles
// the range until it fits, each doubling merging bin pairs (2i, 2i + 1) into bin i. The edges of the
// coarser bins are edges of the finer ones, so the counts stay exact: the histogram equals the one a
// single pass over every value at the final range would give, and one pass over the samples suffices.
class AbsHistogram {
 public:
  // 2048 bins as TensorRT's entropy calibration uses: 16 bins per 8-bit level at the widest
  // threshold, fine enough that the threshold search moves in steps of 1/2048 of the range.
  static constexpr int kBins = 2048;

  AbsHistogram() : bins_(kBins, 0) {}
  // Folds `values` in; every value must be finite (has_non_finite() first).
  void add(std::span<const float> values);

  float range() const { return range_; }
  float max_abs() const { return max_abs_; }
  std::int64_t count() const { return count_; }
  const std::vector<std::int64_t>& bins() const { return bins_; }
  double bin_width() const { return static_cast<double>(range_) / kBins; }

 private:
  void grow_to(float largest);

  float range_ = 0.0f;  // 0 until a value other than zero arrives
  float max_abs_ = 0.0f;
  std::int64_t count_ = 0;
  std::vector<std::int64_t> bins_;
};

bool has_non_finite(std::span<const float> values);

// The methods, each at least kMinAmax and at most the histogram's max |x|.
float minmax_amax(const AbsHistogram& histogram);
// The upper edge of the bin where the cumulative count reaches `percentile`% (0 < percentile <= 100)
// of all values: within one bin width above the exact percentile of |x|.
float percentile_amax(const AbsHistogram& histogram, double percentile);
// For each candidate threshold of i bins (i from 128, one bin per 8-bit level, to kBins): the
// reference distribution P is the first i bins with every count beyond them added to the last (the
// clipped values land there); the candidate Q is the same i bins merged into 128 levels and spread
// back evenly over each level's non-empty bins (what 8 bits can tell apart). The threshold is
// i bin widths for the i with the least KL(P || Q); ties go to the larger i, which clips less.
// Bin 0 is counted as bin 1 is: it holds the exact zeros (half of a ReLU's output), which quantize
// exactly at any threshold but, as one spike merged into a level with its neighbours, would push the
// search to the smallest thresholds (pytorch-quantization's calibrator does the same). Empty bins
// of P and Q get 1e-4 of a count, taken from the others, so that the divergence stays finite
// (ONNX Runtime's and MXNet's smoothing).
float entropy_amax(const AbsHistogram& histogram);
float method_amax(const AbsHistogram& histogram, CalibrationMethod method, double percentile);

// The signal-to-quantization-noise ratio, in dB, of the histogram's values quantized to int8 at
// `amax`: sum of x^2 over the sum of the squared errors, each bin's values taken at its centre. A
// value below amax rounds to a step of amax / 127 (error variance step^2 / 12, or x^2 for a value
// that rounds to zero); one above it is clipped (error x - amax).
double quantization_sqnr_db(const AbsHistogram& histogram, float amax);

class Calibrator {
 public:
  // Observes `graph` (as loaded; it is copied) run on `device` in float32, with no engine cache.
  // Errors: a CUDA device in a build or on a machine without one.
  static Result<std::unique_ptr<Calibrator>> create(const Graph& graph, Device device);
  Calibrator(const Calibrator&) = delete;
  Calibrator& operator=(const Calibrator&) = delete;

  // Runs the model on `inputs` (one per graph input, in the graph's order) and folds every
  // activation into its histogram. The session is planned for the inputs' shapes, and again when a
  // batch of other shapes comes (a last, partial batch). A NaN or infinity in an activation is an
  // error naming the tensor and the samples calibrated before this batch; the histograms then stay
  // as they were before it.
  Status add_batch(const std::vector<Tensor>& inputs);

  // Samples seen: the first input's leading dimension (the batch), summed over the batches.
  int samples() const { return samples_; }
  const std::map<std::string, AbsHistogram, std::less<>>& histograms() const { return histograms_; }

  // The table's method, samples and a range for every observed tensor, with its SQNR and the
  // automatic rule applied: keep_float where the SQNR is below `min_sqnr_db` (0: never). The caller
  // fills in the model, its digest and how the samples were prepared. Errors: no batch yet, a
  // percentile outside (0, 100].
  Result<CalibrationTable> finish(CalibrationMethod method, double percentile = kDefaultPercentile,
                                  double min_sqnr_db = kDefaultMinSqnrDb) const;

 private:
  Calibrator(Graph observed, Device device) : observed_(std::move(observed)), device_(device) {}
  Status open_session(const std::vector<Tensor>& inputs);
  // The batch's float32 tensors by name, all checked to be finite: inputs, then observed outputs.
  Result<std::vector<std::pair<std::string, const Tensor*>>> finite_activations(
      const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) const;

  Graph observed_;  // the model with every observed activation among its outputs
  Device device_;
  InputShapes shapes_;  // the current session's
  std::unique_ptr<InferenceSession> session_;
#if defined(FOVEA_HAVE_CUDA)
  CudaStream stream_;
#endif
  int samples_ = 0;
  std::map<std::string, AbsHistogram, std::less<>> histograms_;
};

}  // namespace fovea::runtime::quant
