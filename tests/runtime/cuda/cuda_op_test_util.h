// Differential tests of CUDA ops against the CPU reference: the same node on the same inputs, run
// by the CPU kernel and by the CUDA kernel, compared within the tolerance of cuda_tolerances.h.
//
//   TEST(CudaRelu, MatchesCpu) {
//     FOVEA_REQUIRE_GPU();
//     for (Precision p : {Precision::kFloat32, Precision::kFloat16})
//       EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Relu").build(), {random_tensor(kF32, {5, 3, 13, 17}, 1)},
//                                    {.precision = p}));
//   }
#pragma once

#include <vector>

#include <gtest/gtest.h>

#include "runtime/cuda/cuda_tolerances.h"
#include "runtime/op_test_util.h"
#include "runtime/planner.h"

namespace fovea::runtime::testing {

// True when a CUDA device is present; GPU tests call FOVEA_REQUIRE_GPU() first.
bool have_cuda_device();
#define FOVEA_REQUIRE_GPU()                                                               \
  do {                                                                                    \
    if (!::fovea::runtime::testing::have_cuda_device()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

struct CudaCheck {
  // kFloat16: float32 inputs are rounded to float16 (except those in keep_float32_inputs) and the
  // CUDA kernel runs on them; the CPU reference runs in float32 on the same rounded values.
  Precision precision = Precision::kFloat32;
  // Inputs the executor would hold as plan-time constants (shape, axes, scales, pads...): their
  // host values reach the kernel through host_constant(), as in a real plan.
  std::vector<int> constant_inputs;
  // Float inputs ONNX types as float32 whatever T is (Resize's scales).
  std::vector<int> keep_float32_inputs;
  Accuracy accuracy = Accuracy::kPointwise;
};

// Every CUDA op is checked in both precisions.
inline constexpr Precision kPrecisions[] = {Precision::kFloat32, Precision::kFloat16};

// The check for ops that sum over many terms (Conv, Gemm, reductions) in precision `p`.
inline CudaCheck accumulating(Precision p) {
  return CudaCheck{.precision = p, .accuracy = Accuracy::kAccumulating};
}

// float16 tensors as float32 (others unchanged), and float32 ones rounded to float16.
Tensor to_float32(const Tensor& t);
Tensor to_float16(const Tensor& t);

// Runs `node` through its CUDA kernel (prepare() and run() as the executor calls them) on host
// inputs, returning host outputs (a data-dependent output holds the rows the op says it filled,
// planned at its bound_output() as in the executor). Fails the test on an error.
std::vector<Tensor> run_cuda_node(const Node& node, const std::vector<Tensor>& inputs,
                                  const std::vector<int>& constant_inputs = {});
// The Status of the same, for tests of rejected input.
Status run_cuda_node_status(const Node& node, const std::vector<Tensor>& inputs,
                            const std::vector<int>& constant_inputs = {});

// `cuda_out` (any float dtype) agrees with `cpu_out` within `tolerance`; integer and bool outputs
// exactly. Reports the worst element of output number `output`.
::testing::AssertionResult outputs_within(const Tensor& cuda_out, const Tensor& cpu_out, Tolerance tolerance,
                                          int output = 0);

// CPU and CUDA agree on every output within cuda_tolerance(check.precision, check.accuracy);
// integer and bool outputs exactly. Reports the worst element.
::testing::AssertionResult cuda_matches_cpu(const Node& node, const std::vector<Tensor>& inputs,
                                            const CudaCheck& check = {});

}  // namespace fovea::runtime::testing
