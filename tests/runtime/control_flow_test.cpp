// If and Loop (control_flow.h): a condition known at load or when planned inlines the branch it
// picks, and the result is the branch's; an If on a condition only the run knows, and a Loop, run
// their subgraphs on the CPU executor. Each test writes its model, subgraphs included, through
// onnx.proto.
#include <gtest/gtest.h>

#include "onnx.pb.h"
#include "runtime/graph_test_util.h"
#include "runtime/op_test_util.h"
#include "runtime/planner.h"

namespace fovea::runtime::testing {
namespace {

onnx::GraphProto& add_branch(onnx::NodeProto& node, const std::string& key) {
  onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name(key);
  attribute->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& graph = *attribute->mutable_g();
  graph.set_name(key);
  return graph;
}

onnx::NodeProto& add_node(onnx::GraphProto& graph, const std::string& op_type,
                          const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  onnx::NodeProto& node = *graph.add_node();
  node.set_op_type(op_type);
  node.set_name(outputs.front() + "_node");
  for (const std::string& in : inputs) node.add_input(in);
  for (const std::string& out : outputs) node.add_output(out);
  return node;
}

// A branch output, typed float32 of unknown shape, or left untyped as ONNX allows in subgraphs.
void add_output(onnx::GraphProto& graph, const std::string& name, bool typed = true) {
  onnx::ValueInfoProto& output = *graph.add_output();
  output.set_name(name);
  if (typed) output.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
}

void add_float_initializer(onnx::GraphProto& graph, const std::string& name,
                           const std::vector<float>& values) {
  onnx::TensorProto& tensor = *graph.add_initializer();
  tensor.set_name(name);
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  tensor.add_dims(static_cast<std::int64_t>(values.size()));
  for (const float v : values) tensor.add_float_data(v);
}

Tensor bool_scalar(bool value) {
  return Tensor::from_vector<std::uint8_t>(DataType::kBool, {}, {static_cast<std::uint8_t>(value)});
}

const Tensor kX = float_tensor({2, 3}, {1, -2, 3, -4, 5, -6});

// y = If(cond) then x + [1, 2, 3] (the branch's own initializer) else -x.
void add_plus_or_minus(ModelBuilder& m, const std::string& cond) {
  onnx::NodeProto& node = m.node("If", {cond}, {"y"}, "choose");
  onnx::GraphProto& then_branch = add_branch(node, "then_branch");
  add_float_initializer(then_branch, "offsets", {1, 2, 3});
  add_node(then_branch, "Add", {"x", "offsets"}, {"x_plus"});
  add_output(then_branch, "x_plus");
  onnx::GraphProto& else_branch = add_branch(node, "else_branch");
  add_node(else_branch, "Neg", {"x"}, {"x_minus"});
  add_output(else_branch, "x_minus", /*typed=*/false);
}

Tensor expected_plus_or_minus(bool taken) {
  return taken ? float_tensor({2, 3}, {2, 0, 6, -3, 7, -3}) : float_tensor({2, 3}, {-1, 2, -3, 4, -5, 6});
}

TEST(ControlFlow, AnIfOnAConstantIsInlinedAtLoad) {
  for (const bool taken : {true, false}) {
    SCOPED_TRACE(taken);
    ModelBuilder m;
    m.input("x", DataType::kFloat32, {2, 3}).output("y", DataType::kFloat32, {2, 3});
    m.initializer("cond", bool_scalar(taken));
    add_plus_or_minus(m, "cond");
    const Graph graph = load_graph(m);
    EXPECT_EQ(count_ops(graph, "If"), 0);
    EXPECT_EQ(count_ops(graph, taken ? "Add" : "Neg"), 1);
    EXPECT_EQ(count_ops(graph, taken ? "Neg" : "Add"), 0);
    const auto y = run_planned(graph, {kX});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_TRUE(tensors_near(y[0], expected_plus_or_minus(taken)));
  }
}

// An exporter's usual If: on a dimension of an input, which the shapes bound at planning decide.
TEST(ControlFlow, AnIfOnAShapeIsInlinedWhenPlanned) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {-1, 3}).output("y", DataType::kFloat32, {-1, 3});
  m.initializer("zero", int64_tensor({}, {0}));
  m.initializer("two", int64_tensor({}, {2}));
  m.node("Shape", {"x"}, {"shape"});
  m.node("Gather", {"shape", "zero"}, {"rows"});
  m.node("Equal", {"rows", "two"}, {"two_rows"});
  add_plus_or_minus(m, "two_rows");
  const Graph graph = load_graph(m);
  EXPECT_EQ(count_ops(graph, "If"), 1) << "the condition depends on the input's shape";
  const auto two_rows = run_planned(graph, {kX});
  ASSERT_EQ(two_rows.size(), 1u);
  EXPECT_TRUE(tensors_near(two_rows[0], expected_plus_or_minus(true)));
  const Tensor one_row = float_tensor({1, 3}, {1, -2, 3});
  const auto minus = run_planned(graph, {one_row});
  ASSERT_EQ(minus.size(), 1u);
  EXPECT_TRUE(tensors_near(minus[0], float_tensor({1, 3}, {-1, 2, -3})));
}

