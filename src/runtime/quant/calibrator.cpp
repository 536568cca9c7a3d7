#include "runtime/quant/calibrator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "runtime/parallel.h"

namespace fovea::runtime::quant {
namespace {

// 8-bit levels on one side of zero: symmetric int8 spends [-127, 127] on [-amax, amax], and a
// histogram of |x| sees one side.
constexpr int kLevels = 128;
// The count an empty bin gets in the entropy search (ONNX Runtime's and MXNet's value).
constexpr double kSmoothing = 1e-4;

std::span<const float> float_values(const Tensor& tensor) {
  return {tensor.data<float>(), static_cast<std::size_t>(tensor.numel())};
}

// Moves eps of a count into every empty bin, taken evenly from the others. False when all are
// empty. Every non-empty bin holds at least one count (bins of P and Q are counts or averages of
// counts), more than the at most eps * kBins taken from it.
bool smooth(std::vector<double>& counts, std::size_t size) {
  const auto empty = static_cast<std::size_t>(std::count(counts.begin(), counts.begin() + size, 0.0));
  if (empty == size) return false;
  const double taken = kSmoothing * static_cast<double>(empty) / static_cast<double>(size - empty);
  for (std::size_t j = 0; j < size; ++j) counts[j] += counts[j] == 0.0 ? kSmoothing : -taken;
  return true;
}

// KL(P || Q) of two histograms of counts, each normalized by its sum.
double divergence(const std::vector<double>& p, const std::vector<double>& q, std::size_t size) {
  double p_sum = 0.0;
  double q_sum = 0.0;
  for (std::size_t j = 0; j < size; ++j) {
    p_sum += p[j];
    q_sum += q[j];
  }
  double kl = 0.0;
  for (std::size_t j = 0; j < size; ++j) {
    const double pj = p[j] / p_sum;
    kl += pj * std::log(pj / (q[j] / q_sum));
  }
  return kl;
}

// The divergence of threshold `size` bins (entropy_amax's P and Q) given the bins and the count
// beyond them; p and q are scratch of kBins entries.
double threshold_divergence(const std::vector<double>& bins, std::size_t size, double outliers,
                            std::vector<double>& p, std::vector<double>& q) {
  std::copy_n(bins.begin(), size, p.begin());
  p[size - 1] += outliers;
  // Bin j falls in level j * kLevels / size, as np.digitize over linspace(0, size, kLevels + 1) puts it.
  std::vector<double> level_sum(kLevels, 0.0);
  std::vector<int> level_filled(kLevels, 0);
  for (std::size_t j = 0; j < size; ++j) {
    const std::size_t level = j * kLevels / size;
    level_sum[level] += bins[j];
    level_filled[level] += bins[j] != 0.0 ? 1 : 0;
  }
  for (std::size_t j = 0; j < size; ++j) {
    const std::size_t level = j * kLevels / size;
    q[j] = bins[j] != 0.0 ? level_sum[level] / level_filled[level] : 0.0;
  }
  if (!smooth(p, size) || !smooth(q, size)) return std::numeric_limits<double>::infinity();
  return divergence(p, q, size);
}

// Between kMinAmax and the largest |x| seen.
float bounded(const AbsHistogram& histogram, double amax) {
  return std::max(kMinAmax, std::min(static_cast<float>(amax), histogram.max_abs()));
}

}  // namespace

bool has_non_finite(std::span<const float> values) {
  return std::any_of(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
}

void AbsHistogram::add(std::span<const float> values) {
  float batch_max = 0.0f;
  for (float v : values) batch_max = std::max(batch_max, std::fabs(v));
  grow_to(batch_max);
  max_abs_ = std::max(max_abs_, batch_max);
  count_ += static_cast<std::int64_t>(values.size());
  if (range_ == 0.0f) {  // zeros only, so far
    bins_[0] += static_cast<std::int64_t>(values.size());
    return;
  }
  // In double: kBins / range stays finite for the smallest ranges, and scaling it by a power of two
  // (a doubling) is exact, which keeps merged bins equal to bins counted at the wider range.
  const double scale = kBins / static_cast<double>(range_);
  for (float v : values) {
    const auto bin = static_cast<std::size_t>(static_cast<double>(std::fabs(v)) * scale);
    ++bins_[std::min<std::size_t>(bin, kBins - 1)];
  }
}

void AbsHistogram::grow_to(float largest) {
  if (largest == 0.0f) return;
  if (range_ == 0.0f) {
    // Just above the max, so that every value lies below the range: bins are half-open, and the
    // max's bin after a doubling is the one the wider range would have put it in.
    range_ = std::nextafter(largest, std::numeric_limits<float>::infinity());
    return;
  }
  while (range_ <= largest) {
    for (int i = 0; i < kBins / 2; ++i) bins_[i] = bins_[2 * i] + bins_[2 * i + 1];
    std::fill(bins_.begin() + kBins / 2, bins_.end(), 0);
    range_ *= 2.0f;
  }
}

float minmax_amax(const AbsHistogram& histogram) {
  return bounded(histogram, histogram.max_abs());
}

float percentile_amax(const AbsHistogram& histogram, double percentile) {
  const double target = percentile / 100.0 * static_cast<double>(histogram.count());
  double cumulative = 0.0;
  for (int i = 0; i < AbsHistogram::kBins; ++i) {
    cumulative += static_cast<double>(histogram.bins()[static_cast<std::size_t>(i)]);
    if (cumulative >= target) return bounded(histogram, (i + 1) * histogram.bin_width());
  }
  return minmax_amax(histogram);
}

float entropy_amax(const AbsHistogram& histogram) {
  if (histogram.range() == 0.0f) return kMinAmax;
  std::vector<double> bins(histogram.bins().begin(), histogram.bins().end());
  bins[0] = bins[1];
  // beyond[i]: the count in bins i and up, the values a threshold of i bins clips.
  std::vector<double> beyond(bins.size() + 1, 0.0);
  for (std::size_t i = bins.size(); i-- > 0;) beyond[i] = beyond[i + 1] + bins[i];
  std::vector<double> p(bins.size());
  std::vector<double> q(bins.size());
  double least = std::numeric_limits<double>::infinity();
  std::size_t best = bins.size();
  for (std::size_t size = kLevels; size <= bins.size(); ++size) {
    const double kl = threshold_divergence(bins, size, beyond[size], p, q);
    if (kl <= least) {
      least = kl;
      best = size;
    }
  }
  return bounded(histogram, static_cast<double>(best) * histogram.bin_width());
}

float method_amax(const AbsHistogram& histogram, CalibrationMethod method, double percentile) {
  switch (method) {
    case CalibrationMethod::kMinMax: return minmax_amax(histogram);
    case CalibrationMethod::kPercentile: return percentile_amax(histogram, percentile);
    case CalibrationMethod::kEntropy: return entropy_amax(histogram);
  }
  return minmax_amax(histogram);
}

Result<std::unique_ptr<Calibrator>> Calibrator::create(const Graph& graph, Device device) {
  Graph observed = graph;
  std::set<ValueId> outputs(graph.outputs.begin(), graph.outputs.end());
  for (const Node& node : graph.nodes) {
    for (ValueId id : node.outputs) {
      if (id == kNoValue || graph.is_constant(id) || graph.value(id).type.dtype != DataType::kFloat32)
        continue;
      if (outputs.insert(id).second) observed.outputs.push_back(id);
    }
  }
  std::unique_ptr<Calibrator> calibrator(new Calibrator(std::move(observed), device));
#if defined(FOVEA_HAVE_CUDA)
  if (device == Device::kCuda) {
    FOVEA_ASSIGN_OR_RETURN(calibrator->stream_, CudaStream::create());
  }
#endif
  return calibrator;
}

Status Calibrator::open_session(const std::vector<Tensor>& inputs) {
  if (inputs.size() != observed_.inputs.size()) {
    return make_error(StatusCode::kInvalidArgument, observed_.where(),
                      fmt::format("calibration: {} inputs given, the model takes {}", inputs.size(),
                                  observed_.inputs.size()));
  }
  InputShapes shapes;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    shapes[observed_.value(observed_.inputs[i]).name] = inputs[i].shape();
  if (session_ && shapes == shapes_) return Status::ok();
  session_.reset();  // the old plan's memory goes before the new one's comes
  const SessionOptions options{.device = device_, .precision = Precision::kFloat32};
  FOVEA_ASSIGN_OR_RETURN(session_, InferenceSession::create(observed_, shapes, options));
  shapes_ = std::move(shapes);
  return Status::ok();
}

Result<std::vector<std::pair<std::string, const Tensor*>>> Calibrator::finite_activations(
    const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) const {
  std::vector<std::pair<std::string, const Tensor*>> activations;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    activations.emplace_back(observed_.value(observed_.inputs[i]).name, &inputs[i]);
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    activations.emplace_back(session_->output_spec(static_cast<int>(i)).name, &outputs[i]);
  }
  std::erase_if(activations, [](const auto& entry) { return entry.second->dtype() != DataType::kFloat32; });
  // One tensor per task: each is scanned on its own (a large model's activations are gigabytes).
  std::vector<char> non_finite(activations.size(), 0);
  parallel_for(static_cast<std::int64_t>(activations.size()), 1, [&](std::int64_t begin, std::int64_t end) {
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i) {
      non_finite[i] = has_non_finite(float_values(*activations[i].second)) ? 1 : 0;
    }
  });
  const auto first = std::find(non_finite.begin(), non_finite.end(), 1);
  if (first != non_finite.end()) {
    return make_error(StatusCode::kCorruptData, observed_.where(), "calibration: tensor '",
                      activations[static_cast<std::size_t>(first - non_finite.begin())].first,
                      fmt::format("' holds NaN or infinity in the batch after the first {} samples; the "
                                  "inputs or the model give numbers 8 bits cannot hold",
                                  samples_));
  }
  return activations;
}

