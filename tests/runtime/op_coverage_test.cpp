// Every registered op must have a test suite named Op<OpType> (OpConv, OpRelu, ...) in this
// executable: registering an op without a test fails here.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "runtime/op.h"

namespace fovea::runtime {
namespace {

TEST(OpCoverage, EveryRegisteredOpHasATestSuite) {
  std::set<std::string> suites;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    suites.insert(unit.GetTestSuite(i)->name());
  }
  for (const OpDef* def : registered_ops()) {
    const std::string prefix = def->domain.empty() ? "" : std::string(def->domain) + "_";
    const std::string suite = "Op" + prefix + std::string(def->op_type);
    EXPECT_TRUE(suites.count(suite)) << "op " << def->op_type << " has no test suite " << suite;
  }
}

}  // namespace
}  // namespace fovea::runtime