TEST(ControlFlow, AnIfOnARunTimeValueRunsTheBranchTheRunPicks) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3})
      .input("flag", DataType::kBool, {})
      .output("y", DataType::kFloat32, {2, 3});
  add_plus_or_minus(m, "flag");
  const Graph graph = load_graph(m);
  EXPECT_EQ(count_ops(graph, "If"), 1);
  for (const bool taken : {true, false}) {
    SCOPED_TRACE(taken);
    const std::vector<Tensor> inputs{kX, bool_scalar(taken)};
    const auto y = run_planned(graph, inputs);
    ASSERT_EQ(y.size(), 1u);
    EXPECT_TRUE(tensors_near(y[0], expected_plus_or_minus(taken)));
  }
}

// A subgraph input, typed or (as ONNX allows in subgraphs) left to what the run passes.
void add_input(onnx::GraphProto& graph, const std::string& name, onnx::TensorProto::DataType type,
               bool typed = true) {
  onnx::ValueInfoProto& input = *graph.add_input();
  input.set_name(name);
  if (typed) input.mutable_type()->mutable_tensor_type()->set_elem_type(type);
}

// acc, rows = Loop(trips, cond) over acc = acc + x, rows = 2 * acc each iteration; the body reads
// the model's x and passes its condition on.
void add_accumulating_loop(ModelBuilder& m, const std::string& trips, const std::string& cond,
                           bool typed_body_inputs) {
  onnx::NodeProto& node = m.node("Loop", {trips, cond, "acc0"}, {"acc", "rows"}, "accumulate");
  onnx::GraphProto& body = add_branch(node, "body");
  add_input(body, "i", onnx::TensorProto::INT64, typed_body_inputs);
  add_input(body, "cond_in", onnx::TensorProto::BOOL, typed_body_inputs);
  add_input(body, "acc_in", onnx::TensorProto::FLOAT, typed_body_inputs);
  add_float_initializer(body, "two", {2});
  add_node(body, "Identity", {"cond_in"}, {"cond_out"});
  add_node(body, "Add", {"acc_in", "x"}, {"acc_out"});
  add_node(body, "Mul", {"acc_out", "two"}, {"row"});
  onnx::ValueInfoProto& cond_out = *body.add_output();
  cond_out.set_name("cond_out");
  cond_out.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  add_output(body, "acc_out");
  onnx::ValueInfoProto& row = *body.add_output();
  row.set_name("row");
  row.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  row.mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
}

TEST(ControlFlow, ALoopCarriesValuesAndStacksItsScanOutputs) {
  for (const bool typed : {true, false}) {
    SCOPED_TRACE(typed);
    ModelBuilder m;
    m.input("x", DataType::kFloat32, {3}).input("trips", DataType::kInt64, {});
    m.output("acc", DataType::kFloat32, {3}).output("rows", DataType::kFloat32, {-1, 3});
    m.initializer("yes", bool_scalar(true));
    m.initializer("acc0", float_tensor({3}, {100, 200, 300}));
    add_accumulating_loop(m, "trips", "yes", typed);
    const Graph graph = load_graph(m);
    EXPECT_EQ(count_ops(graph, "Loop"), 1);
    const Tensor x = float_tensor({3}, {1, 2, 3});
    const auto three = run_planned(graph, {x, int64_tensor({}, {3})});
    ASSERT_EQ(three.size(), 2u);
    EXPECT_TRUE(tensors_near(three[0], float_tensor({3}, {103, 206, 309})));
    EXPECT_TRUE(tensors_near(three[1], float_tensor({3, 3}, {202, 404, 606, 204, 408, 612, 206, 412, 618})));
    // No iteration: the initial value comes back (a copy), and an empty scan at the body's shape.
    const auto none = run_planned(graph, {x, int64_tensor({}, {0})});
    ASSERT_EQ(none.size(), 2u);
    EXPECT_TRUE(tensors_near(none[0], float_tensor({3}, {100, 200, 300})));
    EXPECT_EQ(none[1].shape(), (Shape{0, 3}));
  }
}

