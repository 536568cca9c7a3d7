// Writes a Graph back to ONNX: planned graphs (fused fovea-domain ops, float16 weights, NHWC
// convolutions) are saved as engines this way (engine.h), and load again through the same loader
// that checks every model.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/status.h"
#include "runtime/graph.h"

namespace fovea::runtime {

// ONNX's TensorProto data type code for a DataType (the inverse of data_type_from_onnx).
int data_type_to_onnx(DataType dtype);

// The serialized ModelProto of `graph`, with `metadata` as its metadata_props. Fails on what ONNX
// cannot hold the way fovea holds it (two values with one name, graph attributes).
Result<std::string> serialize_onnx(const Graph& graph, const std::map<std::string, std::string>& metadata);

}  // namespace fovea::runtime
