// cuBLASLt is loaded on first use, not linked (cuda/cuda_libraries.h): the library this build was
// compiled against loads and has every entry point the executor calls. Needs no GPU.
#include "runtime/cuda/cuda_libraries.h"

#include <gtest/gtest.h>

namespace fovea::runtime::cuda {
namespace {

TEST(CudaLibraries, CublasLtLoadsOnceWithEveryEntryPoint) {
  Result<const CublasLt*> api = load_cublaslt();
  ASSERT_TRUE(api.is_ok()) << api.status().to_string();
  EXPECT_EQ(*api, &cublaslt());
  EXPECT_EQ(*load_cublaslt(), *api) << "loaded once";
  EXPECT_NE((*api)->Create, nullptr);
  EXPECT_NE((*api)->Matmul, nullptr);
  EXPECT_NE((*api)->MatrixLayoutSetAttribute, nullptr);
  EXPECT_STRNE(cublaslt().GetStatusString(CUBLAS_STATUS_SUCCESS), "");
}

}  // namespace
}  // namespace fovea::runtime::cuda