// No trip count: the body's condition ends it (i < limit, the limit an outer value), in an If's
// branch on a run-time flag, as torchvision's exports nest them.
TEST(ControlFlow, ALoopInsideARunTimeIfEndsOnItsBodysCondition) {
  ModelBuilder m;
  m.input("flag", DataType::kBool, {}).input("limit", DataType::kInt64, {});
  m.output("seen", DataType::kInt64, {-1});
  m.initializer("yes", bool_scalar(true));
  m.initializer("none", int64_tensor({1}, {-1}));
  onnx::NodeProto& choose = m.node("If", {"flag"}, {"seen"}, "choose");
  add_output(add_branch(choose, "else_branch"), "none");
  onnx::GraphProto& then_branch = add_branch(choose, "then_branch");
  onnx::NodeProto& loop = add_node(then_branch, "Loop", {"", "yes"}, {"iterations"});
  loop.set_name("count");
  onnx::GraphProto& body = add_branch(loop, "body");
  add_input(body, "i", onnx::TensorProto::INT64);
  add_input(body, "cond_in", onnx::TensorProto::BOOL);
  add_node(body, "Less", {"i", "limit"}, {"more"});
  add_node(body, "Identity", {"i"}, {"i_out"});
  add_output(body, "more", /*typed=*/false);
  onnx::ValueInfoProto& i_out = *body.add_output();
  i_out.set_name("i_out");
  i_out.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  add_output(then_branch, "iterations", /*typed=*/false);
  const Graph graph = load_graph(m);
  const auto looped = run_planned(graph, {bool_scalar(true), int64_tensor({}, {4})});
  ASSERT_EQ(looped.size(), 1u);
  EXPECT_EQ(looped[0].shape(), (Shape{5}));
  EXPECT_TRUE(tensors_near(looped[0], int64_tensor({5}, {0, 1, 2, 3, 4})));
  const auto skipped = run_planned(graph, {bool_scalar(false), int64_tensor({}, {4})});
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_TRUE(tensors_near(skipped[0], int64_tensor({1}, {-1})));
}

void add_int64_initializer(onnx::GraphProto& graph, const std::string& name,
                           const std::vector<std::int64_t>& values) {
  onnx::TensorProto& tensor = *graph.add_initializer();
  tensor.set_name(name);
  tensor.set_data_type(onnx::TensorProto::INT64);
  tensor.add_dims(static_cast<std::int64_t>(values.size()));
  for (const std::int64_t v : values) tensor.add_int64_data(v);
}

// A Loop body taking (i, cond_in, `carried` float) and passing its condition on as cond_out, its
// first output; the caller adds the rest.
onnx::GraphProto& add_loop_body(onnx::NodeProto& node, const std::string& carried) {
  onnx::GraphProto& body = add_branch(node, "body");
  add_input(body, "i", onnx::TensorProto::INT64);
  add_input(body, "cond_in", onnx::TensorProto::BOOL);
  add_input(body, carried, onnx::TensorProto::FLOAT);
  add_node(body, "Identity", {"cond_in"}, {"cond_out"});
  add_output(body, "cond_out", /*typed=*/false);
  return body;
}

