// split_graph (graph_split.h): the prefix takes what the predicate accepts up to the first node it
// refuses and everything that does not depend on that node; the two halves run one after the
// other give the whole graph's results.
#include <gtest/gtest.h>

#include "runtime/graph_split.h"
#include "runtime/graph_test_util.h"
#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

// x -> Relu (r) -> NonZero -> Transpose (coords); r + r (doubled); x * min(coords' rows, 2) (scaled:
// the tail reads the graph's input directly).
Graph relu_nonzero_graph() {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {3, 4});
  m.output("doubled", DataType::kFloat32, {3, 4}).output("coords", DataType::kInt64, {-1, 2});
  m.output("scaled", DataType::kFloat32, {-1, 4});
  m.node("Relu", {"x"}, {"r"});
  m.node("Add", {"r", "r"}, {"doubled"});
  m.node("NonZero", {"r"}, {"nz"});
  m.node("Transpose", {"nz"}, {"coords"});
  m.initializer("zero", int64_tensor({1}, {0}));
  m.initializer("two", int64_tensor({1}, {2}));
  m.node("Shape", {"coords"}, {"coords_shape"});
  m.node("Slice", {"coords_shape", "zero", "two"}, {"rows_and_two"});
  m.node("ReduceMin", {"rows_and_two"}, {"rows_or_two"});
  m.attr(m.node("Cast", {"rows_or_two"}, {"factor_float"}), "to", std::int64_t{1});
  m.node("Mul", {"x", "factor_float"}, {"scaled"});
  return load_graph(m);
}

std::vector<std::string> op_types(const Graph& graph) {
  std::vector<std::string> types;
  for (const Node& node : graph.nodes) types.push_back(node.op_type);
  return types;
}

const Tensor* output_named(const Graph& graph, const std::vector<Tensor>& outputs, const std::string& name) {
  for (std::size_t i = 0; i < graph.outputs.size(); ++i) {
    if (graph.value(graph.outputs[i]).name == name) return &outputs[i];
  }
  return nullptr;
}

TEST(GraphSplit, TheTailStartsAtTheFirstRefusedNodeAndTheHalvesGiveTheWholeResult) {
  const Graph graph = relu_nonzero_graph();
  const Tensor x = float_tensor({3, 4}, {1, -2, 0, 4, -5, 6, 7, -8, 0, 0, 3, -1});
  const std::vector<Tensor> whole = run_planned(graph, {x});

  const GraphSplit split = split_graph(graph, [](const Node& node) { return node.op_type != "NonZero"; });
  ASSERT_TRUE(split.splits());
  EXPECT_NE(split.first_tail_node.find("(NonZero)"), std::string::npos) << split.first_tail_node;
  EXPECT_EQ(op_types(split.prefix), (std::vector<std::string>{"Relu", "Add"}));
  EXPECT_EQ(split.boundary, (std::vector<std::string>{"r"}));
  ASSERT_EQ(split.tail.inputs.size(), 2u);  // the boundary, then the graph input the tail reads
  EXPECT_EQ(split.tail.value(split.tail.inputs[0]).name, "r");
  EXPECT_EQ(split.tail.value(split.tail.inputs[1]).name, "x");

  const std::vector<Tensor> prefix = run_planned(split.prefix, {x});
  const Tensor* r = output_named(split.prefix, prefix, "r");
  ASSERT_NE(r, nullptr);
  const std::vector<Tensor> tail = run_planned(split.tail, {*r, x});
  for (const char* name : {"doubled", "coords", "scaled"}) {
    SCOPED_TRACE(name);
    const Tensor* expected = output_named(graph, whole, name);
    const Tensor* got = output_named(split.prefix, prefix, name);
    if (got == nullptr) got = output_named(split.tail, tail, name);
    ASSERT_NE(got, nullptr);
    EXPECT_TRUE(tensors_near(*got, *expected));
  }
}

TEST(GraphSplit, APredicateThatTakesEverythingLeavesNoTail) {
  const Graph graph = relu_nonzero_graph();
  const GraphSplit split = split_graph(graph, [](const Node&) { return true; });
  EXPECT_FALSE(split.splits());
  EXPECT_TRUE(split.boundary.empty());
  EXPECT_EQ(split.prefix.nodes.size(), graph.nodes.size());
  EXPECT_EQ(split.prefix.outputs.size(), graph.outputs.size());
}

}  // namespace
}  // namespace fovea::runtime::testing
