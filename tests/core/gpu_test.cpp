// The CUDA driver's work queues: widened before the first CUDA call unless the user chose a count.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "core/gpu.h"

namespace fovea {
namespace {

constexpr const char* kVariable = "CUDA_DEVICE_MAX_CONNECTIONS";

// Puts the variable back as the test found it.
class SavedVariable {
 public:
  SavedVariable() {
    if (const char* value = std::getenv(kVariable)) saved_ = value;
  }
  ~SavedVariable() {
    if (saved_) {
      setenv(kVariable, saved_->c_str(), 1);
    } else {
      unsetenv(kVariable);
    }
  }
  SavedVariable(const SavedVariable&) = delete;
  SavedVariable& operator=(const SavedVariable&) = delete;

 private:
  std::optional<std::string> saved_;
};

TEST(CudaWorkQueues, AreWidenedUnlessTheEnvironmentSays) {
  const SavedVariable saved;
  unsetenv(kVariable);
  EXPECT_EQ(widen_cuda_work_queues(), kCudaWorkQueues);
  EXPECT_EQ(std::string(std::getenv(kVariable)), std::to_string(kCudaWorkQueues));
  setenv(kVariable, "4", 1);
  EXPECT_EQ(widen_cuda_work_queues(), 4);
  EXPECT_EQ(std::string(std::getenv(kVariable)), "4");
}

}  // namespace
}  // namespace fovea
