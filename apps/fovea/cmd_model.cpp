// fovea model info|run|bench|calibrate: what a model holds and costs, running it on the CPU or CUDA
// with .npy files, timing the CUDA executor over batch sizes, and the calibration int8 runs with
// (cmd_calibrate.cpp).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cmd_calibrate.h"
#include "commands.h"
#include "core/log.h"
#include "core/output_file.h"
#include "model_device.h"
#include "runtime/evaluate.h"
#include "runtime/npy.h"
#include "runtime/onnx_loader.h"
#include "runtime/parallel.h"
#include "runtime/quant/quantize_graph.h"

namespace fovea::app {
namespace {

using runtime::Shape;

struct ModelArgs {
  std::string model;
  std::vector<std::string> shapes;  // name=1x3x224x224
  std::vector<std::string> inputs;  // name=file.npy
  std::string output_dir = ".";
  std::string device = "cpu";
  std::string precision = "fp32";
  std::vector<std::string> keep_fp32;  // node names or op types kept in float32 under fp16
  std::string calibration;             // --calib, the cache int8 runs with
  std::vector<std::string> keep_fp16;  // node names or op types left unquantized under int8
  bool fp16_residuals = false;         // int8 on CUDA: residual streams in float16
  bool no_cuda_graph = false;
  std::string engine_cache;  // folder of planned engines (CUDA)
  std::vector<std::int64_t> batches{1};
  int warmup = 20;
  int iterations = 200;
  double min_seconds = 1.0;  // model bench: the shortest warm-up and back-to-back loop per batch
  int repeat = 1;
  bool json = false;
  bool graph = false;     // model info --graph: print the planned graph
  std::string trace_dir;  // --trace: profile the runs into this folder
};

Result<std::pair<std::string, std::string>> split_assignment(const std::string& text, const char* what) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return make_error(StatusCode::kInvalidArgument, "'", text, "' is not ", what);
  }
  return std::pair{text.substr(0, eq), text.substr(eq + 1)};
}

Result<runtime::InputShapes> parse_shapes(const std::vector<std::string>& texts) {
  runtime::InputShapes shapes;
  for (const std::string& text : texts) {
    FOVEA_ASSIGN_OR_RETURN(auto pair, split_assignment(text, "NAME=DxDxD (e.g. input=1x3x224x224)"));
    Shape shape;
    std::size_t pos = 0;
    const std::string& dims = pair.second;
    while (pos <= dims.size()) {
      const std::size_t next = std::min(dims.find('x', pos), dims.size());
      const std::string part = dims.substr(pos, next - pos);
      if (part.empty() || part.size() > 10 || part.find_first_not_of("0123456789") != std::string::npos) {
        return make_error(StatusCode::kInvalidArgument, "--shape ", text, ": '", part,
                          "' is not a dimension");
      }
      shape.push_back(std::stoll(part));
      pos = next + 1;
    }
    shapes[pair.first] = std::move(shape);
  }
  return shapes;
}

// The session's options from --device, --precision, --calib, --keep-fp16, --keep-fp32, --no-cuda-graph
// and --engine-cache. int8 runs on both devices (the CPU runs it as the reference, with the
// quantization written out); the other precisions and the last three are CUDA's (their help says
// so): on the CPU the model runs in fp32, planned each time.
Result<runtime::SessionOptions> session_options(const ModelArgs& args) {
  runtime::SessionOptions options;
  FOVEA_ASSIGN_OR_RETURN(options.device, runtime::parse_device(args.device));
  FOVEA_ASSIGN_OR_RETURN(const runtime::Precision precision, runtime::parse_precision(args.precision));
  if (precision == runtime::Precision::kInt8) {
    if (args.calibration.empty()) {
      return make_error(
          StatusCode::kInvalidArgument,
          "--precision int8 needs --calib FILE, the cache `fovea model calibrate` makes for this "
          "model");
    }
    options.precision = precision;
    options.calibration = args.calibration;
    options.keep_unquantized = args.keep_fp16;
    options.int8_residuals = !args.fp16_residuals;
  } else if (!args.calibration.empty() || !args.keep_fp16.empty() || args.fp16_residuals) {
    return make_error(StatusCode::kInvalidArgument,
                      "--calib, --keep-fp16 and --fp16-residuals are for --precision int8");
  }
  if (options.device == runtime::Device::kCpu) return options;
  options.precision = precision;
  options.keep_float32 = args.keep_fp32;
  options.use_cuda_graph = !args.no_cuda_graph;
  options.engine_cache = args.engine_cache;
  return options;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 3) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", bytes, units[unit]);
}

