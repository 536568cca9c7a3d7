#include "runtime/evaluate.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include <fmt/format.h>
#include <unistd.h>

#include "runtime/control_flow.h"
#include "trace/tracer.h"

namespace fovea::runtime {

Result<const OpDef*> op_for(const Graph* graph, const Node& node) {
  const OpDef* def = find_op(node.domain, node.op_type);
  if (def == nullptr) {
    return make_error(StatusCode::kUnsupported, graph ? graph->where() : std::string(), node.describe(),
                      ": unsupported op '", node.op_type, "'",
                      node.domain.empty() ? std::string() : " in domain '" + node.domain + "'");
  }
  return def;
}

namespace {

std::string count_of(int n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// "1 input", "2 to 3 inputs", "at least 1 input".
std::string range_of(int min, int max, std::string_view noun) {
  if (max == kVariadic) return "at least " + count_of(min, noun);
  if (min == max) return count_of(min, noun);
  return fmt::format("{} to {}", min, count_of(max, noun));
}

// The node lists as many inputs and outputs as its op takes, and every required one: infer() and
// run() then read them without checking (see OpDef).
Status check_arity(const Graph* graph, const Node& node, const OpDef& def) {
  const auto fail = [&](const std::string& what) {
    return make_error(StatusCode::kInvalidArgument, graph ? graph->where() : std::string(), node.describe(),
                      ": ", what);
  };
  const int inputs = static_cast<int>(node.inputs.size());
  const int outputs = static_cast<int>(node.outputs.size());
  if (inputs < def.min_inputs) {
    return fail(fmt::format("needs {}, has {}", range_of(def.min_inputs, def.max_inputs, "input"), inputs));
  }
  if (inputs > def.max_inputs) {
    return fail(fmt::format("has {}, at most {} allowed", count_of(inputs, "input"), def.max_inputs));
  }
  // A variadic op's inputs are all required.
  const int required = def.max_inputs == kVariadic ? inputs : def.min_inputs;
  for (int i = 0; i < required; ++i) {
    if (node.inputs[static_cast<std::size_t>(i)] == kNoValue) {
      return fail(fmt::format("required input {} is omitted", i));
    }
  }
  if (outputs < def.min_outputs) {
    return fail(
        fmt::format("needs {}, has {}", range_of(def.min_outputs, def.max_outputs, "output"), outputs));
  }
  if (outputs > def.max_outputs) {
    return fail(fmt::format("has {}, at most {} allowed", count_of(outputs, "output"), def.max_outputs));
  }
  if (node.outputs.front() == kNoValue) return fail("required output 0 is omitted");
  return Status::ok();
}

bool widens_float16(const OpDef& def, const std::vector<ValueType>& input_types) {
  return def.float16 == OpDef::Float16::kViaFloat32 &&
         std::any_of(input_types.begin(), input_types.end(),
                     [](const ValueType& t) { return t.dtype == DataType::kFloat16; });
}

Tensor converted(const Tensor& from, DataType to) {
  Tensor out = Tensor::allocate(to, from.shape());
  for (std::int64_t i = 0; i < from.numel(); ++i) {
    if (to == DataType::kFloat32) {
      out.data<float>()[i] = half_to_float(from.data<Half>()[i]);
    } else {
      out.data<Half>()[i] = float_to_half(from.data<float>()[i]);
    }
  }
  return out;
}

// The float16 inputs of a kViaFloat32 op, widened; other inputs pass through.
std::vector<Tensor> widened(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out;
  for (const Tensor& in : inputs) {
    const bool half = !in.empty_storage() && in.dtype() == DataType::kFloat16;
    out.push_back(half ? converted(in, DataType::kFloat32) : in);
  }
  return out;
}

std::vector<ValueType> types_of(const std::vector<Tensor>& inputs) {
  std::vector<ValueType> types;
  for (const Tensor& in : inputs) types.push_back(ValueType{in.dtype(), dims_of(in.shape())});
  return types;
}

// A kViaFloat32 op on float16 inputs: the float32 result, rounded to float16 into `allocator`'s
// memory.
Result<std::vector<Tensor>> evaluate_widened(const Graph* graph, const Node& node,
                                             const std::vector<Tensor>& inputs,
                                             const KernelContext::Allocator& allocator) {
  FOVEA_ASSIGN_OR_RETURN(std::vector<Tensor> wide,
                         evaluate_node(graph, node, widened(inputs), heap_allocator()));
  std::vector<Tensor> outputs;
  for (std::size_t i = 0; i < wide.size(); ++i) {
    if (wide[i].dtype() != DataType::kFloat32) {
      outputs.push_back(std::move(wide[i]));
      continue;
    }
    Tensor narrow = allocator(static_cast<int>(i), DataType::kFloat16, wide[i].shape());
    const Tensor rounded = converted(wide[i], DataType::kFloat16);
    std::memcpy(narrow.raw(), rounded.raw(), rounded.bytes());
    outputs.push_back(std::move(narrow));
  }
  return outputs;
}

// No inferred output may count more elements than kMaxTensorElements (its known dims'
// product): beyond that its size in bytes overflows, and a model (or the fuzzer) that asks for
// it gets an error naming the node, not undefined arithmetic later.
Status check_output_sizes(const InferContext& context) {
  for (std::size_t i = 0; i < context.outputs().size(); ++i) {
    const std::optional<Dims>& dims = context.outputs()[i].dims;
    if (!dims) continue;
    std::int64_t count = 1;
    for (const Dim& dim : *dims) {
      if (!dim.known() || dim.value == 0) continue;
      if (__builtin_mul_overflow(count, dim.value, &count) || count > kMaxTensorElements) {
        return context.error(
            StatusCode::kInvalidArgument,
            fmt::format("output {} would be {}: more than 2^60 elements", i, dims_string(*dims)));
      }
    }
  }
  return Status::ok();
}

// The host's physical memory; SIZE_MAX where the system does not say.
std::size_t host_memory_bytes() {
  static const std::size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page_size > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size)
                                      : std::numeric_limits<std::size_t>::max();
  }();
  return bytes;
}

// No output a node computes on the host may need more than the host's memory: a size the data
// drives (ConstantOfShape, Expand, Tile, Range or Resize on run-time values) gets an error naming
// the node and the size, not an allocation that ends the process.
Status check_output_memory(const InferContext& context) {
  for (std::size_t i = 0; i < context.outputs().size(); ++i) {
    const ValueType& type = context.outputs()[i];
    if (!type.dims || !all_known(*type.dims)) continue;
    const double bytes = static_cast<double>(element_count(shape_of(*type.dims))) *
                         static_cast<double>(data_type_size(type.dtype));
    if (bytes > static_cast<double>(host_memory_bytes())) {
      return context.error(
          StatusCode::kResourceExhausted,
          fmt::format("output {} would be {}: {:.1f} GiB, more than this machine's {:.1f} GiB "
                      "of memory",
                      i, dims_string(*type.dims), bytes / (1 << 30),
                      static_cast<double>(host_memory_bytes()) / (1 << 30)));
    }
  }
  return Status::ok();
}

// A node's trace range name, kept for the process's life: a range keeps the pointer
// (trace/tracer.h), and the plan may go before the trace is written.
const char* trace_range_name(const Node& node) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> names;
  const std::lock_guard lock(mutex);
  return names.insert(node.domain.empty() ? node.op_type : node.domain + "." + node.op_type).first->c_str();
}

}  // namespace