// rows = Loop(trips) over rows = Concat(rows, i * x[None]) on axis 0, PyTorch's `torch.cat` in a
// scripted loop, which the loop runs as one join at the end; with `rows_read_too` the body also
// reads the growing value (its shape), so it must run as written. Both give i * x row by row.
void add_appending_loop(ModelBuilder& m, bool rows_read_too) {
  onnx::NodeProto& node = m.node("Loop", {"trips", "yes", "rows0"}, {"rows"}, "append");
  onnx::GraphProto& body = add_loop_body(node, "rows_in");
  add_int64_initializer(body, "zero", {0});
  onnx::NodeProto& cast = add_node(body, "Cast", {"i"}, {"i_float"});
  onnx::AttributeProto& to = *cast.add_attribute();
  to.set_name("to");
  to.set_type(onnx::AttributeProto::INT);
  to.set_i(onnx::TensorProto::FLOAT);
  add_node(body, "Mul", {"x", "i_float"}, {"row"});
  add_node(body, "Unsqueeze", {"row", "zero"}, {"piece"});
  onnx::NodeProto& concat = add_node(body, "Concat", {"rows_in", "piece"}, {"rows_out"});
  onnx::AttributeProto& axis = *concat.add_attribute();
  axis.set_name("axis");
  axis.set_type(onnx::AttributeProto::INT);
  axis.set_i(0);
  add_output(body, "rows_out");
  if (rows_read_too) {
    add_node(body, "Shape", {"rows_in"}, {"rows_shape"});
    add_output(body, "rows_shape", /*typed=*/false);
    m.output("shapes", DataType::kInt64, {-1, 2});
    node.add_output("shapes");
  }
}

TEST(ControlFlow, ALoopThatAppendsToACarriedValueGivesWhatItWouldRunAsWritten) {
  for (const bool rows_read_too : {false, true}) {
    SCOPED_TRACE(rows_read_too);
    ModelBuilder m;
    m.input("x", DataType::kFloat32, {3}).input("trips", DataType::kInt64, {});
    m.output("rows", DataType::kFloat32, {-1, 3});
    m.initializer("yes", bool_scalar(true));
    m.initializer("rows0", float_tensor({1, 3}, {-1, -1, -1}));
    add_appending_loop(m, rows_read_too);
    const Graph graph = load_graph(m);
    const Tensor x = float_tensor({3}, {1, 2, 3});
    const auto four = run_planned(graph, {x, int64_tensor({}, {4})});
    ASSERT_FALSE(four.empty());
    EXPECT_TRUE(
        tensors_near(four[0], float_tensor({5, 3}, {-1, -1, -1, 0, 0, 0, 1, 2, 3, 2, 4, 6, 3, 6, 9})));
    const auto none = run_planned(graph, {x, int64_tensor({}, {0})});
    ASSERT_FALSE(none.empty());
    EXPECT_TRUE(tensors_near(none[0], float_tensor({1, 3}, {-1, -1, -1})));
  }
}

// Scan (opset 9 on): a running sum over x's columns, last column first (scan_input_axes 1,
// reversed), each step's sum stacked along axis 1, in step order or reversed.
TEST(ControlFlow, AScanRunsItsBodyOverSlicesAlongItsAxesAndDirections) {
  for (const std::int64_t output_direction : {0, 1}) {
    SCOPED_TRACE(output_direction);
    ModelBuilder m;
    m.input("x", DataType::kFloat32, {2, 3});
    m.output("sum", DataType::kFloat32, {2}).output("sums", DataType::kFloat32, {2, 3});
    m.initializer("zeros", float_tensor({2}, {0, 0}));
    onnx::NodeProto& node = m.node("Scan", {"zeros", "x"}, {"sum", "sums"}, "running_sum");
    m.attr(node, "num_scan_inputs", std::int64_t{1});
    m.attr(node, "scan_input_axes", std::vector<std::int64_t>{1});
    m.attr(node, "scan_input_directions", std::vector<std::int64_t>{1});
    m.attr(node, "scan_output_axes", std::vector<std::int64_t>{-1});
    m.attr(node, "scan_output_directions", std::vector<std::int64_t>{output_direction});
    onnx::GraphProto& body = add_branch(node, "body");
    add_input(body, "sum_in", onnx::TensorProto::FLOAT);
    add_input(body, "column", onnx::TensorProto::FLOAT, /*typed=*/false);
    add_node(body, "Add", {"sum_in", "column"}, {"sum_out"});
    add_node(body, "Identity", {"sum_out"}, {"step"});
    add_output(body, "sum_out");
    add_output(body, "step");
    const Graph graph = load_graph(m);
    const auto out = run_planned(graph, {float_tensor({2, 3}, {1, 2, 3, 4, 5, 6})});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_TRUE(tensors_near(out[0], float_tensor({2}, {6, 15})));
    EXPECT_TRUE(tensors_near(out[1], output_direction == 0 ? float_tensor({2, 3}, {3, 5, 6, 6, 11, 15})
                                                           : float_tensor({2, 3}, {6, 5, 3, 15, 11, 6})));
  }
}

