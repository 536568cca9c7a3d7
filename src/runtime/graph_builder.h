// GraphBuilder: the few calls that write a small model by hand, with weights set in code, as a
// runtime Graph for serialize_onnx (onnx_writer.h): the demo segmenter and detector
// (demo_model.h, demo_detector.h) and the tests' tiny models. They load back through the same
// loader as any other model.
//
// Not a general ONNX authoring API: one opset, the default domain only, one output per node, no
// subgraphs. Node outputs carry no declared type: the writer records types only for graph inputs
// and outputs, and the loader infers the rest when it reads the model back.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/graph.h"
#include "runtime/tensor.h"

namespace fovea::runtime {

using Attributes = std::map<std::string, Attribute, std::less<>>;

Attribute int_attribute(std::int64_t value);
Attribute ints_attribute(std::vector<std::int64_t> values);

// Constants with their values written out in code.
Tensor float32_tensor(Shape shape, const std::vector<float>& values);
Tensor int64_tensor(Shape shape, const std::vector<std::int64_t>& values);

// float32 [N, channels, H, W] with the batch and spatial dims symbolic: an image input or a
// per-pixel output of a model that takes any frame size.
ValueType image_type(std::int64_t channels);

class GraphBuilder {
 public:
  // `opset`: the default domain's version, declared by the graph and by every node.
  explicit GraphBuilder(int opset);
  GraphBuilder(const GraphBuilder&) = delete;
  GraphBuilder& operator=(const GraphBuilder&) = delete;

  ValueId input(const std::string& name, ValueType type);
  ValueId constant(const std::string& name, Tensor tensor);
  // One node with one output named `output`; the node takes the same name.
  ValueId node(const std::string& op_type, std::vector<ValueId> inputs, const std::string& output,
               Attributes attributes = {});
  // Makes `id` a graph output, in call order; `type` is what the model declares for it (without
  // one, float32 of unknown shape).
  void output(ValueId id, std::optional<ValueType> type = std::nullopt);

  // The finished graph; the builder is spent (std::move(builder).take_graph()).
  Graph take_graph() &&;

 private:
  int opset_;
  Graph graph_;
};

}  // namespace fovea::runtime
