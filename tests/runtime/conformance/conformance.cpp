#include "conformance/conformance.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "onnx.pb.h"
#include "runtime/cpu_executor.h"
#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_raii.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/cuda/cuda_op.h"
#endif
#include "runtime/onnx_loader.h"
#include "runtime/op.h"
#include "runtime/planner.h"

namespace fovea::runtime::conformance {

namespace {

namespace fs = std::filesystem;

// The optimizer ops of ONNX's training domain; they only make sense inside a training loop.
constexpr std::string_view kTrainingDomain = "ai.onnx.preview.training";
// A kernel stuck in a loop must not hang CI; every case here runs in well under a second.
constexpr int kCaseTimeoutMs = 60'000;

Result<std::string> read_bytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return make_error(StatusCode::kIoError, path.string(), ": cannot open");
  }
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

bool supported_element_type(int onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto_DataType_FLOAT:
    case onnx::TensorProto_DataType_FLOAT16:
    case onnx::TensorProto_DataType_DOUBLE:
    case onnx::TensorProto_DataType_INT64:
    case onnx::TensorProto_DataType_INT32:
    case onnx::TensorProto_DataType_INT8:
    case onnx::TensorProto_DataType_UINT8:
    case onnx::TensorProto_DataType_BOOL: return true;
    default: return false;
  }
}

std::string element_type_name(int onnx_type) {
  return onnx::TensorProto_DataType_IsValid(onnx_type)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(onnx_type))
             : fmt::format("code {}", onnx_type);
}

// Everything in a model that decides whether fovea can run it at all, gathered from the graph
// and its subgraphs before the loader sees it (the loader stops at the first problem; the report
// names them all).
bool has_cuda_kernel(const std::string& domain, const std::string& op_type) {
#if defined(FOVEA_HAVE_CUDA)
  return cuda::find_cuda_op(domain, op_type) != nullptr;
#else
  (void)domain;
  (void)op_type;
  return false;
#endif
}

class ModelSurvey {
 public:
  explicit ModelSurvey(const onnx::ModelProto& model) {
    for (const auto& opset : model.opset_import()) {
      const std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
      opsets_[domain] = opset.version();
    }
    for (const auto& input : model.graph().input()) graph_inputs_.insert(input.name());
    survey_graph(model.graph());
  }

  // The first reason to skip, in the order of kinds that make the others moot.
  std::optional<std::pair<SkipKind, std::string>> skip_reason(const onnx::ModelProto& model,
                                                              const RunOptions& options) const {
    if (options.check_versions) {
      if (model.ir_version() < kMinIrVersion || model.ir_version() > kMaxIrVersion) {
        return std::pair{SkipKind::kVersion, fmt::format("IR version {} outside {}-{}", model.ir_version(),
                                                         kMinIrVersion, kMaxIrVersion)};
      }
      const auto opset = opsets_.find("");
      if (opset != opsets_.end() && (opset->second < kMinOpset || opset->second > kMaxOpset)) {
        return std::pair{SkipKind::kVersion,
                         fmt::format("opset {} outside {}-{}", opset->second, kMinOpset, kMaxOpset)};
      }
    }
    if (!training_.empty()) {
      return std::pair{SkipKind::kTraining, "training: " + join(training_)};
    }
    if (!non_tensor_types_.empty()) {
      return std::pair{SkipKind::kType, join(non_tensor_types_) + " types"};
    }
    if (!element_types_.empty()) {
      return std::pair{SkipKind::kType, "element type " + join(element_types_)};
    }
    if (!unregistered_ops_.empty()) {
      return std::pair{SkipKind::kOp, "unsupported op " + join(unregistered_ops_)};
    }
    if (options.device == Device::kCuda && !no_cuda_kernel_.empty()) {
      return std::pair{SkipKind::kOp, "no CUDA kernel for " + join(no_cuda_kernel_)};
    }
    return std::nullopt;
  }