Status run_status(const Graph& graph, const std::vector<Tensor>& inputs) {
  CpuExecutor executor(plan_for(graph, inputs));
  return executor.run(inputs).status();
}

TEST(ControlFlow, BadLoopsAndConditionsAreRefusedNamingTheNode) {
  {
    ModelBuilder m;  // neither a trip count nor a condition: it would never end
    m.input("x", DataType::kFloat32, {3}).output("acc", DataType::kFloat32, {3});
    m.output("rows", DataType::kFloat32, {-1, 3});
    m.initializer("acc0", float_tensor({3}, {0, 0, 0}));
    add_accumulating_loop(m, "", "", /*typed_body_inputs=*/true);
    const Status status = run_status(load_graph(m), {float_tensor({3}, {1, 2, 3})});
    ASSERT_FALSE(status.is_ok());
    for (const char* fragment : {"node 'accumulate' (Loop)", "would never end"}) {
      EXPECT_NE(status.message().find(fragment), std::string::npos) << status.message();
    }
  }
  {
    ModelBuilder m;  // a trip count that is not one int64
    m.input("x", DataType::kFloat32, {3}).input("trips", DataType::kInt64, {2});
    m.output("acc", DataType::kFloat32, {3}).output("rows", DataType::kFloat32, {-1, 3});
    m.initializer("yes", bool_scalar(true));
    m.initializer("acc0", float_tensor({3}, {0, 0, 0}));
    add_accumulating_loop(m, "trips", "yes", /*typed_body_inputs=*/true);
    const Status status =
        run_status(load_graph(m), {float_tensor({3}, {1, 2, 3}), int64_tensor({2}, {1, 2})});
    ASSERT_FALSE(status.is_ok());
    for (const char* fragment : {"node 'accumulate' (Loop)", "trip count", "not one int64"}) {
      EXPECT_NE(status.message().find(fragment), std::string::npos) << status.message();
    }
  }
  {
    ModelBuilder m;  // a body node that fails: the error names the Loop, the body and the iteration
    m.input("x", DataType::kFloat32, {3}).input("trips", DataType::kInt64, {});
    m.output("acc", DataType::kFloat32, {3});
    m.initializer("yes", bool_scalar(true));
    m.initializer("acc0", float_tensor({3}, {0, 0, 0}));
    onnx::NodeProto& node = m.node("Loop", {"trips", "yes", "acc0"}, {"acc"}, "reshaping");
    onnx::GraphProto& body = add_loop_body(node, "acc_in");
    add_int64_initializer(body, "seven", {7});
    add_node(body, "Reshape", {"acc_in", "seven"}, {"acc_out"});
    add_output(body, "acc_out");
    const Status status = run_status(load_graph(m), {float_tensor({3}, {1, 2, 3}), int64_tensor({}, {2})});
    ASSERT_FALSE(status.is_ok());
    for (const char* fragment : {"node 'reshaping' (Loop), body, iteration 0", "(Reshape)"}) {
      EXPECT_NE(status.message().find(fragment), std::string::npos) << status.message();
    }
  }
  {
    ModelBuilder m;  // a run-time condition of two values
    m.input("x", DataType::kFloat32, {2, 3})
        .input("flag", DataType::kBool, {2})
        .output("y", DataType::kFloat32, {2, 3});
    add_plus_or_minus(m, "flag");
    const Status status =
        run_status(load_graph(m), {kX, Tensor::from_vector<std::uint8_t>(DataType::kBool, {2}, {1, 0})});
    ASSERT_FALSE(status.is_ok());
    for (const char* fragment : {"node 'choose' (If)", "not one bool"}) {
      EXPECT_NE(status.message().find(fragment), std::string::npos) << status.message();
    }
  }
}

