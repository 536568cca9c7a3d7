// Argument checks and dtype dispatch for the postprocessing ops that take TensorViews, shared by
// their plan steps, CPU references and CUDA launches.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "core/image.h"
#include "core/status.h"

namespace fovea::post {

// Checks rank and dtype; `what` names the argument in errors ("scores", "loc").
inline Status check_tensor(const TensorView& t, int rank, std::initializer_list<DataType> dtypes,
                           const char* what) {
  if (t.data == nullptr) {
    return make_error(StatusCode::kInvalidArgument, what, ": no data");
  }
  if (t.rank != rank) {
    return make_error(StatusCode::kInvalidArgument, what, ": rank ", std::to_string(t.rank), ", expected ",
                      std::to_string(rank));
  }
  for (int i = 0; i < rank; ++i) {
    if (t.shape[static_cast<std::size_t>(i)] <= 0) {
      return make_error(StatusCode::kInvalidArgument, what, ": dimension ", std::to_string(i), " is empty");
    }
  }
  for (DataType d : dtypes) {
    if (t.dtype == d) return Status::ok();
  }
  return make_error(StatusCode::kUnsupported, what, ": dtype ", std::string(data_type_name(t.dtype)),
                    " is not supported here");
}

// Checks that an output is dense float32 of the given shape.
inline Status check_dense_output(const TensorView& t, std::initializer_list<std::int64_t> shape,
                                 DataType dtype, const char* what) {
  FOVEA_TRY(check_tensor(t, static_cast<int>(shape.size()), {dtype}, what));
  int i = 0;
  for (std::int64_t d : shape) {
    if (t.shape[static_cast<std::size_t>(i++)] != d) {
      return make_error(StatusCode::kInvalidArgument, what, ": dimension ", std::to_string(i - 1), " is ",
                        std::to_string(t.shape[static_cast<std::size_t>(i - 1)]), ", expected ",
                        std::to_string(d));
    }
  }
  if (!t.is_contiguous()) {
    return make_error(StatusCode::kInvalidArgument, what, ": must be dense (row-major, no gaps)");
  }
  return Status::ok();
}

// Host runs need host-reachable memory, CUDA runs device-reachable memory.
inline Status check_memory(const TensorView& t, bool device, const char* what) {
  const bool ok = device ? is_device_accessible(t.memory) : t.memory != MemoryKind::kDevice;
  if (!ok) {
    return make_error(
        StatusCode::kInvalidArgument, what, ": ", std::string(memory_kind_name(t.memory)),
        device ? " memory is not reachable from the device" : " memory is not reachable from the host");
  }
  return Status::ok();
}

// Calls f(float{}) for float32 and f(std::uint16_t{}) for float16 (bits), so one template serves both.
template <typename F>
decltype(auto) dispatch_float_dtype(DataType dtype, F&& f) {
  if (dtype == DataType::kFloat16) return std::forward<F>(f)(std::uint16_t{});
  return std::forward<F>(f)(float{});
}

}  // namespace fovea::post
