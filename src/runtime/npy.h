// NumPy .npy files (format versions 1-3, little-endian, C order), so that `fovea model run`
// exchanges tensors with numpy and PyTorch scripts.
#pragma once

#include <filesystem>

#include "core/status.h"
#include "runtime/tensor.h"

namespace fovea::runtime {

Result<Tensor> read_npy(const std::filesystem::path& path);
Status write_npy(const std::filesystem::path& path, const Tensor& tensor);

}  // namespace fovea::runtime
