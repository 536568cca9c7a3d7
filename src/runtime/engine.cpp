#include "runtime/engine.h"

#include <cctype>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/log.h"
#include "core/output_file.h"
#include "onnx.pb.h"
#include "runtime/onnx_loader.h"
#include "runtime/onnx_writer.h"

namespace fovea::runtime {

namespace {

// Bumped whenever what an engine holds changes meaning (passes, op attributes, the format).
// 2: NHWC pools, residual biases moved into their readers, float16 interfaces. 3: a linear layer's
// GELU in fovea.Gemm (an engine of format 2 still runs, without the fused GELU).
constexpr const char* kEngineFormat = "3";
constexpr const char* kPrefix = "fovea.engine.";

std::string shapes_text(const InputShapes& shapes) {
  std::vector<std::string> parts;
  for (const auto& [name, shape] : shapes) parts.push_back(fmt::format("{}={}", name, fmt::join(shape, "x")));
  return fmt::format("{}", fmt::join(parts, ";"));
}

Result<std::string> read_bytes(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return make_error(StatusCode::kNotFound, path.string(), ": cannot be opened (missing or unreadable)");
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return bytes;
}

std::string safe(std::string text) {
  for (char& c : text) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) c = '_';
  }
  return text;
}

}  // namespace

std::map<std::string, std::string> EngineKey::fields() const {
  return {{"format", kEngineFormat},
          {"model_digest", model_digest},
          {"input_shapes", shapes_text(input_shapes)},
          {"precision", std::string(precision_name(options.precision))},
          {"keep_float32", fmt::format("{}", fmt::join(options.keep_float32, ","))},
          {"channels_last", options.channels_last ? "1" : "0"},
          {"float16_interface", options.float16_interface ? "1" : "0"},
          {"calibration_digest", calibration_digest},
          {"keep_unquantized", fmt::format("{}", fmt::join(options.keep_unquantized, ","))},
          {"int8_tensor_cores", options.int8_tensor_cores ? "1" : "0"},
          {"int8_residuals", options.int8_residuals ? "1" : "0"},
          {"device", device}};
}

Result<std::string> file_digest(const std::filesystem::path& path) {
  FOVEA_ASSIGN_OR_RETURN(std::string bytes, read_bytes(path));
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return fmt::format("{:016x}", hash);
}

std::filesystem::path engine_path(const std::filesystem::path& cache_dir, const std::filesystem::path& model,
                                  const EngineKey& key) {
  std::string name = safe(model.stem().string()) + "." + std::string(precision_name(key.options.precision));
  if (key.options.channels_last) name += ".nhwc";
  if (key.options.float16_interface) name += ".f16io";
  for (const auto& [input, shape] : key.input_shapes)
    name += fmt::format(".{}-{}", safe(input), fmt::join(shape, "x"));
  return cache_dir / (name + "." + safe(key.device) + ".fovea-engine");
}

Status save_engine(const ExecutionPlan& plan, const EngineKey& key, const std::filesystem::path& path) {
  std::map<std::string, std::string> metadata;
  for (const auto& [field, value] : key.fields()) metadata[kPrefix + field] = value;
  FOVEA_ASSIGN_OR_RETURN(std::string bytes, serialize_onnx(plan.graph, metadata));
  // Written beside the target and renamed, so a reader never sees half an engine.
  return write_file_atomically(path, bytes, "engine");
}

Result<ExecutionPlan> load_engine(const std::filesystem::path& path, const EngineKey& key) {
  FOVEA_ASSIGN_OR_RETURN(std::string bytes, read_bytes(path));
  onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes)) {
    return make_error(StatusCode::kCorruptData, path.string(), ": not an engine (does not parse as ONNX)");
  }
  std::map<std::string, std::string> stored;
  for (const auto& prop : proto.metadata_props()) stored[prop.key()] = prop.value();
  for (const auto& [field, wanted] : key.fields()) {
    const auto it = stored.find(kPrefix + field);
    const std::string found = it == stored.end() ? "(none)" : it->second;
    if (found != wanted) {
      return make_error(StatusCode::kInvalidArgument, path.string(), ": stale, its ", field, " is '", found,
                        "', not '", wanted, "'");
    }
  }
  FOVEA_ASSIGN_OR_RETURN(Model model, parse_onnx(bytes, path.string(), path.parent_path()));
  ExecutionPlan plan;
  plan.graph = std::move(model.graph);
  plan.input_shapes = key.input_shapes;
  plan.options = key.options;
  plan.memory = plan_memory(plan.graph);
  return plan;
}

Result<ExecutionPlan> plan_with_engine_cache(const Graph& graph, const std::filesystem::path& model_path,
                                             const std::filesystem::path& cache_dir, const EngineKey& key) {
  const std::filesystem::path path = engine_path(cache_dir, model_path, key);
  auto cached = load_engine(path, key);
  if (cached.is_ok()) {
    log_info("engine {}: loaded", path.string());
    return cached;
  }
  if (cached.status().code() == StatusCode::kNotFound) {
    log_info("engine {}: none yet, planning", path.string());
  } else {
    log_warn("engine {}; planning again", cached.status().message());
  }
  FOVEA_ASSIGN_OR_RETURN(ExecutionPlan plan, plan_graph(graph, key.input_shapes, key.options));
  if (Status saved = save_engine(plan, key, path); !saved.is_ok()) {
    log_warn("engine {}: not saved: {}", path.string(), saved.to_string());
  }
  return plan;
}

}  // namespace fovea::runtime