// 1234567 -> "1.235 M": a small model at a small size is not "0.000 G".
std::string human_flops(double flops) {
  if (flops >= 1e9) return fmt::format("{:.3f} G", flops / 1e9);
  if (flops >= 1e6) return fmt::format("{:.3f} M", flops / 1e6);
  if (flops >= 1e3) return fmt::format("{:.3f} k", flops / 1e3);
  return fmt::format("{:.0f}", flops);
}

// Per input that --shape left open, its symbolic dims ("N", "H", or "dim 2" for a nameless one):
// they are planned as 1, which the output says, so that a count at 1x1 pixels is not taken for
// the model's cost.
std::map<std::string, std::vector<std::string>> assumed_dims(const runtime::Graph& graph,
                                                             const runtime::InputShapes& overrides) {
  std::map<std::string, std::vector<std::string>> assumed;
  for (auto id : graph.inputs) {
    const runtime::Value& input = graph.value(id);
    if (overrides.contains(input.name) || !input.type.dims) continue;
    const runtime::Dims& dims = *input.type.dims;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (!dims[i].known())
        assumed[input.name].push_back(dims[i].symbol.empty() ? fmt::format("dim {}", i) : dims[i].symbol);
    }
  }
  return assumed;
}

std::string type_text(const runtime::ValueType& type) {
  return fmt::format("{} {}", data_type_name(type.dtype),
                     type.dims ? runtime::dims_string(*type.dims) : "[rank unknown]");
}

double node_flops(const runtime::Graph& graph, const runtime::Node& node) {
  std::vector<Shape> inputs;
  std::vector<Shape> outputs;
  auto shape_or_empty = [&](runtime::ValueId id) {
    if (id == runtime::kNoValue) return Shape{};
    const auto& dims = graph.value(id).type.dims;
    return dims && runtime::all_known(*dims) ? runtime::shape_of(*dims) : Shape{};
  };
  for (auto id : node.inputs) inputs.push_back(shape_or_empty(id));
  for (auto id : node.outputs) outputs.push_back(shape_or_empty(id));
  const runtime::OpDef* def = runtime::find_op(node.domain, node.op_type);
  if (def != nullptr && def->flops != nullptr) return def->flops(node, inputs, outputs);
  double elements = 0;
  for (const Shape& s : outputs) elements += static_cast<double>(runtime::element_count(s));
  return elements;
}

// --precision int8: each convolution and matrix product of the int8 plan with the precision it runs
// in ("int8", or the float type of a layer left out: --keep-fp16, or no range in the cache).
Result<std::map<std::string, std::string>> layer_precisions(const runtime::Graph& graph,
                                                            const runtime::InputShapes& shapes,
                                                            const ModelArgs& args) {
  FOVEA_ASSIGN_OR_RETURN(runtime::SessionOptions options, session_options(args));
  options.device = runtime::Device::kCpu;
  FOVEA_ASSIGN_OR_RETURN(auto session, runtime::InferenceSession::create(graph, shapes, options));
  const runtime::Graph& planned = session->plan().graph;
  std::map<std::string, std::string> layers;
  for (const runtime::Node& node : planned.nodes) {
    if (runtime::quant::is_quantizable_op(node))
      layers[node.name] = runtime::quant::node_precision(planned, node);
  }
  return layers;
}

// One operand of a node for --graph: its name and type, or "(const)" for a plan-time constant.
std::string operand_text(const runtime::Graph& graph, runtime::ValueId id) {
  if (id == runtime::kNoValue) return "-";
  const runtime::Value& value = graph.value(id);
  if (graph.is_constant(id)) return value.name + " (const " + type_text(value.type) + ")";
  return value.name + " " + type_text(value.type);
}

