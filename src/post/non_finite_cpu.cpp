#include <cstring>

#include "post/non_finite.h"
#include "post/tensor_args.h"

namespace fovea::post {

Status check_non_finite_input(const TensorView& values) {
  FOVEA_TRY(check_tensor(values, values.rank, {DataType::kFloat32, DataType::kFloat16}, "values"));
  if (!values.is_contiguous()) {
    return make_error(StatusCode::kInvalidArgument, "values: must be dense (row-major, no gaps)");
  }
  return Status::ok();
}

Result<std::uint64_t> count_non_finite_cpu(const TensorView& values) {
  FOVEA_TRY(check_non_finite_input(values));
  FOVEA_TRY(check_memory(values, false, "values"));
  const auto count = static_cast<std::size_t>(values.num_elements());
  std::uint64_t found = 0;
  if (values.dtype == DataType::kFloat32) {
    const auto* p = static_cast<const std::uint8_t*>(values.data);
    for (std::size_t i = 0; i < count; ++i) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, p + i * sizeof(bits), sizeof(bits));
      found += non_finite_float_bits(bits) ? 1 : 0;
    }
  } else {
    const auto* p = static_cast<const std::uint16_t*>(values.data);
    for (std::size_t i = 0; i < count; ++i) found += non_finite_half_bits(p[i]) ? 1 : 0;
  }
  return found;
}

}  // namespace fovea::post