 private:
  static std::string join(const std::set<std::string>& names) {
    return fmt::format("{}", fmt::join(names, ", "));
  }

  void survey_type(const onnx::TypeProto& type) {
    switch (type.value_case()) {
      case onnx::TypeProto::kTensorType: survey_element_type(type.tensor_type().elem_type()); break;
      case onnx::TypeProto::kSequenceType: non_tensor_types_.insert("sequence"); break;
      case onnx::TypeProto::kMapType: non_tensor_types_.insert("map"); break;
      case onnx::TypeProto::kOptionalType: non_tensor_types_.insert("optional"); break;
      case onnx::TypeProto::kSparseTensorType: non_tensor_types_.insert("sparse tensor"); break;
      default: break;  // no type given: shape inference decides
    }
  }

  void survey_element_type(int onnx_type) {
    if (onnx_type != onnx::TensorProto_DataType_UNDEFINED && !supported_element_type(onnx_type)) {
      element_types_.insert(element_type_name(onnx_type));
    }
  }

  void survey_graph(const onnx::GraphProto& graph) {
    for (const auto* infos : {&graph.input(), &graph.output(), &graph.value_info()}) {
      for (const auto& info : *infos) survey_type(info.type());
    }
    for (const auto& init : graph.initializer()) survey_element_type(init.data_type());
    for (const auto& node : graph.node()) survey_node(node);
  }

  void survey_node(const onnx::NodeProto& node) {
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    const std::string qualified = domain.empty() ? node.op_type() : domain + "." + node.op_type();
    if (domain == kTrainingDomain) {
      training_.insert(qualified);
    } else if (domain.empty() && node.op_type() == "Scan" && opsets_.count("") && opsets_.at("") < 9) {
      unregistered_ops_.insert("Scan before opset 9");  // the batched form (control_flow.h)
    } else if (domain.empty() &&
               (node.op_type() == "If" || node.op_type() == "Loop" || node.op_type() == "Scan")) {
      // The CPU executor runs them (control_flow.h); CUDA plans are static, so there only an If
      // inlined at planning runs, not one on a condition the case feeds.
      const bool run_time_if = node.input_size() > 0 && graph_inputs_.count(node.input(0)) != 0;
      if (node.op_type() != "If" || run_time_if) no_cuda_kernel_.insert(qualified);
    } else if (find_op(domain, node.op_type()) == nullptr) {
      unregistered_ops_.insert(qualified);
    } else if (!has_cuda_kernel(domain, node.op_type())) {
      no_cuda_kernel_.insert(qualified);
    }
    // Dropout's training_mode input draws a random mask, which no reference can reproduce;
    // BatchNormalization's training_mode updates running statistics.
    if (node.op_type() == "Dropout" && node.input_size() > 2 && !node.input(2).empty()) {
      training_.insert("Dropout with training_mode");
    }
    for (const auto& attr : node.attribute()) {
      if (node.op_type() == "BatchNormalization" && attr.name() == "training_mode" && attr.i() != 0) {
        training_.insert("BatchNormalization with training_mode");
      }
      // Attributes that name an element type: Cast's "to", EyeLike's and the Random ops' "dtype".
      if ((attr.name() == "to" || attr.name() == "dtype") && attr.type() == onnx::AttributeProto::INT) {
        survey_element_type(static_cast<int>(attr.i()));
      }
      if (attr.has_t()) survey_element_type(attr.t().data_type());
      for (const auto& t : attr.tensors()) survey_element_type(t.data_type());
      if (attr.has_g()) survey_graph(attr.g());
      for (const auto& g : attr.graphs()) survey_graph(g);
    }
  }

  std::map<std::string, std::int64_t> opsets_;
  std::set<std::string> unregistered_ops_;
  std::set<std::string> no_cuda_kernel_;
  std::set<std::string> training_;
  std::set<std::string> non_tensor_types_;
  std::set<std::string> element_types_;
  std::set<std::string> graph_inputs_;
};

