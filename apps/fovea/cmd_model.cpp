// fovea model info|run: what a model holds and costs, and running it on the CPU with .npy files.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "commands.h"
#include "core/log.h"
#include "runtime/cpu_executor.h"
#include "runtime/evaluate.h"
#include "runtime/npy.h"
#include "runtime/onnx_loader.h"
#include "runtime/parallel.h"
#include "trace/session.h"
#include "trace/tracer.h"

namespace fovea::app {
namespace {

using runtime::Shape;

struct ModelArgs {
  std::string model;
  std::vector<std::string> shapes;  // name=1x3x224x224
  std::vector<std::string> inputs;  // name=file.npy
  std::string output_dir = ".";
  std::string device = "cpu";
  int repeat = 1;
  bool json = false;
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

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 3) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", bytes, units[unit]);
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
  auto plan =
      shapes.is_ok() ? runtime::plan_graph(graph, *shapes) : Result<runtime::ExecutionPlan>(shapes.status());
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
  report["planned_nodes"] = plan->graph.nodes.size();
  report["arena_bytes"] = plan->memory.arena_bytes;
  report["naive_bytes"] = plan->memory.naive_bytes;
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
    std::printf("  at          %s = %s\n", name.c_str(), runtime::shape_string(shape).c_str());
  }
  std::printf("  FLOPs       %.3f G\n  arena       %s (naive sum of intermediates %s, %.1fx smaller)\n",
              flops / 1e9, human_bytes(static_cast<double>(plan->memory.arena_bytes)).c_str(),
              human_bytes(static_cast<double>(plan->memory.naive_bytes)).c_str(),
              plan->memory.arena_bytes ? static_cast<double>(plan->memory.naive_bytes) /
                                             static_cast<double>(plan->memory.arena_bytes)
                                       : 1.0);
  return kExitOk;
}

Result<std::vector<runtime::Tensor>> read_inputs(const runtime::Graph& graph,
                                                 const std::vector<std::string>& texts,
                                                 runtime::InputShapes& shapes) {
  std::map<std::string, runtime::Tensor> by_name;
  for (const std::string& text : texts) {
    FOVEA_ASSIGN_OR_RETURN(auto pair, split_assignment(text, "NAME=FILE.npy"));
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
  return name + ".npy";
}

int run_model(const ModelArgs& args) {
  if (args.device != "cpu") {
    log_error("--device {}: only the CPU executor exists so far", args.device);
    return kExitUsage;
  }
  auto model = runtime::load_onnx(args.model);
  if (!model.is_ok()) {
    log_error("{}", model.status().to_string());
    return kExitFailure;
  }
  runtime::InputShapes shapes;
  auto inputs = read_inputs(model->graph, args.inputs, shapes);
  if (!inputs.is_ok()) {
    log_error("{}", inputs.status().to_string());
    return kExitFailure;
  }
  const auto plan_start = std::chrono::steady_clock::now();
  auto plan = runtime::plan_graph(model->graph, shapes);
  if (!plan.is_ok()) {
    log_error("{}", plan.status().to_string());
    return kExitFailure;
  }
  runtime::CpuExecutor executor(std::move(plan).value());
  // The first run pays for first-touch page faults and thread start-up; with --repeat the
  // median of the runs is the steady-state figure.
  using ms = std::chrono::duration<double, std::milli>;
  std::vector<double> times;
  Result<std::vector<runtime::Tensor>> outputs = std::vector<runtime::Tensor>{};
  const auto run_start = std::chrono::steady_clock::now();
  auto trace_session = trace::start_session_if_requested({.dir = args.trace_dir});
  if (!trace_session.is_ok()) {
    log_error("{}", trace_session.status().to_string());
    return kExitFailure;
  }
  trace::StartEndRange pipeline_range("pipeline");
  for (int r = 0; r < args.repeat; ++r) {
    FOVEA_TRACE_RANGE("inference", r);
    const auto start = std::chrono::steady_clock::now();
    outputs = executor.run(*inputs);
    times.push_back(ms(std::chrono::steady_clock::now() - start).count());
    if (!outputs.is_ok()) {
      log_error("{}", outputs.status().to_string());
      return kExitFailure;
    }
  }
  pipeline_range.end();
  const double first = times.front();
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::error_code ec;
  std::filesystem::create_directories(args.output_dir, ec);
  const runtime::Graph& graph = executor.plan().graph;
  for (std::size_t i = 0; i < outputs->size(); ++i) {
    const std::string& name = graph.value(graph.outputs[i]).name;
    const auto path = std::filesystem::path(args.output_dir) / file_name_for(name);
    if (Status s = runtime::write_npy(path, (*outputs)[i]); !s.is_ok()) {
      log_error("{}", s.to_string());
      return kExitFailure;
    }
    std::printf("%s: %s %s -> %s\n", name.c_str(), std::string(data_type_name((*outputs)[i].dtype())).c_str(),
                runtime::shape_string((*outputs)[i].shape()).c_str(), path.string().c_str());
  }
  std::printf(
      "planned in %.1f ms, ran in %.1f ms (median of %d runs; the first took %.1f ms) on %d CPU threads "
      "(arena %.1f MiB)\n",
      ms(run_start - plan_start).count(), median, args.repeat, first, runtime::cpu_thread_count(),
      static_cast<double>(executor.plan().memory.arena_bytes) / (1 << 20));
  return kExitOk;
}

}  // namespace

void add_model_command(CLI::App& app, Action* action) {
  auto args = std::make_shared<ModelArgs>();
  CLI::App* model = app.add_subcommand("model", "Inspect and run ONNX models");
  model->require_subcommand(1);

  CLI::App* info =
      model->add_subcommand("info", "Inputs, outputs, op histogram, parameters, FLOPs and arena size");
  info->add_option("MODEL", args->model, "ONNX file")->required()->check(CLI::ExistingFile);
  info->add_option("--shape", args->shapes,
                   "Input shape for planning, NAME=1x3x224x224 (unknown dims default to 1)");
  info->add_flag("--json", args->json, "Print JSON");
  info->callback([args, action] { *action = [args] { return run_info(*args); }; });

  CLI::App* run = model->add_subcommand("run", "Run a model on .npy inputs and write .npy outputs");
  run->add_option("MODEL", args->model, "ONNX file")->required()->check(CLI::ExistingFile);
  run->add_option("--input", args->inputs, "NAME=FILE.npy, one per model input")->required();
  run->add_option("--output-dir", args->output_dir, "Folder for the outputs (one NAME.npy each)")
      ->capture_default_str();
  run->add_option("--repeat", args->repeat, "Run N times and report the median time")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  run->add_option("--device", args->device, "cpu (the CUDA executor arrives with the runtime's CUDA issue)")
      ->capture_default_str();
  run->add_option("--trace", args->trace_dir,
                  "Profile the runs into DIR (trace.json, report.json; see fovea report)");
  run->callback([args, action] { *action = [args] { return run_model(*args); }; });
}

}  // namespace fovea::app
