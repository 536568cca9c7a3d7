// Einsum (ops/einsum.cpp) on the forms exported models use, each against a result computed by
// hand, plus the equations it must reject.
#include <cstdint>

#include "runtime/op_test_util.h"
#include "runtime/ops/elementwise_test_util.h"

namespace fovea::runtime::testing {
namespace {

Tensor einsum(const std::string& equation, const std::vector<Tensor>& inputs) {
  return run_node(
      NodeBuilder("Einsum", 12).inputs(static_cast<int>(inputs.size())).attr("equation", equation).build(),
      inputs)[0];
}

const Tensor kA = float_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
const Tensor kB = float_tensor({3, 2}, {1, 0, 0, 1, 1, 1});

TEST(OpEinsum, ContractsMatmulExplicitAndImplicit) {
  const Tensor product = float_tensor({2, 2}, {4, 5, 10, 11});
  EXPECT_TRUE(tensors_near(einsum("ij,jk->ik", {kA, kB}), product));
  EXPECT_TRUE(tensors_near(einsum("ij, jk", {kA, kB}), product));  // spaces; output i, k alphabetically
  // The implicit output sorts its labels: "ba" gives "ab", the transpose.
  EXPECT_TRUE(tensors_near(einsum("ba", {kA}), float_tensor({3, 2}, {1, 4, 2, 5, 3, 6})));
}

TEST(OpEinsum, TransposesReducesAndTakesInnerProducts) {
  EXPECT_TRUE(tensors_near(einsum("ij->ji", {kA}), float_tensor({3, 2}, {1, 4, 2, 5, 3, 6})));
  EXPECT_TRUE(tensors_near(einsum("ij->i", {kA}), float_tensor({2}, {6, 15})));
  EXPECT_TRUE(tensors_near(einsum("ij->", {kA}), float_tensor({}, {21})));
  EXPECT_TRUE(tensors_near(einsum("i,i", {float_tensor({3}, {1, 2, 3}), float_tensor({3}, {4, 5, 6})}),
                           float_tensor({}, {32})));
}

TEST(OpEinsum, BatchesAndWalksDiagonals) {
  const Tensor batch = float_tensor({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_TRUE(tensors_near(einsum("...ii->...i", {batch}), float_tensor({2, 2}, {1, 4, 5, 8})));
  EXPECT_TRUE(tensors_near(einsum("ii", {float_tensor({2, 2}, {1, 2, 3, 4})}), float_tensor({}, {5})));
  EXPECT_TRUE(tensors_near(einsum("bij,bjk->bik", {batch, batch}),
                           float_tensor({2, 2, 2}, {7, 10, 15, 22, 67, 78, 91, 106})));
  // Ellipses of different ranks broadcast from the right, size 1 against 2.
  EXPECT_TRUE(tensors_near(einsum("...j,...j->...", {batch, float_tensor({2, 1, 2}, {1, 1, 0, 1})}),
                           float_tensor({2, 2}, {3, 7, 6, 8})));
}

TEST(OpEinsum, RejectsMismatchedEquations) {
  const Node node = NodeBuilder("Einsum", 12).inputs(2).attr("equation", "i,i").build();
  EXPECT_TRUE(fails_with(run_node_status(node, {float_tensor({2}, {1, 2}), float_tensor({3}, {1, 2, 3})}),
                         StatusCode::kInvalidArgument, "sizes 2 and 3"));
  const Node three = NodeBuilder("Einsum", 12).inputs(1).attr("equation", "ij,jk").build();
  EXPECT_TRUE(fails_with(run_node_status(three, {kA}), StatusCode::kInvalidArgument, "2 input terms for 1"));
  const Node rank = NodeBuilder("Einsum", 12).inputs(1).attr("equation", "ijk->i").build();
  EXPECT_TRUE(fails_with(run_node_status(rank, {kA}), StatusCode::kInvalidArgument, "does not fit"));
  const Node output = NodeBuilder("Einsum", 12).inputs(1).attr("equation", "ij->iz").build();
  EXPECT_TRUE(fails_with(run_node_status(output, {kA}), StatusCode::kInvalidArgument, "output label"));
}

}  // namespace
}  // namespace fovea::runtime::testing
