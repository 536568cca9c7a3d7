#include "runtime/cuda/cuda_op_test_util.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "runtime/cuda/cuda_libraries.h"
#include "runtime/cuda/cuda_op.h"

namespace fovea::runtime::testing {

namespace {

using cuda::CudaKernelContext;
using cuda::CudaLibraries;

constexpr std::size_t kSearchWorkspaceBytes = std::size_t{256} << 20;

bool contains(const std::vector<int>& list, int i) {
  return std::find(list.begin(), list.end(), i) != list.end();
}

Result<CudaLibraries*> shared_libraries() {
  static std::unique_ptr<CudaLibraries> libraries;
  if (!libraries) {
    FOVEA_ASSIGN_OR_RETURN(libraries, CudaLibraries::create());
  }
  return libraries.get();
}

Status run_cuda(const Node& node, const std::vector<Tensor>& inputs, const std::vector<int>& constant_inputs,
                std::vector<Tensor>* results) {
  const cuda::CudaOpDef* def = cuda::find_cuda_op(node.domain, node.op_type);
  if (def == nullptr) {
    return make_error(StatusCode::kUnsupported, node.describe(), ": no CUDA kernel for ", node.op_type);
  }
  std::vector<ValueType> types;
  std::vector<const Tensor*> values;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const bool present = !inputs[i].empty_storage() || inputs[i].numel() == 0;
    types.push_back(present ? ValueType{inputs[i].dtype(), dims_of(inputs[i].shape())} : ValueType{});
    values.push_back(contains(constant_inputs, static_cast<int>(i)) ? &inputs[i] : nullptr);
  }
  FOVEA_ASSIGN_OR_RETURN(std::vector<ValueType> output_types, infer_node(nullptr, node, types, values));

  std::vector<DeviceMemory> buffers;
  std::vector<Tensor> device_inputs;
  for (const Tensor& in : inputs) {
    if (in.empty_storage() && in.numel() != 0) {
      device_inputs.emplace_back();
      continue;
    }
    FOVEA_ASSIGN_OR_RETURN(DeviceMemory buffer, DeviceMemory::allocate(in.bytes()));
    FOVEA_CUDA_TRY(cudaMemcpy(buffer.get(), in.raw(), in.bytes(), cudaMemcpyHostToDevice));
    device_inputs.push_back(Tensor::borrow(in.dtype(), in.shape(), buffer.get()));
    buffers.push_back(std::move(buffer));
  }
  // cudaMemcpy from pageable memory may return before its DMA lands, and the op runs on a
  // non-blocking stream that is not ordered after it.
  FOVEA_CUDA_TRY(cudaDeviceSynchronize());
  std::vector<Tensor> device_outputs;
  std::vector<std::int64_t*> output_rows;  // a device row count per data-dependent output
  for (std::size_t o = 0; o < output_types.size(); ++o) {
    const ValueType& type = output_types[o];
    const bool data_dependent = !type.dims || !all_known(*type.dims);
    if (data_dependent && def->bound_output == nullptr) {
      return make_error(StatusCode::kUnsupported, node.describe(), ": data-dependent output shape");
    }
    Shape shape;
    if (data_dependent) {
      FOVEA_ASSIGN_OR_RETURN(
          shape, def->bound_output(InferContext(nullptr, node, types, values), static_cast<int>(o)));
    } else {
      shape = shape_of(*type.dims);
    }
    FOVEA_ASSIGN_OR_RETURN(
        DeviceMemory buffer,
        DeviceMemory::allocate(static_cast<std::size_t>(element_count(shape)) * data_type_size(type.dtype)));
    device_outputs.push_back(Tensor::borrow(type.dtype, shape, buffer.get()));
    buffers.push_back(std::move(buffer));
    output_rows.push_back(nullptr);
    if (data_dependent) {
      FOVEA_ASSIGN_OR_RETURN(DeviceMemory rows, DeviceMemory::allocate(sizeof(std::int64_t)));
      output_rows.back() = static_cast<std::int64_t*>(rows.get());
      buffers.push_back(std::move(rows));
    }
  }
  if (def->run == nullptr) {  // a pure view: the executor places the output on the input's bytes
    FOVEA_CUDA_TRY(cudaMemcpy(device_outputs[0].raw(), device_inputs[0].raw(), device_outputs[0].bytes(),
                              cudaMemcpyDeviceToDevice));
  } else {
    std::vector<const Tensor*> host_constants;
    for (std::size_t i = 0; i < inputs.size(); ++i) host_constants.push_back(values[i]);
    CudaKernelContext context(nullptr, node, device_inputs, host_constants, device_outputs, output_rows);
    FOVEA_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create());
    FOVEA_ASSIGN_OR_RETURN(CudaLibraries * libraries, shared_libraries());
    FOVEA_TRY(libraries->set_stream(stream.get()));
    cuda::CudaPrepared prepared;
    if (def->prepare != nullptr) {
      FOVEA_ASSIGN_OR_RETURN(DeviceMemory search, DeviceMemory::allocate(kSearchWorkspaceBytes));
      context.bind(stream.get(), libraries, search.get(), kSearchWorkspaceBytes, nullptr);
      FOVEA_ASSIGN_OR_RETURN(prepared, def->prepare(context));
      FOVEA_TRY(stream.synchronize());
    }
    FOVEA_ASSIGN_OR_RETURN(DeviceMemory workspace, DeviceMemory::allocate(prepared.workspace_bytes));
    context.bind(stream.get(), libraries, prepared.workspace_bytes > 0 ? workspace.get() : nullptr,
                 prepared.workspace_bytes, prepared.state.get());
    FOVEA_TRY(def->run(context));
    FOVEA_TRY(stream.synchronize());
  }
  results->clear();
  for (std::size_t o = 0; o < device_outputs.size(); ++o) {
    const Tensor& out = device_outputs[o];
    Shape shape = out.shape();
    if (output_rows[o] != nullptr) {  // only the rows the op says it filled
      FOVEA_CUDA_TRY(cudaMemcpy(&shape[0], output_rows[o], sizeof(std::int64_t), cudaMemcpyDeviceToHost));
      if (shape[0] < 0 || shape[0] > out.dim(0)) {
        return make_error(StatusCode::kInternal, node.describe(), ": ", std::to_string(shape[0]),
                          " rows written, the bound is ", std::to_string(out.dim(0)));
      }
    }
    Tensor host = Tensor::allocate(out.dtype(), shape);
    FOVEA_CUDA_TRY(cudaMemcpy(host.raw(), out.raw(), host.bytes(), cudaMemcpyDeviceToHost));
    results->push_back(std::move(host));
  }
  return Status::ok();
}