struct NamedTensor {
  std::string name;  // as stored in the .pb; may be empty
  Tensor tensor;
};

// input_0.pb, input_1.pb, ... (or output_K.pb) of one data set, in order.
Result<std::vector<NamedTensor>> read_tensors(const fs::path& set_dir, std::string_view prefix) {
  std::vector<NamedTensor> tensors;
  for (int k = 0;; ++k) {
    const fs::path path = set_dir / fmt::format("{}_{}.pb", prefix, k);
    if (!fs::exists(path)) break;
    FOVEA_ASSIGN_OR_RETURN(std::string bytes, read_bytes(path));
    onnx::TensorProto proto;
    proto.ParseFromString(bytes);
    FOVEA_ASSIGN_OR_RETURN(Tensor tensor, parse_onnx_tensor(bytes, path.filename().string()));
    tensors.push_back(NamedTensor{proto.name(), std::move(tensor)});
  }
  return tensors;
}

// Assigns stored tensors to graph values: by name when every stored name is one of `ids`' names
// (the usual case), else by position.
Result<std::vector<const NamedTensor*>> match(const Graph& graph, const std::vector<ValueId>& ids,
                                              const std::vector<NamedTensor>& stored, std::string_view what) {
  if (stored.size() != ids.size()) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("the graph has {} {}s, the data set {}", ids.size(), what, stored.size()));
  }
  std::vector<const NamedTensor*> matched(ids.size(), nullptr);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string& name = graph.value(ids[i]).name;
    const auto by_name =
        std::find_if(stored.begin(), stored.end(), [&](const NamedTensor& t) { return t.name == name; });
    matched[i] = by_name != stored.end() ? &*by_name : nullptr;
  }
  if (std::find(matched.begin(), matched.end(), nullptr) != matched.end()) {
    for (std::size_t i = 0; i < ids.size(); ++i) matched[i] = &stored[i];
  }
  return matched;
}

std::string index_string(const Shape& shape, std::int64_t flat) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

bool is_float(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat64 || dtype == DataType::kFloat16;
}

// Empty when `got` matches `expected`; otherwise the worst element (or the dtype/shape mismatch).
std::string compare(const Tensor& got, const Tensor& expected, double rtol, double atol) {
  if (got.dtype() != expected.dtype() || got.shape() != expected.shape()) {
    return fmt::format("expected {} {}, got {} {}", data_type_name(expected.dtype()),
                       shape_string(expected.shape()), data_type_name(got.dtype()),
                       shape_string(got.shape()));
  }
  std::int64_t worst = -1;
  std::int64_t bad = 0;
  double worst_excess = 0;
  for (std::int64_t i = 0; i < expected.numel(); ++i) {
    double excess = 0;
    if (is_float(expected.dtype())) {
      const double e = number_at(expected, i);
      const double g = number_at(got, i);
      if (std::isnan(e) || std::isnan(g) || std::isinf(e) || std::isinf(g)) {
        // NaN matches NaN; an infinity only the same infinity.
        const bool same = (std::isnan(e) && std::isnan(g)) || e == g;
        excess = same ? 0 : std::numeric_limits<double>::infinity();
      } else {
        excess = std::abs(g - e) - (atol + rtol * std::abs(e));
      }
    } else if (integer_at(got, i) != integer_at(expected, i)) {
      excess = std::numeric_limits<double>::infinity();
    }
    if (excess > 0) {
      ++bad;
      if (worst < 0 || excess > worst_excess) {
        worst = i;
        worst_excess = excess;
      }
    }
  }
  if (worst < 0) {
    return {};
  }
  const auto show = [&](const Tensor& t) {
    return is_float(t.dtype()) ? fmt::format("{:.7g}", number_at(t, worst))
                               : std::to_string(integer_at(t, worst));
  };
  return fmt::format("{} of {} elements differ; worst at {}: expected {}, got {}", bad, expected.numel(),
                     index_string(expected.shape(), worst), show(expected), show(got));
}