// --graph: the plan the session would run, a node a line in execution order.
int print_planned_graph(const runtime::Graph& graph, const runtime::InputShapes& shapes,
                        const ModelArgs& args) {
  auto options = session_options(args);
  if (!options.is_ok()) {
    log_error("{}", options.status().to_string());
    return kExitUsage;
  }
  options->engine_cache.clear();
  auto plan = runtime::plan_session(graph, shapes, *options);
  if (!plan.is_ok()) {
    log_error("{}", plan.status().to_string());
    return kExitFailure;
  }
  const runtime::Graph& planned = plan->graph;
  std::printf("%s: %zu nodes planned for %s %s\n", args.model.c_str(), planned.nodes.size(),
              args.device.c_str(), args.precision.c_str());
  for (const runtime::Node& node : planned.nodes) {
    std::vector<std::string> inputs, outputs;
    for (runtime::ValueId id : node.inputs) inputs.push_back(operand_text(planned, id));
    for (runtime::ValueId id : node.outputs) outputs.push_back(operand_text(planned, id));
    std::printf("%s  %s%s  %s -> %s\n", node.name.c_str(),
                node.domain.empty() ? "" : (node.domain + ".").c_str(), node.op_type.c_str(),
                fmt::format("{}", fmt::join(inputs, ", ")).c_str(),
                fmt::format("{}", fmt::join(outputs, ", ")).c_str());
  }
  return kExitOk;
}