// Branches that pass values on (an outer value, their own constant), a nested If reading both the
// model's and the branch's values, and a branch value named like one of the model's (renamed when
// inlined, and the nested If reads the branch's).
TEST(ControlFlow, PassedOnOutputsNestedIfsAndClashingNames) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3}).output("y", DataType::kFloat32, {2, 3});
  m.output("z", DataType::kFloat32, {3});
  m.initializer("yes", bool_scalar(true));
  m.initializer("t", float_tensor({3}, {10, 20, 30}));
  onnx::NodeProto& outer = m.node("If", {"yes"}, {"y", "z"}, "outer");
  onnx::GraphProto& then_branch = add_branch(outer, "then_branch");
  add_node(then_branch, "Relu", {"x"}, {"t"});  // the model has a 't' too
  add_float_initializer(then_branch, "ones", {1, 1, 1});
  onnx::NodeProto& inner = add_node(then_branch, "If", {"yes"}, {"inner_out"});
  onnx::GraphProto& inner_then = add_branch(inner, "then_branch");
  add_node(inner_then, "Add", {"t", "x"}, {"sum"});  // the branch's t (relu(x)) and the model's x
  add_output(inner_then, "sum");
  add_output(add_branch(inner, "else_branch"), "x");
  add_output(then_branch, "inner_out");
  add_output(then_branch, "ones");  // a constant of the branch passed on
  onnx::GraphProto& else_branch = add_branch(outer, "else_branch");
  add_output(else_branch, "x");
  add_output(else_branch, "t");  // an outer value passed on
  const Graph graph = load_graph(m);
  EXPECT_EQ(count_ops(graph, "If"), 0);
  const auto out = run_planned(graph, {kX});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(tensors_near(out[0], float_tensor({2, 3}, {2, -2, 6, -4, 10, -6})));
  EXPECT_TRUE(tensors_near(out[1], float_tensor({3}, {1, 1, 1})));
}

TEST(ControlFlow, MalformedIfsAreRefusedNamingTheNode) {
  {
    ModelBuilder m;  // the branch gives two outputs for one
    m.input("x", DataType::kFloat32, {2, 3}).output("y", DataType::kFloat32, {2, 3});
    m.initializer("cond", bool_scalar(true));
    onnx::NodeProto& node = m.node("If", {"cond"}, {"y"}, "choose");
    onnx::GraphProto& then_branch = add_branch(node, "then_branch");
    add_output(then_branch, "x");
    add_output(then_branch, "x");
    expect_refused_at_load(m, "if.onnx",
                           {"node 'choose' (If)", "then_branch gives 2 outputs for the node's 1"});
  }
  {
    ModelBuilder m;  // the branch it takes is missing
    m.input("x", DataType::kFloat32, {2, 3}).output("y", DataType::kFloat32, {2, 3});
    m.initializer("cond", bool_scalar(false));
    onnx::NodeProto& node = m.node("If", {"cond"}, {"y"}, "choose");
    add_output(add_branch(node, "then_branch"), "x");
    expect_refused_at_load(m, "if.onnx", {"node 'choose' (If)", "no else_branch"});
  }
  {
    ModelBuilder m;  // a branch reads a name nothing defines
    m.input("x", DataType::kFloat32, {2, 3}).output("y", DataType::kFloat32, {2, 3});
    m.initializer("cond", bool_scalar(true));
    onnx::NodeProto& node = m.node("If", {"cond"}, {"y"}, "choose");
    onnx::GraphProto& then_branch = add_branch(node, "then_branch");
    add_node(then_branch, "Neg", {"nowhere"}, {"n"});
    add_output(then_branch, "n");
    expect_refused_at_load(m, "if.onnx", {"node 'choose' (If)", "'nowhere'"});
  }
  {
    ModelBuilder m;  // a condition that is not one bool
    m.input("x", DataType::kFloat32, {2, 3}).output("y", DataType::kFloat32, {2, 3});
    m.initializer("cond", float_tensor({2}, {1, 0}));
    add_plus_or_minus(m, "cond");
    expect_refused_at_load(m, "if.onnx", {"node 'choose' (If)", "not one bool"});
  }
  {
    ModelBuilder m;  // subgraphs nested past the bound
    m.input("x", DataType::kFloat32, {2, 3}).output("y", DataType::kFloat32, {2, 3});
    m.initializer("cond", bool_scalar(true));
    onnx::GraphProto* level = &add_branch(m.node("If", {"cond"}, {"y"}, "choose"), "then_branch");
    for (int depth = 0; depth < 20; ++depth) {
      onnx::NodeProto& nested = add_node(*level, "If", {"cond"}, {"y" + std::to_string(depth)});
      add_output(*level, "y" + std::to_string(depth));
      level = &add_branch(nested, "then_branch");
    }
    add_output(*level, "x");
    expect_refused_at_load(m, "if.onnx", {"nested more than 16 deep"});
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
