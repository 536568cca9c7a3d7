#include "runtime/graph.h"

#include <algorithm>
#include <queue>

#include <fmt/format.h>

namespace fovea::runtime {

Dims dims_of(const Shape& shape) {
  Dims dims;
  dims.reserve(shape.size());
  for (std::int64_t d : shape) {
    dims.push_back(Dim::known_size(d));
  }
  return dims;
}

bool all_known(const Dims& dims) {
  return std::all_of(dims.begin(), dims.end(), [](const Dim& d) { return d.known(); });
}

Shape shape_of(const Dims& dims) {
  FOVEA_CHECK(all_known(dims));
  Shape shape;
  shape.reserve(dims.size());
  for (const Dim& d : dims) {
    shape.push_back(d.value);
  }
  return shape;
}

std::string dims_string(const Dims& dims) {
  std::vector<std::string> parts;
  for (const Dim& d : dims) {
    parts.push_back(d.known() ? std::to_string(d.value) : (d.symbol.empty() ? "?" : d.symbol));
  }
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string_view attribute_kind_name(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::kInt: return "INT";
    case Attribute::Kind::kFloat: return "FLOAT";
    case Attribute::Kind::kString: return "STRING";
    case Attribute::Kind::kInts: return "INTS";
    case Attribute::Kind::kFloats: return "FLOATS";
    case Attribute::Kind::kStrings: return "STRINGS";
    case Attribute::Kind::kTensor: return "TENSOR";
    case Attribute::Kind::kGraph: return "GRAPH";
  }
  return "UNKNOWN";
}

std::string Node::describe() const {
  return fmt::format("node '{}' ({})", name, op_type);
}

Result<const Attribute*> Node::find_attribute(std::string_view key, Attribute::Kind kind,
                                              bool required) const {
  auto it = attributes.find(key);
  if (it == attributes.end()) {
    if (required) {
      return make_error(StatusCode::kInvalidArgument, describe(), ": missing required attribute '",
                        std::string(key), "'");
    }
    return static_cast<const Attribute*>(nullptr);
  }
  if (it->second.kind != kind) {
    return make_error(StatusCode::kInvalidArgument, describe(), ": attribute '", std::string(key), "' is ",
                      std::string(attribute_kind_name(it->second.kind)), ", expected ",
                      std::string(attribute_kind_name(kind)));
  }
  return &it->second;
}

Result<std::int64_t> Node::attr_int(std::string_view key, std::optional<std::int64_t> fallback) const {
  FOVEA_ASSIGN_OR_RETURN(const Attribute* a, find_attribute(key, Attribute::Kind::kInt, !fallback));
  return a ? a->i : *fallback;
}

Result<float> Node::attr_float(std::string_view key, std::optional<float> fallback) const {
  FOVEA_ASSIGN_OR_RETURN(const Attribute* a, find_attribute(key, Attribute::Kind::kFloat, !fallback));
  return a ? a->f : *fallback;
}

Result<std::string> Node::attr_string(std::string_view key, std::optional<std::string> fallback) const {
  FOVEA_ASSIGN_OR_RETURN(const Attribute* a, find_attribute(key, Attribute::Kind::kString, !fallback));
  return a ? a->s : *fallback;
}

Result<std::vector<std::int64_t>> Node::attr_ints(std::string_view key,
                                                  std::optional<std::vector<std::int64_t>> fallback) const {
  FOVEA_ASSIGN_OR_RETURN(const Attribute* a, find_attribute(key, Attribute::Kind::kInts, !fallback));
  return a ? a->ints : *fallback;
}

Result<std::vector<float>> Node::attr_floats(std::string_view key,
                                             std::optional<std::vector<float>> fallback) const {
  FOVEA_ASSIGN_OR_RETURN(const Attribute* a, find_attribute(key, Attribute::Kind::kFloats, !fallback));
  return a ? a->floats : *fallback;
}

Result<Tensor> Node::attr_tensor(std::string_view key) const {
  FOVEA_ASSIGN_OR_RETURN(const Attribute* a, find_attribute(key, Attribute::Kind::kTensor, true));
  return a->t;
}

ValueId Graph::add_value(std::string name, ValueType type) {
  values.push_back(Value{std::move(name), std::move(type), std::nullopt, -1});
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Graph::add_constant(std::string name, Tensor tensor) {
  ValueType type{tensor.dtype(), dims_of(tensor.shape())};
  const ValueId id = add_value(std::move(name), std::move(type));
  value(id).constant = std::move(tensor);
  return id;
}

ValueId Graph::find_value(std::string_view name) const {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i].name == name) {
      return static_cast<ValueId>(i);
    }
  }
  return kNoValue;
}