int run_info(const ModelArgs& args) {
  auto model = runtime::load_onnx(args.model);
  if (!model.is_ok()) {
    log_error("{}", model.status().to_string());
    return kExitFailure;
  }
  const runtime::Graph& graph = model->graph;
  auto overrides = parse_shapes(args.shapes);
  if (!overrides.is_ok()) {
    log_error("{}", overrides.status().to_string());
    return kExitUsage;
  }
  // Unknown dims (a symbolic batch) count as 1 unless --shape says otherwise.
  auto shapes = runtime::resolve_input_shapes(graph, *overrides, 1);
  if (!shapes.is_ok()) {
    log_error("{}", shapes.status().with_context("--shape").to_string());
    return kExitUsage;
  }
  if (args.graph) return print_planned_graph(graph, *shapes, args);
  auto plan = runtime::plan_graph(graph, *shapes);
  if (!plan.is_ok()) {
    log_error("{}", plan.status().to_string());
    return kExitFailure;
  }

  std::map<std::string, int> histogram;
  for (const auto& node : graph.nodes)
    ++histogram[(node.domain.empty() ? "" : node.domain + ".") + node.op_type];
  double parameters = 0;
  for (const auto& value : graph.values) {
    if (value.constant) parameters += static_cast<double>(value.constant->numel());
  }
  double flops = 0;
  for (const auto& node : plan->graph.nodes) flops += node_flops(plan->graph, node);
  const auto assumed = assumed_dims(graph, *overrides);

  nlohmann::json report;
  report["model"] = args.model;
  report["producer"] = model->producer;
  report["ir_version"] = model->ir_version;
  report["opset"] = model->default_opset;
  for (auto id : graph.inputs) report["inputs"][graph.value(id).name] = type_text(graph.value(id).type);
  for (auto id : graph.outputs) report["outputs"][graph.value(id).name] = type_text(graph.value(id).type);
  report["ops"] = histogram;
  report["nodes"] = graph.nodes.size();
  report["parameters"] = parameters;
  for (const auto& [name, shape] : plan->input_shapes)
    report["planned_for"][name] = runtime::shape_string(shape);
  report["flops"] = flops;
  for (const auto& [name, dims] : assumed) report["assumed_as_1"][name] = dims;
  report["planned_nodes"] = plan->graph.nodes.size();
  report["arena_bytes"] = plan->memory.arena_bytes;
  report["naive_bytes"] = plan->memory.naive_bytes;
  std::map<std::string, std::string> layers;
  if (args.precision == "int8") {
    if (auto options = session_options(args); !options.is_ok()) {
      log_error("{}", options.status().to_string());
      return kExitUsage;  // as model run and bench answer a missing --calib
    }
    auto precisions = layer_precisions(graph, *shapes, args);
    if (!precisions.is_ok()) {
      log_error("{}", precisions.status().to_string());
      return kExitFailure;
    }
    layers = std::move(*precisions);
    report["layers"] = layers;
  }
  std::optional<runtime::SessionMemory> device_memory;
  if (args.device == "cuda") {
    auto options = session_options(args);
    auto memory = options.is_ok() ? cuda_memory(graph, *shapes, *options)
                                  : Result<runtime::SessionMemory>(options.status());
    if (!memory.is_ok()) {
      log_error("{}", memory.status().to_string());
      return kExitFailure;
    }
    device_memory = *memory;
    report["cuda"] = {{"precision", args.precision},          {"weights_bytes", memory->weights},
                      {"arena_bytes", memory->arena},         {"io_bytes", memory->io},
                      {"workspace_bytes", memory->workspace}, {"total_bytes", memory->total()}};
  }
  if (args.json) {
    std::printf("%s\n", report.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%s\n  producer    %s, IR %lld, opset %d\n", args.model.c_str(), model->producer.c_str(),
              static_cast<long long>(model->ir_version), model->default_opset);
  for (auto id : graph.inputs)
    std::printf("  input       %s: %s\n", graph.value(id).name.c_str(),
                type_text(graph.value(id).type).c_str());
  for (auto id : graph.outputs)
    std::printf("  output      %s: %s\n", graph.value(id).name.c_str(),
                type_text(graph.value(id).type).c_str());
  std::printf("  parameters  %.2f M\n  nodes       %zu (%zu after folding and fusion)\n  ops        ",
              parameters / 1e6, graph.nodes.size(), plan->graph.nodes.size());
  for (const auto& [op, count] : histogram) std::printf(" %s:%d", op.c_str(), count);
  std::printf("\n");
  for (const auto& [name, shape] : plan->input_shapes) {
    std::printf("  at          %s = %s", name.c_str(), runtime::shape_string(shape).c_str());
    if (auto it = assumed.find(name); it != assumed.end()) {
      std::printf(" (%s symbolic in the model, taken as 1: --shape %s=... sets them)",
                  fmt::format("{}", fmt::join(it->second, ", ")).c_str(), name.c_str());
    }
    std::printf("\n");
  }
  if (!layers.empty()) {
    const auto int8 =
        std::count_if(layers.begin(), layers.end(), [](const auto& l) { return l.second == "int8"; });
    std::printf("  int8        %td of %zu convolutions and matrix products\n", int8, layers.size());
    for (const auto& [name, precision] : layers) {
      if (precision != "int8") std::printf("  kept        %s: %s\n", name.c_str(), precision.c_str());
    }
  }
  std::printf("  FLOPs       %s\n  arena       %s (naive sum of intermediates %s, %.1fx smaller)\n",
              human_flops(flops).c_str(), human_bytes(static_cast<double>(plan->memory.arena_bytes)).c_str(),
              human_bytes(static_cast<double>(plan->memory.naive_bytes)).c_str(),
              plan->memory.arena_bytes ? static_cast<double>(plan->memory.naive_bytes) /
                                             static_cast<double>(plan->memory.arena_bytes)
                                       : 1.0);
  if (device_memory) {
    std::printf(
        "  GPU memory  %s in all for the CUDA plan (%s): weights %s, arena %s, inputs and outputs %s, "
        "workspace %s\n",
        human_bytes(static_cast<double>(device_memory->total())).c_str(), args.precision.c_str(),
        human_bytes(static_cast<double>(device_memory->weights)).c_str(),
        human_bytes(static_cast<double>(device_memory->arena)).c_str(),
        human_bytes(static_cast<double>(device_memory->io)).c_str(),
        human_bytes(static_cast<double>(device_memory->workspace)).c_str());
  }
  return kExitOk;
}

Result<std::vector<runtime::Tensor>> read_inputs(const runtime::Graph& graph,
                                                 const std::vector<std::string>& texts,
                                                 runtime::InputShapes& shapes) {
  std::map<std::string, runtime::Tensor> by_name;
  for (const std::string& text : texts) {
    FOVEA_ASSIGN_OR_RETURN(auto pair, split_assignment(text, "NAME=FILE.npy"));
    if (by_name.count(pair.first) > 0) {
      return make_error(StatusCode::kInvalidArgument, "'", pair.first, "' is given twice");
    }
    FOVEA_ASSIGN_OR_RETURN(by_name[pair.first], runtime::read_npy(pair.second));
  }
  std::vector<runtime::Tensor> inputs;
  for (auto id : graph.inputs) {
    const std::string& name = graph.value(id).name;
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      return make_error(StatusCode::kInvalidArgument, "no --input for the model's input '", name, "'");
    }
    shapes[name] = it->second.shape();
    inputs.push_back(it->second);
    by_name.erase(it);
  }
  if (!by_name.empty()) {
    return make_error(StatusCode::kInvalidArgument, "'", by_name.begin()->first,
                      "' is not an input of the model");
  }
  return inputs;
}

