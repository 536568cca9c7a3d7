// Engines: a model planned once for (input shapes, precision, layout, GPU) and cached to disk, so
// a later run skips loading passes and planning. The cache is explicit (the caller names its
// folder) and its file names say what each engine is for:
//
//   <cache>/resnet50.fp16.nhwc.input-1x3x224x224.NVIDIA_H200.fovea-engine
//
// Inside, the planned graph is an ONNX file (onnx_writer.h) whose metadata holds the key: the
// source model's digest, the shapes, the plan options, the device and the engine format. A file
// whose key differs from the request (the model changed, another GPU, another fovea) is stale: it
// is planned again and rewritten, and the log says why, never silently.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "runtime/planner.h"

namespace fovea::runtime {

struct EngineKey {
  std::string model_digest;  // of the source ONNX file's bytes
  InputShapes input_shapes;
  PlanOptions options;
  std::string calibration_digest;  // int8: of the calibration cache's bytes; empty otherwise
  std::string device;              // "NVIDIA H200 sm90", or "cpu"

  // The metadata entries that must match, name by name.
  std::map<std::string, std::string> fields() const;
};

// FNV-1a 64 of the file's bytes, as 16 hex digits.
Result<std::string> file_digest(const std::filesystem::path& path);

// "<model stem>.<precision>[.nhwc].<input>-<dims>....<device>.fovea-engine" (unsafe characters
// replaced), inside `cache_dir`.
std::filesystem::path engine_path(const std::filesystem::path& cache_dir, const std::filesystem::path& model,
                                  const EngineKey& key);

Status save_engine(const ExecutionPlan& plan, const EngineKey& key, const std::filesystem::path& path);

// kNotFound when there is no file; kInvalidArgument naming the first differing field when the
// engine is stale; the loader's errors when it is damaged.
Result<ExecutionPlan> load_engine(const std::filesystem::path& path, const EngineKey& key);

// The engine from `cache_dir` when it is current; otherwise plans `graph` and saves the engine
// there, logging why (no engine yet, or which field is stale). A failure to save is logged and the
// plan still returned.
Result<ExecutionPlan> plan_with_engine_cache(const Graph& graph, const std::filesystem::path& model_path,
                                             const std::filesystem::path& cache_dir, const EngineKey& key);

}  // namespace fovea::runtime
