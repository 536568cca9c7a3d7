#include "pipeline/stage.h"

#include "core/log.h"

namespace fovea::pipeline {

Stage::~Stage() {
  join();
}

void Stage::join() {
  if (thread_.joinable()) {
    thread_.join();
  }
}

Status Stage::status() const {
  std::lock_guard lock(status_mutex_);
  return status_;
}

void Stage::start_thread(std::function<Result<StepOutcome>()> step, std::function<void()> close_queues) {
  FOVEA_CHECK_MSG(!thread_.joinable(), "a stage is started once");
  thread_ = std::thread(
      [this, step = std::move(step), close_queues = std::move(close_queues)] { run(step, close_queues); });
}

void Stage::run(const std::function<Result<StepOutcome>()>& step, const std::function<void()>& close_queues) {
  for (;;) {
    Result<StepOutcome> outcome = step();
    if (!outcome.is_ok()) {
      const Status error = outcome.status().with_context("stage " + name_);
      log_error("{}", error.to_string());
      std::lock_guard lock(status_mutex_);
      status_ = error;
      break;
    }
    if (*outcome == StepOutcome::kEnd) {
      break;
    }
  }
  close_queues();
}

}  // namespace fovea::pipeline