// Output names may hold characters a file name cannot.
std::string file_name_for(const std::string& value_name) {
  std::string name = value_name;
  for (char& c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) c = '_';
  }
  return name;
}

// Each output's file in --output-dir: NAME.npy with NAME's unsafe characters as '_'; where two
// names come out the same ("a/b" and "a_b"), the later one takes its output index too (a_b.2.npy),
// so that no output overwrites another.
std::vector<std::filesystem::path> output_paths(const ModelArgs& args, const runtime::Graph& graph) {
  std::vector<std::filesystem::path> paths;
  std::set<std::string> taken;
  for (std::size_t i = 0; i < graph.outputs.size(); ++i) {
    const std::string stem = file_name_for(graph.value(graph.outputs[i]).name);
    std::string file = stem + ".npy";
    for (std::size_t k = i; !taken.insert(file).second; ++k) file = stem + "." + std::to_string(k) + ".npy";
    paths.push_back(std::filesystem::path(args.output_dir) / file);
  }
  return paths;
}

// Before the run: no NAME.npy it will write may be one of its inputs (an --input file, the
// model), and --output-dir must be writable.
Status check_run_outputs(const ModelArgs& args, const runtime::Graph& graph) {
  std::vector<PlannedOutput> outputs{{.what = "--output-dir", .path = args.output_dir, .is_folder = true}};
  for (const std::filesystem::path& path : output_paths(args, graph))
    outputs.push_back({.what = "--output-dir: output", .path = path});
  std::vector<std::string> inputs{args.model};
  for (const std::string& input : args.inputs) inputs.push_back(input.substr(input.find('=') + 1));
  return check_outputs(outputs, inputs);
}

// Writes each output as NAME.npy into --output-dir and prints where it went.
Status write_outputs(const ModelArgs& args, const runtime::Graph& graph,
                     const std::vector<runtime::Tensor>& outputs) {
  const std::vector<std::filesystem::path> paths = output_paths(args, graph);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = graph.value(graph.outputs[i]).name;
    const std::filesystem::path& path = paths[i];
    FOVEA_TRY(runtime::write_npy(path, outputs[i]));
    std::printf("%s: %s %s -> %s\n", name.c_str(), std::string(data_type_name(outputs[i].dtype())).c_str(),
                runtime::shape_string(outputs[i].shape()).c_str(), path.string().c_str());
  }
  return Status::ok();
}

int run_model(const ModelArgs& args) {
  if (args.device != "cpu" && args.device != "cuda") {
    log_error("--device {}: use cpu or cuda", args.device);
    return kExitUsage;
  }
  auto model = runtime::load_onnx(args.model);
  if (!model.is_ok()) {
    log_error("{}", model.status().to_string());
    return kExitFailure;
  }
  if (Status checked = check_run_outputs(args, model->graph); !checked.is_ok()) {
    log_error("{}", checked.to_string());
    return kExitUsage;
  }
  runtime::InputShapes shapes;
  auto inputs = read_inputs(model->graph, args.inputs, shapes);
  if (!inputs.is_ok()) {
    // A file that is not there, or inputs that do not match the model, are the command line's
    // mistake; a damaged .npy file is bad input.
    const StatusCode code = inputs.status().code();
    log_error("{}", inputs.status().with_context("--input").to_string());
    return code == StatusCode::kInvalidArgument || code == StatusCode::kNotFound ? kExitUsage : kExitFailure;
  }
  auto options = session_options(args);
  if (!options.is_ok()) {
    log_error("{}", options.status().to_string());
    return kExitUsage;
  }
  // A model CUDA cannot plan whole (a detector's postprocess) finishes on the CPU executor.
  options->cpu_tail = true;
  auto result = run_model_session(model->graph, shapes, *inputs, args.repeat, *options, args.trace_dir);
  if (!result.is_ok()) {
    log_error("{}", result.status().to_string());
    return kExitFailure;
  }
  if (Status s = write_outputs(args, model->graph, result->outputs); !s.is_ok()) {
    log_error("{}", s.to_string());
    return kExitFailure;
  }
  // The first run pays for first-touch page faults and thread start-up; with --repeat the
  // median of the runs is the steady-state figure.
  const double first = result->run_ms.front();
  std::sort(result->run_ms.begin(), result->run_ms.end());
  const double median = result->run_ms[result->run_ms.size() / 2];
  if (options->device == runtime::Device::kCuda) {
    std::printf(
        "planned and prepared in %.1f ms, ran in %.2f ms (median of %d runs, copies included; the first "
        "took %.2f ms) on CUDA in %s\n",
        result->setup_ms, median, args.repeat, first, args.precision.c_str());
  } else {
    std::printf(
        "planned in %.1f ms, ran in %.1f ms (median of %d runs; the first took %.1f ms) on %d CPU threads "
        "(arena %.1f MiB)\n",
        result->setup_ms, median, args.repeat, first, runtime::cpu_thread_count(),
        static_cast<double>(result->arena_bytes) / (1 << 20));
  }
  return kExitOk;
}

