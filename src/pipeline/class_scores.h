// A classifier's head as the classify stage (objects) and the classify_frames stage (whole frames)
// both read it: one output [N, C] of logits, a softmax over each row, and its top k classes named
// from the model's label file.
//
// The softmax is shifted by the row's largest logit, so exp never overflows; the classes are ranked
// by probability, equal ones by the lower class index.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/image.h"
#include "core/status.h"
#include "pipeline/frame_batch.h"
#include "pipeline/model_ops.h"

namespace fovea::pipeline {

struct ClassifierHead {
  int classes = 0;                      // the output's C
  std::vector<std::string> labels;      // from model.labels; empty without a label file
  DataType dtype = DataType::kFloat32;  // the output's: float16 on the GPU in fp16
};

// Refuses a model whose outputs are not one [N, C] before the run, naming the model file, `role`
// ("secondary model 'color'", "classify_frames") and the output's shape; reads and checks the label
// file.
Result<ClassifierHead> plan_classifier_head(const FlowModel& model, std::string_view role);

// The `top_k` most likely classes of row `row` of `logits` (rows of head.classes values of
// `dtype`, host memory), best first, leaving out those whose probability is below `min_score`.
std::vector<ClassLabel> top_classes(const void* logits, DataType dtype, std::size_t row,
                                    const ClassifierHead& head, int top_k, float min_score);

}  // namespace fovea::pipeline