std::pair<double, double> tolerances(const std::string& id) {
  for (const ToleranceException& e : tolerance_exceptions()) {
    if (e.id == id) return {e.rtol, e.atol};
  }
  return {kDefaultRtol, kDefaultAtol};
}

// A parameter input at most this large may be bound as a constant (Resize's scales of a 4-D tensor
// have 4 elements, its roi 8).
constexpr std::int64_t kMaxBoundParameterElements = 16;

// Whether graph input `id` is a parameter: integer, or small and never a node's first (data) input.
bool is_parameter_input(const Graph& graph, ValueId id, const Tensor& value) {
  if (value.dtype() == DataType::kInt64 || value.dtype() == DataType::kInt32) return true;
  if (value.numel() > kMaxBoundParameterElements) return false;
  for (const Node& node : graph.nodes) {
    if (!node.inputs.empty() && node.inputs[0] == id) return false;
  }
  return std::none_of(graph.outputs.begin(), graph.outputs.end(), [id](ValueId out) { return out == id; });
}

// Parameter graph inputs become constants of the plan (see RunOptions::device), removed from `feed`.
void bind_parameter_inputs(Graph& graph, std::vector<Tensor>& feed) {
  std::vector<ValueId> inputs;
  std::vector<Tensor> kept;
  for (std::size_t i = 0; i < graph.inputs.size(); ++i) {
    if (is_parameter_input(graph, graph.inputs[i], feed[i])) {
      graph.value(graph.inputs[i]).constant = feed[i];
    } else {
      inputs.push_back(graph.inputs[i]);
      kept.push_back(feed[i]);
    }
  }
  graph.inputs = std::move(inputs);
  feed = std::move(kept);
}

Result<std::vector<Tensor>> execute_plan(const Graph& model_graph, const std::vector<Tensor>& model_feed,
                                         const RunOptions& options) {
  Graph graph = model_graph;
  std::vector<Tensor> feed = model_feed;
  if (options.device == Device::kCuda) bind_parameter_inputs(graph, feed);
  InputShapes overrides;
  for (std::size_t i = 0; i < graph.inputs.size(); ++i) {
    overrides[graph.value(graph.inputs[i]).name] = feed[i].shape();
  }
  FOVEA_ASSIGN_OR_RETURN(InputShapes shapes, resolve_input_shapes(graph, overrides, 1));
  FOVEA_ASSIGN_OR_RETURN(ExecutionPlan plan, plan_graph(graph, shapes));
#if defined(FOVEA_HAVE_CUDA)
  if (options.device == Device::kCuda) {
    FOVEA_ASSIGN_OR_RETURN(auto executor, cuda::CudaExecutor::create(std::move(plan)));
    FOVEA_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create());
    return executor->run_host(feed, stream.get());
  }
#else
  if (options.device == Device::kCuda) {
    return make_error(StatusCode::kUnsupported, "this build has no CUDA");
  }
#endif
  CpuExecutor executor(std::move(plan));
  return executor.run(feed);
}

Status run_data_set(const Graph& graph, const fs::path& set_dir, const std::string& id,
                    const RunOptions& options) {
  FOVEA_ASSIGN_OR_RETURN(std::vector<NamedTensor> inputs, read_tensors(set_dir, "input"));
  FOVEA_ASSIGN_OR_RETURN(std::vector<NamedTensor> outputs, read_tensors(set_dir, "output"));
  FOVEA_ASSIGN_OR_RETURN(auto matched_inputs, match(graph, graph.inputs, inputs, "input"));
  FOVEA_ASSIGN_OR_RETURN(auto matched_outputs, match(graph, graph.outputs, outputs, "output"));
  // The plan keeps the model's inputs and outputs (in order), though passes may renumber values.
  std::vector<Tensor> feed;
  for (const NamedTensor* t : matched_inputs) feed.push_back(t->tensor);
  FOVEA_ASSIGN_OR_RETURN(std::vector<Tensor> results, execute_plan(graph, feed, options));
  const auto [rtol, atol] = tolerances(id);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string mismatch = compare(results[i], matched_outputs[i]->tensor, rtol, atol);
    if (!mismatch.empty()) {
      return make_error(StatusCode::kInternal, "output '", graph.value(graph.outputs[i]).name,
                        "': ", mismatch);
    }
  }
  return Status::ok();
}

