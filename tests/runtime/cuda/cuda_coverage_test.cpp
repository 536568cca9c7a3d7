// Every op the CPU executor registers runs on CUDA too, and has a differential test suite named
// Cuda<OpType> (Cudafovea_FusedConv for the fovea domain) in this executable. Needs no GPU: it
// reads the registries and the test list.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "runtime/cuda/cuda_op.h"
#include "runtime/op.h"

namespace fovea::runtime::testing {
namespace {

std::string qualified(const OpDef& def) {
  return def.domain.empty() ? std::string(def.op_type)
                            : std::string(def.domain) + "_" + std::string(def.op_type);
}

TEST(CudaCoverage, EveryRegisteredOpHasACudaKernelAndATestSuite) {
  std::set<std::string> suites;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) suites.insert(unit.GetTestSuite(i)->name());
  for (const OpDef* def : registered_ops()) {
    EXPECT_NE(cuda::find_cuda_op(def->domain, def->op_type), nullptr)
        << qualified(*def) << " has no CUDA kernel";
    EXPECT_TRUE(suites.count("Cuda" + qualified(*def)))
        << qualified(*def) << " has no test suite Cuda" << qualified(*def);
  }
}

TEST(CudaCoverage, EveryCudaKernelBelongsToARegisteredOp) {
  for (const cuda::CudaOpDef* def : cuda::registered_cuda_ops()) {
    EXPECT_NE(find_op(def->domain, def->op_type), nullptr)
        << def->op_type << " has a CUDA kernel but no OpDef";
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