Result<std::vector<ValueType>> infer_node(const Graph* graph, const Node& node,
                                          std::vector<ValueType> input_types,
                                          std::vector<const Tensor*> input_values) {
  FOVEA_ASSIGN_OR_RETURN(const OpDef* def, op_for(graph, node));
  FOVEA_TRY(check_arity(graph, node, *def));
  const bool widen = widens_float16(*def, input_types);
  std::vector<Tensor> widened_values;  // keeps the widened constants alive during infer()
  if (widen) {
    widened_values.reserve(input_values.size());
    for (std::size_t i = 0; i < input_types.size(); ++i) {
      if (input_types[i].dtype != DataType::kFloat16) continue;
      input_types[i].dtype = DataType::kFloat32;
      if (i < input_values.size() && input_values[i] != nullptr) {
        widened_values.push_back(converted(*input_values[i], DataType::kFloat32));
        input_values[i] = &widened_values.back();
      }
    }
  }
  InferContext context(graph, node, std::move(input_types), std::move(input_values));
  FOVEA_TRY(def->infer(context));
  FOVEA_TRY(check_output_sizes(context));
  std::vector<ValueType> outputs = context.outputs();
  if (widen) {
    for (ValueType& out : outputs) {
      if (out.dtype == DataType::kFloat32) out.dtype = DataType::kFloat16;
    }
  }
  return outputs;
}

KernelContext::Allocator heap_allocator() {
  return [](int, DataType dtype, Shape shape) { return Tensor::allocate(dtype, std::move(shape)); };
}

Result<std::vector<Tensor>> evaluate_node(const Graph* graph, const Node& node,
                                          const std::vector<Tensor>& inputs,
                                          const KernelContext::Allocator& allocator) {
  if (is_control_flow(node)) return evaluate_control_flow(graph, node, inputs);
  FOVEA_ASSIGN_OR_RETURN(const OpDef* def, op_for(graph, node));
  if (widens_float16(*def, types_of(inputs))) {
    return evaluate_widened(graph, node, inputs, allocator);
  }
  FOVEA_TRY(check_arity(graph, node, *def));
  InferContext inference = infer_context_for(graph, node, inputs);
  FOVEA_TRY(def->infer(inference));
  FOVEA_TRY(check_output_sizes(inference));
  FOVEA_TRY(check_output_memory(inference));

  std::vector<Tensor> outputs(node.outputs.size());
  std::vector<DataType> dtypes;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const ValueType& type = inference.outputs()[i];
    dtypes.push_back(type.dtype);
    if (type.dims && all_known(*type.dims)) {
      outputs[i] = allocator(static_cast<int>(i), type.dtype, shape_of(*type.dims));
    }
  }
  KernelContext kernel(node, inputs, std::move(outputs), std::move(dtypes), allocator);
  FOVEA_TRY(def->run(kernel));
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    FOVEA_CHECK_MSG(!kernel.outputs()[i].empty_storage(),
                    "a kernel left a data-dependent output unallocated");
  }
  return std::move(kernel.outputs());
}

Status evaluate_into(const Graph* graph, const Node& node, std::vector<Tensor>& values,
                     const KernelContext::Allocator& allocator) {
  std::vector<Tensor> inputs;
  for (const ValueId in : node.inputs) {
    inputs.push_back(in == kNoValue ? Tensor() : values[static_cast<std::size_t>(in)]);
  }
  std::optional<trace::ScopedRange> range;
  if (trace::enabled()) range.emplace(trace_range_name(node));
  FOVEA_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, evaluate_node(graph, node, inputs, allocator));
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] != kNoValue)
      values[static_cast<std::size_t>(node.outputs[i])] = std::move(outputs[i]);
  }
  return Status::ok();
}

}  // namespace fovea::runtime