// Loads, plans and runs every data set; ok means the case passes.
Status execute(const fs::path& case_dir, const std::string& id, const RunOptions& options) {
  LoadOptions load_options;
  load_options.check_versions = options.check_versions;
  FOVEA_ASSIGN_OR_RETURN(Model model, load_onnx(case_dir / "model.onnx", load_options));
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(case_dir)) {
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_")) {
      sets.push_back(entry.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) {
    return make_error(StatusCode::kNotFound, "no test_data_set_N folder");
  }
  for (const fs::path& set : sets) {
    const Status status = run_data_set(model.graph, set, id, options);
    if (!status.is_ok()) {
      return sets.size() == 1 ? status : status.with_context(set.filename().string() + ": ");
    }
  }
  return Status::ok();
}

// Errors name the model path, which the report already gives; shorten to the part after it.
std::string short_reason(const std::string& message, const fs::path& case_dir) {
  const std::string model_path = (case_dir / "model.onnx").string() + ": ";
  std::string reason = message;
  for (std::size_t at; (at = reason.find(model_path)) != std::string::npos;)
    reason.erase(at, model_path.size());
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  return reason;
}

void write_all(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// Runs execute() in a child: its exit status says pass (0) or fail (1, the reason on `result`);
// a signal is a crash, reported with the last line the child wrote to stderr (FOVEA_CHECK's text).
std::pair<Outcome, std::string> execute_isolated(const fs::path& case_dir, const std::string& id,
                                                 const RunOptions& options) {
  int result_pipe[2];
  int error_pipe[2];
  if (::pipe(result_pipe) != 0 || ::pipe(error_pipe) != 0) {
    return {Outcome::kFail, std::string("pipe: ") + std::strerror(errno)};
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    return {Outcome::kFail, std::string("fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    ::close(result_pipe[0]);
    ::close(error_pipe[0]);
    ::dup2(error_pipe[1], STDERR_FILENO);
    const Status status = execute(case_dir, id, options);
    if (!status.is_ok()) write_all(result_pipe[1], short_reason(status.message(), case_dir));
    std::_Exit(status.is_ok() ? 0 : 1);
  }
  ::close(result_pipe[1]);
  ::close(error_pipe[1]);
  std::string result;
  std::string errors;
  pollfd fds[2] = {{result_pipe[0], POLLIN, 0}, {error_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result, &errors};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kCaseTimeoutMs);
  bool timed_out = false;
  for (int open = 2; open > 0;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || ::poll(fds, 2, static_cast<int>(left.count())) == 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (const pollfd& fd : fds) {
    if (fd.fd >= 0) ::close(fd.fd);
  }
  int wait_status = 0;
  ::waitpid(pid, &wait_status, 0);
  if (timed_out) {
    return {Outcome::kFail, fmt::format("timed out after {} s", kCaseTimeoutMs / 1000)};
  }
  if (WIFSIGNALED(wait_status)) {
    std::istringstream lines(errors);
    std::string line;
    std::string last;
    while (std::getline(lines, line)) {
      if (!line.empty()) last = line;
    }
    return {Outcome::kFail,
            fmt::format("crashed ({}){}", strsignal(WTERMSIG(wait_status)), last.empty() ? "" : ": " + last)};
  }
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) {
    return {Outcome::kPass, {}};
  }
  return {Outcome::kFail,
          result.empty() ? fmt::format("exited with status {}", WEXITSTATUS(wait_status)) : result};
}

std::string markdown_escape(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|' || c == '*' || c == '_' || c == '<' || c == '>' || c == '`') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string_view outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "fail";
    case Outcome::kSkip: return "skip";
  }
  return "?";
}

const std::vector<ToleranceException>& tolerance_exceptions() {
  static const std::vector<ToleranceException> exceptions;
  return exceptions;
}

std::vector<fs::path> list_cases(const fs::path& data_dir, std::string_view folder, std::string_view filter) {
  std::vector<fs::path> cases;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(data_dir / folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx") &&
        (filter.empty() || (std::string(folder) + "/" + name).find(filter) != std::string::npos)) {
      cases.push_back(entry.path());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

CaseResult run_case(const fs::path& case_dir, std::string_view folder, const RunOptions& options) {
  CaseResult result{std::string(folder), case_dir.filename().string()};
  auto bytes = read_bytes(case_dir / "model.onnx");
  onnx::ModelProto model;
  if (!bytes.is_ok() || !model.ParseFromString(*bytes)) {
    result.outcome = Outcome::kFail;
    result.reason = bytes.is_ok() ? "model.onnx does not parse" : bytes.status().message();
    return result;
  }
  if (auto skip = ModelSurvey(model).skip_reason(model, options)) {
    result.outcome = Outcome::kSkip;
    result.skip = skip->first;
    result.reason = std::move(skip->second);
    return result;
  }
  std::tie(result.outcome, result.reason) = execute_isolated(case_dir, result.id(), options);
  return result;
}

Result<std::map<std::string, std::string>> read_expectations(const fs::path& path) {
  std::ifstream file(path);
  if (!file) {
    return make_error(StatusCode::kNotFound, path.string(), ": cannot open");
  }
  std::map<std::string, std::string> expectations;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::size_t colon = line.find(':');
    const std::string id = line.substr(0, colon);
    const std::string reason = colon == std::string::npos ? "" : line.substr(colon + 1);
    if (id.find('/') == std::string::npos || reason.find_first_not_of(" \t") == std::string::npos) {
      return make_error(StatusCode::kInvalidArgument, path.string(), ":", std::to_string(number),
                        ": expected '<folder>/<case>: <reason>'");
    }
    expectations[id] = reason.substr(reason.find_first_not_of(" \t"));
  }
  return expectations;
}

ExpectationReport check_expectations(const std::vector<CaseResult>& results,
                                     const std::map<std::string, std::string>& expectations) {
  ExpectationReport report;
  for (const CaseResult& r : results) {
    const bool listed = expectations.count(r.id()) != 0;
    if (r.outcome == Outcome::kFail && !listed) {
      report.unexpected_failures.push_back(r.id() + ": " + r.reason);
    } else if (r.outcome != Outcome::kFail && listed) {
      report.stale.push_back(fmt::format("{}: listed as failing, but it {}{}", r.id(),
                                         r.outcome == Outcome::kPass ? "passes" : "is skipped: ", r.reason));
    }
  }
  return report;
}

std::string cuda_section_of(std::string_view markdown) {
  static const std::string kHeading = "## On CUDA\n";
  const std::string text(markdown);
  std::size_t start = text.starts_with(kHeading) ? 0 : text.find('\n' + kHeading);
  if (start == std::string::npos) return {};
  if (start != 0) ++start;
  const std::size_t end = text.find("\n## ", start + kHeading.size());
  std::string section = text.substr(start, end == std::string::npos ? std::string::npos : end + 1 - start);
  section.erase(section.find_last_not_of('\n') + 1);
  return section + '\n';
}

std::string markdown_report(const std::vector<CaseResult>& results,
                            const std::vector<CaseResult>& informational, std::string_view cuda_section) {
  std::string md;
  md += "# ONNX backend conformance\n\n";
  md +=
      "Generated by `fovea_conformance --ignore-versions --markdown docs/conformance.md` from the ONNX "
      "backend\n"
      "test data of Debian's `libonnx-testdata` (`/usr/include/onnx/backend/test/data`). Every case runs\n"
      "through the loader, the planner (constant folding and passes included) and the CPU executor;\n"
      "outputs are compared with the stored ones at ";
  md += fmt::format("rtol {:g}, atol {:g}", kDefaultRtol, kDefaultAtol);
  md +=
      " (NaN equals NaN; integers and booleans exactly; shape and dtype must match).\n"
      "A case is skipped only when it needs an op fovea does not register, an IR version or opset\n"
      "outside the supported ranges (IR ";
  md += fmt::format("{}-{}, opset {}-{}", kMinIrVersion, kMaxIrVersion, kMinOpset, kMaxOpset);
  md +=
      "), an element type or a non-tensor type fovea does not\nhave, or training. "
      "CI runs the driver (ctest `fovea_conformance`) against "
      "`tests/runtime/conformance/expected_failures.txt`.\n\n";

  md += "| Folder | Cases | Passed | Failed | Skipped |\n|---|---:|---:|---:|---:|\n";
  std::array<int, 3> total{};
  for (std::string_view folder : kFolders) {
    std::array<int, 3> counts{};
    for (const CaseResult& r : results) {
      if (r.folder == folder) ++counts[static_cast<std::size_t>(r.outcome)];
    }
    for (std::size_t i = 0; i < 3; ++i) total[i] += counts[i];
    md += fmt::format("| {} | {} | {} | {} | {} |\n", folder, counts[0] + counts[1] + counts[2], counts[0],
                      counts[1], counts[2]);
  }
  md += fmt::format("| **all** | {} | {} | {} | {} |\n\n", total[0] + total[1] + total[2], total[0], total[1],
                    total[2]);
  if (!cuda_section.empty()) md += std::string(cuda_section) + "\n";

  md += "## Tolerance exceptions\n\n";
  if (tolerance_exceptions().empty()) md += "None: every case is compared at the defaults.\n";
  for (const ToleranceException& e : tolerance_exceptions()) {
    md += fmt::format("- `{}`: rtol {:g}, atol {:g}. {}\n", e.id, e.rtol, e.atol, e.why);
  }

  md += "\n## Failures\n\n";
  int failures = 0;
  for (const CaseResult& r : results) {
    if (r.outcome != Outcome::kFail) continue;
    md += fmt::format("- `{}`: {}\n", r.id(), markdown_escape(r.reason));
    ++failures;
  }
  if (failures == 0) md += "None.\n";

  md += "\n## Skips\n\nGrouped by reason.\n\n";
  std::map<std::string, std::vector<std::string>> skips;
  for (const CaseResult& r : results) {
    if (r.outcome == Outcome::kSkip) skips[r.reason].push_back(fmt::format("`{}`", r.id()));
  }
  for (const auto& [reason, ids] : skips) {
    md += fmt::format("- {} ({}): {}\n", markdown_escape(reason), ids.size(), fmt::join(ids, ", "));
  }

  if (!informational.empty()) {
    md +=
        "\n## Out-of-range versions, loaded anyway (informational)\n\n"
        "How the cases skipped above for their IR version or opset fare when the version check is off\n"
        "(`--ignore-versions`). Not counted as passes: fovea's kernels implement opsets 11-21, and\n"
        "these models (mostly opset 6, from 2017) use older op semantics.\n\n"
        "| Folder | Cases | Would pass | Would fail | Skipped for another reason "
        "|\n|---|---:|---:|---:|---:|\n";
    for (std::string_view folder : kFolders) {
      std::array<int, 3> counts{};
      for (const CaseResult& r : informational) {
        if (r.folder == folder) ++counts[static_cast<std::size_t>(r.outcome)];
      }
      if (counts[0] + counts[1] + counts[2] == 0) continue;
      md += fmt::format("| {} | {} | {} | {} | {} |\n", folder, counts[0] + counts[1] + counts[2], counts[0],
                        counts[1], counts[2]);
    }
  }
  return md;
}

}  // namespace fovea::runtime::conformance
