// Every registered op, given a node with too few or too many inputs or outputs or an omitted
// required one, answers with an error Status from shape inference and from evaluation alike, never
// a crash: an ONNX file may list any counts, and OpDef's arity is checked before any op code runs.
// Counts the op allows must not crash either, whatever infer() makes of the inputs. Iterates the
// registry, so a new op is covered without touching this file.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runtime/op_test_util.h"

namespace fovea::runtime {
namespace {

using testing::NodeBuilder;
using testing::random_tensor;

struct Arity {
  std::string what;
  int inputs = 1;
  int outputs = 1;
  int omitted_input = -1;
  int omitted_output = -1;
  int opset = 17;
};

Node node_for(const OpDef& def, const Arity& arity) {
  NodeBuilder builder(std::string(def.op_type), arity.opset);
  builder.domain(std::string(def.domain)).inputs(arity.inputs).outputs(arity.outputs);
  if (arity.omitted_input >= 0) builder.omit_input(arity.omitted_input);
  Node node = builder.build();
  if (arity.omitted_output >= 0) node.outputs[static_cast<std::size_t>(arity.omitted_output)] = kNoValue;
  return node;
}

// Random [2, 3] tensors for the present inputs, empty ones for omitted inputs.
std::vector<Tensor> inputs_for(const Node& node, DataType dtype = DataType::kFloat32) {
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    inputs.push_back(
        node.inputs[i] == kNoValue ? Tensor() : random_tensor(dtype, {2, 3}, static_cast<std::uint32_t>(i)));
  }
  return inputs;
}

Result<std::vector<ValueType>> infer(const Node& node, const std::vector<Tensor>& inputs) {
  std::vector<ValueType> types;  // an omitted input's type is unknown, as the loader leaves it
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    types.push_back(node.inputs[i] == kNoValue ? ValueType{}
                                               : ValueType{inputs[i].dtype(), dims_of(inputs[i].shape())});
  }
  return infer_node(nullptr, node, types, std::vector<const Tensor*>(inputs.size(), nullptr));
}

std::vector<Arity> bad_arities(const OpDef& def) {
  const int inputs = std::max(def.min_inputs, 1);
  const int outputs = def.min_outputs;
  std::vector<Arity> bad;
  if (def.min_inputs > 0) bad.push_back({.what = "no inputs", .inputs = 0, .outputs = outputs});
  if (def.min_inputs > 1) {
    bad.push_back({.what = "min_inputs - 1 inputs", .inputs = def.min_inputs - 1, .outputs = outputs});
  }
  if (def.max_inputs != kVariadic) {
    bad.push_back({.what = "max_inputs + 1 inputs", .inputs = def.max_inputs + 1, .outputs = outputs});
  }
  bad.push_back({.what = "input 0 omitted", .inputs = inputs, .outputs = outputs, .omitted_input = 0});
  bad.push_back({.what = "no outputs", .inputs = inputs, .outputs = 0});
  if (def.max_outputs != kVariadic) {
    bad.push_back({.what = "max_outputs + 1 outputs", .inputs = inputs, .outputs = def.max_outputs + 1});
  }
  bad.push_back({.what = "output 0 omitted", .inputs = inputs, .outputs = outputs, .omitted_output = 0});
  return bad;
}

TEST(OpArity, EveryOpRejectsWrongCountsWithAStatus) {
  for (const OpDef* def : registered_ops()) {
    for (const Arity& arity : bad_arities(*def)) {
      // Constant takes no inputs: "input 0 omitted" is one input too many there, still an error.
      const Node node = node_for(*def, arity);
      const std::vector<Tensor> inputs = inputs_for(node);
      const std::string where = fmt::format("{} with {}", def->op_type, arity.what);
      const std::string op = fmt::format("({})", def->op_type);

      const auto types = infer(node, inputs);
      ASSERT_FALSE(types.is_ok()) << where << ": shape inference accepted it";
      EXPECT_EQ(types.status().code(), StatusCode::kInvalidArgument) << where;
      EXPECT_NE(types.status().to_string().find(op), std::string::npos) << types.status().to_string();

      const Status evaluated = evaluate_node(nullptr, node, inputs, heap_allocator()).status();
      ASSERT_FALSE(evaluated.is_ok()) << where << ": evaluation accepted it";
      EXPECT_EQ(evaluated.code(), StatusCode::kInvalidArgument) << where;
    }
  }
}

