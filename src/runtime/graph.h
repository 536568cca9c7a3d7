// The runtime's one graph representation (IR): values with dtypes and partly symbolic shapes,
// nodes with ONNX attributes, in a topological order. Loading, passes, planning and every executor
// work on this; there is no second graph type.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/tensor.h"

namespace fovea::runtime {

// One dimension: a known size, or unknown with an optional symbolic name ("batch", "N").
struct Dim {
  std::int64_t value = -1;
  std::string symbol;

  static Dim known_size(std::int64_t v) { return Dim{v, {}}; }
  static Dim unknown(std::string name = {}) { return Dim{-1, std::move(name)}; }
  bool known() const { return value >= 0; }
  bool operator==(const Dim& other) const = default;
};
using Dims = std::vector<Dim>;

Dims dims_of(const Shape& shape);
bool all_known(const Dims& dims);
Shape shape_of(const Dims& dims);           // requires all_known
std::string dims_string(const Dims& dims);  // "[N, 3, 224, 224]", "?" for nameless unknowns

struct ValueType {
  DataType dtype = DataType::kFloat32;
  std::optional<Dims> dims;  // nullopt: even the rank is unknown
};

class Graph;

struct Attribute {
  enum class Kind { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor, kGraph };
  Kind kind = Kind::kInt;
  std::int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<std::int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  Tensor t;
  std::shared_ptr<const Graph> g;  // kGraph: If's branches (a GRAPHS list is not read)
};
std::string_view attribute_kind_name(Attribute::Kind kind);

// A value id indexes Graph::values; kNoValue marks an omitted optional input ("" in ONNX).
using ValueId = int;
inline constexpr ValueId kNoValue = -1;

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" is the ONNX default domain; "fovea" holds fused ops made by passes
  int opset = 0;       // the model's opset for this node's domain
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::map<std::string, Attribute, std::less<>> attributes;

  bool has_attribute(std::string_view key) const { return attributes.find(key) != attributes.end(); }
  // Typed getters: a missing attribute gives `fallback` (or an error when there is none), one of
  // another kind is an error that names the node and the attribute.
  Result<std::int64_t> attr_int(std::string_view key, std::optional<std::int64_t> fallback = {}) const;
  Result<float> attr_float(std::string_view key, std::optional<float> fallback = {}) const;
  Result<std::string> attr_string(std::string_view key, std::optional<std::string> fallback = {}) const;
  Result<std::vector<std::int64_t>> attr_ints(std::string_view key,
                                              std::optional<std::vector<std::int64_t>> fallback = {}) const;
  Result<std::vector<float>> attr_floats(std::string_view key,
                                         std::optional<std::vector<float>> fallback = {}) const;
  Result<Tensor> attr_tensor(std::string_view key) const;

  // "node 'conv1' (Conv)", the prefix of every error about this node.
  std::string describe() const;

 private:
  Result<const Attribute*> find_attribute(std::string_view key, Attribute::Kind kind, bool required) const;
};

struct Value {
  std::string name;
  ValueType type;
  std::optional<Tensor> constant;  // initializers and folded values
  int producer = -1;               // index into Graph::nodes; -1 for inputs and constants
};

class Graph {
 public:
  std::string model_path;  // for error messages
  std::vector<Value> values;
  std::vector<Node> nodes;  // always in a topological order once the loader is done
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  // A subgraph's values that an enclosing graph defines, read by name (ONNX's outer scope). The
  // node holding the subgraph lists them after its own inputs, so that order and liveness in the
  // enclosing graph see them (onnxruntime's implicit inputs).
  std::vector<ValueId> captured;
  std::map<std::string, int, std::less<>> opsets;  // domain -> version

  ValueId add_value(std::string name, ValueType type);
  ValueId add_constant(std::string name, Tensor tensor);
  ValueId find_value(std::string_view name) const;  // kNoValue when absent

  Value& value(ValueId id) { return values[static_cast<std::size_t>(id)]; }
  const Value& value(ValueId id) const { return values[static_cast<std::size_t>(id)]; }
  bool is_constant(ValueId id) const { return id != kNoValue && value(id).constant.has_value(); }
  bool is_graph_output(ValueId id) const;

  // Recomputes each value's producer from the node list.
  void index_producers();
  // Number of node inputs plus graph outputs that read each value.
  std::vector<int> use_counts() const;
  // Puts nodes in a topological order (stable where the order already is one). A cycle is an
  // error naming a node on it.
  Status sort_topologically();
  // Drops values nothing refers to and renumbers ids, after passes remove nodes.
  void compact();

  // "model.onnx: " prefix for errors.
  std::string where() const { return model_path.empty() ? std::string() : model_path + ": "; }
};

}  // namespace fovea::runtime
