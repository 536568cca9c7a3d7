// Loads ONNX models (IR versions 3-10, default-domain opsets 1-21) into the runtime's graph,
// checking everything a malformed or unsupported file could get wrong, so that later stages can
// trust the graph. Models older than opset 11 are converted to opset 11's op forms on the way
// (opset_conversion.h). Every error names the model path and, where there is one, the node.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/status.h"
#include "runtime/graph.h"

namespace fovea::runtime {

// IR versions 3-6 differ from 7 only in ways the loader handles (initializers listed as inputs),
// so they load too. Opsets change op semantics: those below the range the kernels implement
// (kKernelOpset-kMaxOpset) load where every node converts to it; newer ones are refused.
inline constexpr int kMinIrVersion = 3;
inline constexpr int kMaxIrVersion = 10;
inline constexpr int kMinOpset = 1;
inline constexpr int kMaxOpset = 21;
// ONNX dims are int64, but no tensor fovea runs has a dim near 2^31; one that large is a corrupt or
// hostile file, and rejecting it keeps size arithmetic far from overflow.
inline constexpr std::int64_t kMaxTensorDim = std::int64_t{1} << 31;

struct LoadOptions {
  // Upper bound on the bytes of all initializers together (a guard against files that would make
  // us allocate without limit). 16 GiB leaves room for the largest models we run.
  std::uint64_t max_total_tensor_bytes = std::uint64_t{16} << 30;
  // Check that IR version and opsets lie in the supported ranges. The conformance driver turns
  // this off only to report how older test models would fare; nothing else should.
  bool check_versions = true;
};

struct Model {
  Graph graph;
  std::int64_t ir_version = 0;
  std::string producer;  // "pytorch 2.11", from producer_name and producer_version
  int default_opset = 0;
};

// Reads `path` (and external-data files next to it).
Result<Model> load_onnx(const std::filesystem::path& path, const LoadOptions& options = {});
// Parses a model held in memory; `name` is used in errors and `base_dir` resolves external data.
Result<Model> parse_onnx(std::string_view bytes, const std::string& name,
                         const std::filesystem::path& base_dir, const LoadOptions& options = {});

// fovea's element type for an ONNX TensorProto data type code (Cast's `to` holds one too); an
// unsupported type is an error naming it.
Result<DataType> data_type_from_onnx(std::int64_t onnx_type);

// Parses a serialized TensorProto (the .pb files of ONNX's test data); `name` is used in errors.
Result<Tensor> parse_onnx_tensor(std::string_view bytes, const std::string& name);

}  // namespace fovea::runtime