TEST(OpArity, MessagesNameTheCounts) {
  const OpDef* argmax = find_op("", "ArgMax");
  ASSERT_NE(argmax, nullptr);
  const auto no_input = infer(node_for(*argmax, {.inputs = 0}), {});
  ASSERT_FALSE(no_input.is_ok());
  EXPECT_NE(no_input.status().to_string().find("node 'ArgMax_under_test' (ArgMax): needs 1 input, has 0"),
            std::string::npos)
      << no_input.status().to_string();

  const Node omitted = node_for(*argmax, {.omitted_input = 0});
  const auto omitted_types = infer(omitted, inputs_for(omitted));
  ASSERT_FALSE(omitted_types.is_ok());
  EXPECT_NE(omitted_types.status().to_string().find("required input 0 is omitted"), std::string::npos)
      << omitted_types.status().to_string();

  const Node three_outputs = node_for(*argmax, {.outputs = 3});
  const auto too_many = infer(three_outputs, inputs_for(three_outputs));
  ASSERT_FALSE(too_many.is_ok());
  EXPECT_NE(too_many.status().to_string().find("has 3 outputs, at most 1 allowed"), std::string::npos)
      << too_many.status().to_string();

  const OpDef* conv = find_op("", "Conv");
  ASSERT_NE(conv, nullptr);
  const Node one_input = node_for(*conv, {.inputs = 1});
  const auto conv_types = infer(one_input, inputs_for(one_input));
  ASSERT_FALSE(conv_types.is_ok());
  EXPECT_NE(conv_types.status().to_string().find("needs 2 to 3 inputs, has 1"), std::string::npos)
      << conv_types.status().to_string();
}

TEST(OpArity, VariadicInputsAreAllRequired) {
  const OpDef* concat = find_op("", "Concat");
  ASSERT_NE(concat, nullptr);
  const Node node = node_for(*concat, {.inputs = 3, .omitted_input = 1});
  const auto types = infer(node, inputs_for(node));
  ASSERT_FALSE(types.is_ok());
  EXPECT_NE(types.status().to_string().find("required input 1 is omitted"), std::string::npos)
      << types.status().to_string();
}

// Runs `def` at every count it allows (up to kMostTried), each optional input omitted in turn.
void run_allowed_counts(const OpDef& def, int opset) {
  constexpr int kMostTried = 6;  // enough to pass every optional input of any op
  const bool variadic = def.max_inputs == kVariadic;
  for (int inputs = def.min_inputs; inputs <= std::min(def.max_inputs, kMostTried); ++inputs) {
    for (int outputs = def.min_outputs; outputs <= std::min(def.max_outputs, kMostTried); ++outputs) {
      // `omitted == inputs` omits none; a variadic op's inputs are all required.
      for (int omitted = variadic ? inputs : def.min_inputs; omitted <= inputs; ++omitted) {
        const Arity arity{.inputs = inputs,
                          .outputs = outputs,
                          .omitted_input = omitted < inputs ? omitted : -1,
                          .opset = opset};
        const Node node = node_for(def, arity);
        // int64 inputs get past the dtype checks of shape, index and axes inputs.
        for (const DataType dtype : {DataType::kFloat32, DataType::kInt64}) {
          const std::vector<Tensor> given = inputs_for(node, dtype);
          (void)infer(node, given);
          (void)evaluate_node(nullptr, node, given, heap_allocator());
        }
      }
    }
  }
}

// Every allowed count, at opsets on both sides of where inputs turned into attributes or back:
// infer() and run() may reject the random float inputs, but must not read past the node's inputs
// or outputs nor trust an input's dtype unchecked. A crash here aborts the test binary.
TEST(OpArity, AllowedCountsNeverCrash) {
  for (const int opset : {7, 9, 10, 11, 13, 17, 18, 21}) {
    for (const OpDef* def : registered_ops()) run_allowed_counts(*def, opset);
  }
}

}  // namespace
}  // namespace fovea::runtime
