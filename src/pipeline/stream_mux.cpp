#include "pipeline/stream_mux.h"

#include <string>

namespace fovea::pipeline {

Status validate(const MuxOptions& options) {
  if (options.batch_size == 0) {
    return make_error(StatusCode::kInvalidArgument, "mux.batch_size must be at least 1 (got 0)");
  }
  if (options.push_timeout_us < -1) {
    return make_error(
        StatusCode::kInvalidArgument,
        "mux.push_timeout_us must be -1 (wait for a full batch) or a number of microseconds >= 0 (got ",
        std::to_string(options.push_timeout_us), ")");
  }
  if (options.max_frames_per_source_per_batch == 0u) {
    return make_error(
        StatusCode::kInvalidArgument,
        "mux.max_frames_per_source_per_batch must be at least 1 (got 0; leave it out for no cap)");
  }
  if (options.source_queue_capacity == 0) {
    return make_error(StatusCode::kInvalidArgument, "mux.source_queue_capacity must be at least 1 (got 0)");
  }
  return Status::ok();
}

}  // namespace fovea::pipeline