bool Graph::is_graph_output(ValueId id) const {
  return std::find(outputs.begin(), outputs.end(), id) != outputs.end();
}

void Graph::index_producers() {
  for (Value& v : values) {
    v.producer = -1;
  }
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId out : nodes[n].outputs) {
      if (out != kNoValue) {
        value(out).producer = static_cast<int>(n);
      }
    }
  }
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> counts(values.size(), 0);
  for (const Node& node : nodes) {
    for (ValueId in : node.inputs) {
      if (in != kNoValue) {
        ++counts[static_cast<std::size_t>(in)];
      }
    }
  }
  for (ValueId out : outputs) {
    ++counts[static_cast<std::size_t>(out)];
  }
  return counts;
}

Status Graph::sort_topologically() {
  index_producers();
  // Kahn's algorithm over node indices; a min-heap keeps the original order among ready nodes.
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<int>> consumers(nodes.size());
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId in : nodes[n].inputs) {
      if (in == kNoValue || value(in).producer < 0) {
        continue;
      }
      ++pending[n];
      consumers[static_cast<std::size_t>(value(in).producer)].push_back(static_cast<int>(n));
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    if (pending[n] == 0) {
      ready.push(static_cast<int>(n));
    }
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int n = ready.top();
    ready.pop();
    order.push_back(n);
    for (int consumer : consumers[static_cast<std::size_t>(n)]) {
      if (--pending[static_cast<std::size_t>(consumer)] == 0) {
        ready.push(consumer);
      }
    }
  }
  if (order.size() != nodes.size()) {
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      if (pending[n] > 0) {
        return make_error(StatusCode::kCorruptData, where(), "the graph has a cycle through ",
                          nodes[n].describe());
      }
    }
  }
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  for (int n : order) {
    sorted.push_back(std::move(nodes[static_cast<std::size_t>(n)]));
  }
  nodes = std::move(sorted);
  index_producers();
  return Status::ok();
}

void Graph::compact() {
  std::vector<bool> used(values.size(), false);
  for (const Node& node : nodes) {
    for (ValueId id : node.inputs) {
      if (id != kNoValue) used[static_cast<std::size_t>(id)] = true;
    }
    for (ValueId id : node.outputs) {
      if (id != kNoValue) used[static_cast<std::size_t>(id)] = true;
    }
  }
  for (ValueId id : inputs) used[static_cast<std::size_t>(id)] = true;
  for (ValueId id : outputs) used[static_cast<std::size_t>(id)] = true;

  std::vector<ValueId> renumbered(values.size(), kNoValue);
  std::vector<Value> kept;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (used[i]) {
      renumbered[i] = static_cast<ValueId>(kept.size());
      kept.push_back(std::move(values[i]));
    }
  }
  auto remap = [&](std::vector<ValueId>& ids) {
    for (ValueId& id : ids) {
      if (id != kNoValue) id = renumbered[static_cast<std::size_t>(id)];
    }
  };
  for (Node& node : nodes) {
    remap(node.inputs);
    remap(node.outputs);
  }
  remap(inputs);
  remap(outputs);
  values = std::move(kept);
  index_producers();
}

}  // namespace fovea::runtime
