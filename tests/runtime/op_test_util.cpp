#include "runtime/op_test_util.h"

#include <cmath>
#include <random>

#include <fmt/format.h>

namespace fovea::runtime::testing {

NodeBuilder::NodeBuilder(std::string op_type, int opset) {
  node_.name = op_type + "_under_test";
  node_.op_type = std::move(op_type);
  node_.opset = opset;
  node_.inputs = {0};
  node_.outputs = {1000};
}

NodeBuilder& NodeBuilder::inputs(int count) {
  node_.inputs.clear();
  for (int i = 0; i < count; ++i) node_.inputs.push_back(i);
  return *this;
}

NodeBuilder& NodeBuilder::omit_input(int i) {
  node_.inputs[static_cast<std::size_t>(i)] = kNoValue;
  return *this;
}

NodeBuilder& NodeBuilder::outputs(int count) {
  node_.outputs.clear();
  for (int i = 0; i < count; ++i) node_.outputs.push_back(1000 + i);
  return *this;
}

NodeBuilder& NodeBuilder::domain(std::string domain) {
  node_.domain = std::move(domain);
  return *this;
}

NodeBuilder& NodeBuilder::attr(const std::string& key, std::int64_t value) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = value;
  node_.attributes[key] = a;
  return *this;
}

NodeBuilder& NodeBuilder::attr(const std::string& key, float value) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = value;
  node_.attributes[key] = a;
  return *this;
}

NodeBuilder& NodeBuilder::attr(const std::string& key, std::string value) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = std::move(value);
  node_.attributes[key] = a;
  return *this;
}

NodeBuilder& NodeBuilder::attr(const std::string& key, std::vector<std::int64_t> values) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(values);
  node_.attributes[key] = a;
  return *this;
}

NodeBuilder& NodeBuilder::attr(const std::string& key, std::vector<float> values) {
  Attribute a;
  a.kind = Attribute::Kind::kFloats;
  a.floats = std::move(values);
  node_.attributes[key] = a;
  return *this;
}

NodeBuilder& NodeBuilder::attr(const std::string& key, Tensor value) {
  Attribute a;
  a.kind = Attribute::Kind::kTensor;
  a.t = std::move(value);
  node_.attributes[key] = a;
  return *this;
}

std::vector<Tensor> run_node(const Node& node, const std::vector<Tensor>& inputs) {
  auto result = evaluate_node(nullptr, node, inputs, heap_allocator());
  EXPECT_TRUE(result.is_ok()) << result.status().to_string();
  return result.is_ok() ? std::move(result).value() : std::vector<Tensor>(node.outputs.size());
}

Status run_node_status(const Node& node, const std::vector<Tensor>& inputs) {
  return evaluate_node(nullptr, node, inputs, heap_allocator()).status();
}

Result<std::vector<ValueType>> infer_types(const Node& node, const std::vector<ValueType>& inputs) {
  return infer_node(nullptr, node, inputs, std::vector<const Tensor*>(inputs.size(), nullptr));
}

Tensor random_tensor(DataType dtype, Shape shape, std::uint32_t seed, double low, double high) {
  Tensor tensor = Tensor::allocate(dtype, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(low, high);
  for (std::int64_t i = 0; i < tensor.numel(); ++i) {
    const double v = dist(rng);
    switch (dtype) {
      case DataType::kFloat32: tensor.data<float>()[i] = static_cast<float>(v); break;
      case DataType::kFloat64: tensor.data<double>()[i] = v; break;
      case DataType::kFloat16: tensor.data<Half>()[i] = float_to_half(static_cast<float>(v)); break;
      case DataType::kInt64: tensor.data<std::int64_t>()[i] = static_cast<std::int64_t>(std::floor(v)); break;
      case DataType::kInt32: tensor.data<std::int32_t>()[i] = static_cast<std::int32_t>(std::floor(v)); break;
      case DataType::kInt8: tensor.data<std::int8_t>()[i] = static_cast<std::int8_t>(std::floor(v)); break;
      case DataType::kUInt8: tensor.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(std::floor(v)); break;
      case DataType::kBool: tensor.data<std::uint8_t>()[i] = v > (low + high) / 2 ? 1 : 0; break;
    }
  }
  return tensor;
}

Tensor random_8bit(DataType dtype, Shape shape, std::uint32_t seed) {
  return dtype == DataType::kUInt8 ? random_tensor(DataType::kUInt8, std::move(shape), seed, 0, 256)
                                   : random_tensor(DataType::kInt8, std::move(shape), seed, -128, 128);
}

Tensor float_tensor(Shape shape, std::vector<float> values) {
  return Tensor::from_vector(DataType::kFloat32, std::move(shape), values);
}

Tensor int64_tensor(Shape shape, std::vector<std::int64_t> values) {
  return Tensor::from_vector(DataType::kInt64, std::move(shape), values);
}

::testing::AssertionResult tensors_near(const Tensor& actual, const Tensor& expected, double atol,
                                        double rtol) {
  if (actual.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure() << "dtype " << data_type_name(actual.dtype()) << " != expected "
                                         << data_type_name(expected.dtype());
  }
  if (actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure()
           << "shape " << shape_string(actual.shape()) << " != expected " << shape_string(expected.shape());
  }
  const bool exact = !(expected.dtype() == DataType::kFloat32 || expected.dtype() == DataType::kFloat64 ||
                       expected.dtype() == DataType::kFloat16);
  std::int64_t worst = -1;
  double worst_excess = 0;
  for (std::int64_t i = 0; i < expected.numel(); ++i) {
    const double a = number_at(actual, i);
    const double e = number_at(expected, i);
    if (std::isnan(e) && std::isnan(a)) continue;
    const double allowed = exact ? 0 : atol + rtol * std::abs(e);
    const double excess = std::isnan(a) || std::isnan(e) ? INFINITY : std::abs(a - e) - allowed;
    if (excess > 0 && (worst < 0 || excess > worst_excess)) {
      worst = i;
      worst_excess = excess;
    }
  }
  if (worst >= 0) {
    return ::testing::AssertionFailure()
           << fmt::format("element {} is {} but expected {} (atol {}, rtol {})", worst,
                          number_at(actual, worst), number_at(expected, worst), atol, rtol);
  }
  return ::testing::AssertionSuccess();
}

}  // namespace fovea::runtime::testing
