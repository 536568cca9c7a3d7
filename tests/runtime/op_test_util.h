// Building single nodes and running them through the op registry, for the op tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/evaluate.h"

namespace fovea::runtime::testing {

// NodeBuilder("Conv").inputs(3).attr("strides", {2, 2}).build()
class NodeBuilder {
 public:
  explicit NodeBuilder(std::string op_type, int opset = 17);
  NodeBuilder& inputs(int count);
  // Input i is omitted (an empty name in ONNX), for optional inputs.
  NodeBuilder& omit_input(int i);
  NodeBuilder& outputs(int count);
  NodeBuilder& domain(std::string domain);
  NodeBuilder& attr(const std::string& key, std::int64_t value);
  NodeBuilder& attr(const std::string& key, int value) { return attr(key, static_cast<std::int64_t>(value)); }
  NodeBuilder& attr(const std::string& key, float value);
  NodeBuilder& attr(const std::string& key, std::string value);
  NodeBuilder& attr(const std::string& key, const char* value) { return attr(key, std::string(value)); }
  NodeBuilder& attr(const std::string& key, std::vector<std::int64_t> values);
  NodeBuilder& attr(const std::string& key, std::vector<float> values);
  NodeBuilder& attr(const std::string& key, Tensor value);
  Node build() const { return node_; }

 private:
  Node node_;
};

// Runs the node on `inputs` (an empty Tensor for an omitted input); fails the test on an error.
std::vector<Tensor> run_node(const Node& node, const std::vector<Tensor>& inputs);
// The Status of running it, for tests of rejected input.
Status run_node_status(const Node& node, const std::vector<Tensor>& inputs);
// Output types from shape inference alone, with the given input types and no values.
Result<std::vector<ValueType>> infer_types(const Node& node, const std::vector<ValueType>& inputs);

// Uniform random values in [low, high), reproducible from `seed`.
Tensor random_tensor(DataType dtype, Shape shape, std::uint32_t seed, double low = -1.0, double high = 1.0);
// Every value of an 8-bit type, uniformly: [0, 255] for kUInt8, [-128, 127] for kInt8.
Tensor random_8bit(DataType dtype, Shape shape, std::uint32_t seed);
Tensor float_tensor(Shape shape, std::vector<float> values);
Tensor int64_tensor(Shape shape, std::vector<std::int64_t> values);

// Same dtype and shape, and |actual - expected| <= atol + rtol * |expected| everywhere (exact for
// integer and bool tensors). Reports the worst element.
::testing::AssertionResult tensors_near(const Tensor& actual, const Tensor& expected, double atol = 1e-5,
                                        double rtol = 1e-5);

}  // namespace fovea::runtime::testing