Status Calibrator::add_batch(const std::vector<Tensor>& inputs) {
  FOVEA_TRY(open_session(inputs));
  cudaStream_t stream = nullptr;  // the CPU's
#if defined(FOVEA_HAVE_CUDA)
  stream = stream_.get();
#endif
  FOVEA_ASSIGN_OR_RETURN(const std::vector<Tensor> outputs, session_->run_host(stream, inputs));
  // Checked whole before any is folded, so a refused batch leaves every histogram as it was.
  FOVEA_ASSIGN_OR_RETURN(const auto activations, finite_activations(inputs, outputs));
  std::vector<AbsHistogram*> histograms;
  for (const auto& [tensor_name, tensor] : activations) {
    auto it = histograms_.find(tensor_name);
    if (it == histograms_.end()) it = histograms_.emplace(tensor_name, AbsHistogram()).first;
    histograms.push_back(&it->second);
  }
  // Each histogram is its own: they are folded in parallel, one tensor per task.
  parallel_for(static_cast<std::int64_t>(activations.size()), 1, [&](std::int64_t begin, std::int64_t end) {
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i) {
      histograms[i]->add(float_values(*activations[i].second));
    }
  });
  samples_ += inputs.empty() || inputs[0].rank() == 0 ? 1 : static_cast<int>(inputs[0].dim(0));
  return Status::ok();
}

