// The one matrix product of the CPU executor: C = alpha * A * B + beta * C, cache-blocked and
// parallel. Conv (with B packed straight from the image, no im2col buffer), ConvTranspose, MatMul
// and Gemm all call it, so a speed-up here speeds up every one of them.
#pragma once

#include <cstdint>
#include <functional>

namespace fovea::runtime::ops {

// Columns per packed B panel, the micro-kernels' width: two SSE registers of floats or doubles per
// accumulator row in the baseline kernel (x86-64 has 16 XMM registers; 4 rows x 2 registers leaves
// room for B and A), one AVX register of floats in the AVX2 one (gemm_kernel.cpp).
template <typename T>
inline constexpr std::int64_t kGemmNR = static_cast<std::int64_t>(32 / sizeof(T));

// A strided matrix: element (r, c) lies at data[r * row_stride + c * col_stride], so a transpose is
// just another view.
template <typename T>
struct MatrixView {
  const T* data = nullptr;
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 1;

  T at(std::int64_t r, std::int64_t c) const { return data[r * row_stride + c * col_stride]; }
};

// Packs rows [k0, k0 + kc) x columns [n0, n0 + nc) of B into `panel`: column panels of kGemmNR<T>
// columns one after the other, each holding kc rows of kGemmNR<T> values, zero past column n0 + nc.
// gemm may call it concurrently on disjoint column ranges (n0 a multiple of kGemmNR<T> from the
// block start), so it must not write anything but `panel`.
template <typename T>
using PackB =
    std::function<void(std::int64_t k0, std::int64_t kc, std::int64_t n0, std::int64_t nc, T* panel)>;

// The packer for B stored as a strided matrix.
template <typename T>
PackB<T> pack_matrix(MatrixView<T> b);

// C (m x n, row stride ldc, unit column stride) = alpha * A (m x k) * B (k x n) + beta * C. With
// beta == 0, C is not read (it may hold garbage). Runs on the worker pool when the product is large
// enough, inline when called from inside another parallel_for.
template <typename T>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, T alpha, MatrixView<T> a, const PackB<T>& pack_b,
          T beta, T* c, std::int64_t ldc);

// Whether float products may take the AVX2/FMA micro-kernel where the CPU has it (the default);
// false keeps them on the baseline SSE2 one. Returns the previous setting. For tests that check both
// kernels and for comparing them; products already running finish on the kernel they started with.
bool allow_wide_gemm_kernel(bool allowed);

template <typename T>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, T alpha, MatrixView<T> a, MatrixView<T> b, T beta,
          T* c, std::int64_t ldc) {
  gemm(m, n, k, alpha, a, pack_matrix(b), beta, c, ldc);
}

}  // namespace fovea::runtime::ops