bool is_float(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat64 || dtype == DataType::kFloat16;
}

double as_double(const Tensor& t, std::int64_t i) {
  return number_at(t, i);
}

}  // namespace

Tensor to_float32(const Tensor& t) {
  if (t.empty_storage() || t.dtype() != DataType::kFloat16) return t;
  Tensor out = Tensor::allocate(DataType::kFloat32, t.shape());
  for (std::int64_t i = 0; i < t.numel(); ++i) out.data<float>()[i] = half_to_float(t.data<Half>()[i]);
  return out;
}

Tensor to_float16(const Tensor& t) {
  Tensor out = Tensor::allocate(DataType::kFloat16, t.shape());
  for (std::int64_t i = 0; i < t.numel(); ++i) out.data<Half>()[i] = float_to_half(t.data<float>()[i]);
  return out;
}

::testing::AssertionResult outputs_within(const Tensor& cuda_out, const Tensor& cpu_out, Tolerance tolerance,
                                          int output) {
  const Tensor actual = to_float32(cuda_out);
  if (actual.shape() != cpu_out.shape()) {
    return ::testing::AssertionFailure()
           << "output " << output << ": CUDA shape " << shape_string(actual.shape()) << ", CPU shape "
           << shape_string(cpu_out.shape());
  }
  const bool exact = !is_float(cpu_out.dtype());
  double max_ref = 0;
  for (std::int64_t i = 0; i < cpu_out.numel(); ++i)
    max_ref = std::max(max_ref, std::abs(as_double(cpu_out, i)));
  double worst_excess = 0;
  std::int64_t worst = -1;
  for (std::int64_t i = 0; i < cpu_out.numel(); ++i) {
    const double expected = as_double(cpu_out, i);
    const double got = as_double(actual, i);
    if (std::isnan(expected) && std::isnan(got)) continue;
    if (std::isinf(expected) && got == expected) continue;
    const double allowed = exact ? 0.0 : tolerance.abs_of_max * max_ref + tolerance.rel * std::abs(expected);
    const double excess =
        std::isnan(got) || std::isnan(expected) ? INFINITY : std::abs(got - expected) - allowed;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  if (worst < 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << fmt::format(
             "output {} {}: element {} is {} on CUDA and {} on the CPU (max|cpu| {}, {} over the tolerance)",
             output, shape_string(cpu_out.shape()), worst, as_double(actual, worst),
             as_double(cpu_out, worst), max_ref, worst_excess);
}

bool have_cuda_device() {
  return cuda_device_count() > 0;
}

std::vector<Tensor> run_cuda_node(const Node& node, const std::vector<Tensor>& inputs,
                                  const std::vector<int>& constant_inputs) {
  std::vector<Tensor> outputs;
  const Status status = run_cuda(node, inputs, constant_inputs, &outputs);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return outputs;
}

Status run_cuda_node_status(const Node& node, const std::vector<Tensor>& inputs,
                            const std::vector<int>& constant_inputs) {
  std::vector<Tensor> outputs;
  return run_cuda(node, inputs, constant_inputs, &outputs);
}

::testing::AssertionResult cuda_matches_cpu(const Node& node, const std::vector<Tensor>& inputs,
                                            const CudaCheck& check) {
  std::vector<Tensor> cuda_inputs = inputs;
  std::vector<Tensor> cpu_inputs = inputs;
  if (check.precision == Precision::kFloat16) {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].empty_storage() || inputs[i].dtype() != DataType::kFloat32 ||
          contains(check.keep_float32_inputs, static_cast<int>(i))) {
        continue;
      }
      cuda_inputs[i] = to_float16(inputs[i]);
      cpu_inputs[i] = to_float32(cuda_inputs[i]);
    }
  }
  std::vector<Tensor> expected;
  const Status cpu = [&] {
    auto result = evaluate_node(nullptr, node, cpu_inputs, heap_allocator());
    if (result.is_ok()) expected = std::move(*result);
    return result.status();
  }();
  if (!cpu.is_ok()) return ::testing::AssertionFailure() << "CPU reference failed: " << cpu.to_string();
  std::vector<Tensor> actual;
  const Status gpu = run_cuda(node, cuda_inputs, check.constant_inputs, &actual);
  if (!gpu.is_ok()) return ::testing::AssertionFailure() << "CUDA failed: " << gpu.to_string();
  const Tolerance tolerance = cuda_tolerance(check.precision, check.accuracy);
  for (std::size_t o = 0; o < expected.size(); ++o) {
    auto agree = outputs_within(actual[o], expected[o], tolerance, static_cast<int>(o));
    if (!agree) return agree << " [" << node.op_type << ", " << precision_name(check.precision) << "]";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace fovea::runtime::testing