int run_bench(const ModelArgs& args) {
  auto model = runtime::load_onnx(args.model);
  if (!model.is_ok()) {
    log_error("{}", model.status().to_string());
    return kExitFailure;
  }
  auto overrides = parse_shapes(args.shapes);
  auto options = session_options(args);
  if (!overrides.is_ok() || !options.is_ok()) {
    log_error("{}", (!overrides.is_ok() ? overrides.status() : options.status()).to_string());
    return kExitUsage;
  }
  auto shapes = runtime::resolve_input_shapes(model->graph, *overrides, 1);
  if (!shapes.is_ok()) {
    log_error("{}", shapes.status().with_context("--shape").to_string());
    return kExitUsage;
  }
  const BenchOptions bench{.session = *options,
                           .warmup = args.warmup,
                           .iterations = args.iterations,
                           .min_seconds = args.min_seconds};
  nlohmann::json report = nlohmann::json::array();
  if (!args.json) {
    std::printf(
        "%s on CUDA, %s, CUDA graph %s; per batch: warm-up of %d runs and %.1f s at least, %d runs one at a "
        "time (latency), then back to back for %d runs and %.1f s at least (items/s)\n",
        args.model.c_str(), args.precision.c_str(), args.no_cuda_graph ? "off" : "on", args.warmup,
        args.min_seconds, args.iterations, args.iterations, args.min_seconds);
    std::printf("%8s %12s %12s %14s %12s %10s %8s\n", "batch", "p50 ms", "p99 ms", "items/s", "GPU memory",
                "plan s", "allocs");
  }
  for (std::int64_t batch : args.batches) {
    auto point = bench_on_cuda(model->graph, *shapes, batch, bench);
    if (!point.is_ok()) {
      log_error("batch {}: {}", batch, point.status().to_string());
      return kExitFailure;
    }
    report.push_back({{"batch", batch},
                      {"latency_p50_ms", point->latency_p50_ms},
                      {"latency_p99_ms", point->latency_p99_ms},
                      {"items_per_second", point->throughput},
                      {"warmup_runs", point->warmup_runs},
                      {"timed_runs", point->timed_runs},
                      {"device_bytes", point->device_bytes},
                      {"plan_ms", point->plan_ms},
                      {"allocations_during_runs", point->allocations_during_runs},
                      {"free_memory_change_bytes", point->free_memory_change},
                      {"cuda_graph", point->cuda_graph}});
    if (!args.json) {
      std::printf("%8lld %12.3f %12.3f %14.1f %12s %10.1f %8d\n", static_cast<long long>(batch),
                  point->latency_p50_ms, point->latency_p99_ms, point->throughput,
                  human_bytes(static_cast<double>(point->device_bytes)).c_str(), point->plan_ms / 1000.0,
                  point->allocations_during_runs);
    }
  }
  if (args.json) std::printf("%s\n", report.dump(2).c_str());
  return kExitOk;
}

