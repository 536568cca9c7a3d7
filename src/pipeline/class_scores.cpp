#include "pipeline/class_scores.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/half.h"
#include "post/label_file.h"

namespace fovea::pipeline {

Result<ClassifierHead> plan_classifier_head(const FlowModel& model, std::string_view role) {
  const runtime::InferenceSession& session = *model.session;
  const std::string& path = model.config.path;
  const runtime::TensorSpec& output = session.output_spec(0);
  const runtime::Shape shape = output.shape.value_or(runtime::Shape{});
  if (session.output_count() != 1 || output.rows_vary || shape.size() != 2 || shape[1] < 1) {
    return make_error(
        StatusCode::kInvalidArgument, path,
        fmt::format(
            ": {}: output '{}' is [{}]{}; a classifier gives one output [N, C]", role, output.name,
            fmt::join(shape, ", "),
            session.output_count() != 1 ? fmt::format(" (of {} outputs)", session.output_count()) : ""));
  }
  ClassifierHead head{.classes = static_cast<int>(shape[1]), .dtype = output.dtype};
  if (model.config.labels) {
    FOVEA_ASSIGN_OR_RETURN(head.labels, post::read_label_file(*model.config.labels));
    FOVEA_TRY(post::check_label_count(head.labels.size(), head.classes, *model.config.labels, path));
  }
  return head;
}

std::vector<ClassLabel> top_classes(const void* logits, DataType dtype, std::size_t row,
                                    const ClassifierHead& head, int top_k, float min_score) {
  const auto classes = static_cast<std::size_t>(head.classes);
  const std::size_t first = row * classes;
  std::vector<float> p(classes);
  for (std::size_t c = 0; c < classes; ++c) {
    p[c] = dtype == DataType::kFloat16 ? half_to_float(static_cast<const Half*>(logits)[first + c])
                                       : static_cast<const float*>(logits)[first + c];
  }
  const float top = *std::max_element(p.begin(), p.end());
  float sum = 0.0f;
  for (float& v : p) sum += v = std::exp(v - top);
  std::vector<int> order(classes);
  for (std::size_t c = 0; c < classes; ++c) order[c] = static_cast<int>(c);
  const std::size_t k = std::min(classes, static_cast<std::size_t>(std::max(top_k, 0)));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  std::vector<ClassLabel> labels;
  for (std::size_t i = 0; i < k; ++i) {
    const auto c = static_cast<std::size_t>(order[i]);
    const float score = p[c] / sum;
    if (score < min_score) break;  // the rest score lower still
    labels.push_back({.class_id = order[i],
                      .label = c < head.labels.size() ? head.labels[c] : std::string(),
                      .score = score});
  }
  return labels;
}

}  // namespace fovea::pipeline