double quantization_sqnr_db(const AbsHistogram& histogram, float amax) {
  const double width = histogram.bin_width();
  const double step = static_cast<double>(amax) / kInt8Max;
  const double rounding = step * step / 12.0;
  double signal = 0.0, noise = 0.0;
  const std::vector<std::int64_t>& bins = histogram.bins();
  for (std::size_t i = 0; i < bins.size(); ++i) {
    if (bins[i] == 0) continue;
    const double x = (static_cast<double>(i) + 0.5) * width;
    double error = rounding;
    if (x > amax) {
      error = (x - amax) * (x - amax);
    } else if (x < step / 2.0) {
      error = x * x;  // rounds to zero
    }
    signal += static_cast<double>(bins[i]) * x * x;
    noise += static_cast<double>(bins[i]) * error;
  }
  if (noise <= 0.0 || signal <= 0.0) return kNoiselessSqnrDb;
  return std::min(kNoiselessSqnrDb, 10.0 * std::log10(signal / noise));
}

Result<CalibrationTable> Calibrator::finish(CalibrationMethod method, double percentile,
                                            double min_sqnr_db) const {
  if (samples_ == 0) {
    return make_error(StatusCode::kInvalidArgument, observed_.where(), "calibration: no samples were given");
  }
  if (!(percentile > 0.0 && percentile <= 100.0)) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("calibration: percentile {} is not in (0, 100]", percentile));
  }
  // The entropy search costs milliseconds per tensor: one tensor per task.
  std::vector<std::pair<const std::string*, const AbsHistogram*>> tensors;
  for (const auto& [tensor_name, histogram] : histograms_) tensors.emplace_back(&tensor_name, &histogram);
  std::vector<float> amax(tensors.size());
  parallel_for(static_cast<std::int64_t>(tensors.size()), 1, [&](std::int64_t begin, std::int64_t end) {
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i) {
      amax[i] = method_amax(*tensors[i].second, method, percentile);
    }
  });
  CalibrationTable table{.method = method, .samples = samples_};
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const double sqnr = quantization_sqnr_db(*tensors[i].second, amax[i]);
    table.tensors[*tensors[i].first] =
        TensorRange{.amax = amax[i], .sqnr_db = static_cast<float>(sqnr), .keep_float = sqnr < min_sqnr_db};
  }
  return table;
}

}  // namespace fovea::runtime::quant