// --device, --precision, --calib, --keep-fp16, --keep-fp32 and --no-cuda-graph, for the subcommands that
// run on CUDA.
// `devices` lists what --device accepts ("cpu" and "cuda", or "cuda" alone where only CUDA is timed).
void add_device_options(CLI::App* command, ModelArgs* args, const std::vector<std::string>& devices) {
  args->device = devices.front();
  command->add_option("--device", args->device, fmt::format("{}", fmt::join(devices, " or ")))
      ->check(CLI::IsMember(devices))
      ->capture_default_str();
  command
      ->add_option("--precision", args->precision,
                   "CUDA: fp32, or fp16 (half storage, float accumulation); int8 (with --calib) on either "
                   "device, the CPU running it as the reference")
      ->check(CLI::IsMember({"fp32", "fp16", "int8"}))
      ->capture_default_str();
  command
      ->add_option("--calib", args->calibration,
                   "With int8: the calibration cache made for this model (fovea model calibrate)")
      ->check(CLI::ExistingFile);
  command->add_option("--keep-fp16", args->keep_fp16,
                      "With int8: a node name or op type left unquantized, run as the float plan runs it "
                      "(repeatable)");
  command->add_flag("--fp16-residuals", args->fp16_residuals,
                    "With int8 on CUDA: keep ResNet-style residual streams in fp16 (the next layer's input "
                    "quantized apart) instead of int8: slower, without the residual's int8 rounding");
  command->add_option("--keep-fp32", args->keep_fp32,
                      "With fp16: a node name or op type that stays in fp32 "
                      "(repeatable)");
  command->add_flag("--no-cuda-graph", args->no_cuda_graph, "CUDA: launch node by node instead of one graph");
  command->add_option("--engine-cache", args->engine_cache,
                      "CUDA: keep planned engines in DIR (one per model, shapes, precision and GPU); a stale "
                      "one is planned again, and the log says why");
}

}  // namespace

void add_model_command(CLI::App& app, Action* action) {
  CLI::App* model = app.add_subcommand("model", "Inspect and run ONNX models");
  model->require_subcommand(1);

  // Each subcommand has its own arguments: their defaults differ (bench runs on CUDA).
  auto args = std::make_shared<ModelArgs>();
  CLI::App* info =
      model->add_subcommand("info", "Inputs, outputs, op histogram, parameters, FLOPs and arena size");
  info->add_option("MODEL", args->model, "ONNX file")->required()->check(CLI::ExistingFile);
  info->add_option("--shape", args->shapes,
                   "Input shape for planning, NAME=1x3x224x224 (unknown dims default to 1)");
  info->add_flag("--json", args->json, "Print JSON");
  info->add_flag("--graph", args->graph,
                 "Print the planned graph instead, a node a line (after folding and fusion, as --device and "
                 "--precision plan it): name, op, inputs -> outputs with their types");
  add_device_options(info, args.get(), {"cpu", "cuda"});
  info->callback([args, action] { *action = [args] { return run_info(*args); }; });

  args = std::make_shared<ModelArgs>();
  CLI::App* run = model->add_subcommand("run", "Run a model on .npy inputs and write .npy outputs");
  run->add_option("MODEL", args->model, "ONNX file")->required()->check(CLI::ExistingFile);
  run->add_option("--input", args->inputs,
                  "NAME=FILE.npy, one per model input (none for a model without inputs)");
  run->add_option("--output-dir", args->output_dir, "Folder for the outputs (one NAME.npy each)")
      ->capture_default_str();
  run->add_option("--repeat", args->repeat, "Run N times and report the median time")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  add_device_options(run, args.get(), {"cpu", "cuda"});
  run->add_option("--trace", args->trace_dir,
                  "Profile the runs into DIR (trace.json, report.json; see fovea report)");
  run->callback([args, action] { *action = [args] { return run_model(*args); }; });

  args = std::make_shared<ModelArgs>();
  CLI::App* bench =
      model->add_subcommand("bench", "Time the CUDA executor: latency p50/p99 and throughput per batch");
  bench->add_option("MODEL", args->model, "ONNX file")->required()->check(CLI::ExistingFile);
  bench->add_option(
      "--shape", args->shapes,
      "Input shape, NAME=1x3x224x224 (dim 0 is replaced by each --batch; unknown dims default to 1)");
  bench->add_option("--batch", args->batches, "Batch sizes, e.g. 1,4,16")
      ->delimiter(',')
      ->check(at_least(1))
      ->capture_default_str();
  bench->add_option("--warmup", args->warmup, "Untimed runs first")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  bench
      ->add_option("--iterations", args->iterations,
                   "Runs one at a time for the latency, and the fewest back to back for items/s")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  bench
      ->add_option("--seconds", args->min_seconds,
                   "Shortest warm-up and back-to-back loop per batch: a GPU at its power limit slows "
                   "within a second or so of full load, so every batch is timed in that state")
      ->check(number_in(0.0, 600.0))
      ->capture_default_str();
  bench->add_flag("--json", args->json, "Print JSON");
  add_device_options(bench, args.get(), {"cuda"});
  bench->callback([args, action] { *action = [args] { return run_bench(*args); }; });

  add_calibrate_command(model, action);
}

}  // namespace fovea::app
