#include "runtime/ops/gemm_kernel.h"

#include <algorithm>
#include <vector>

#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

// Register block: kMR rows x kGemmNR<T> columns of C stay in registers through the whole k loop
// (4 x 8 floats = 8 XMM accumulators); plain loops that GCC -O3 vectorizes with baseline SSE2.
constexpr std::int64_t kMR = 4;
// Cache blocks, sized for a 32 KiB L1 and >= 256 KiB L2 (any x86-64 of the last decade): a kKC-deep
// B micro-panel (256 x 8 floats = 8 KiB) plus an A micro-panel (4 KiB) stay in L1; a task's kMC x kKC
// A block (128 KiB) stays in L2.
constexpr std::int64_t kKC = 256;
constexpr std::int64_t kMC = 128;
// Columns of B packed at once, shared by all threads (kKC x kNC floats = 2 MiB, in L3).
constexpr std::int64_t kNC = 2048;
// Columns of C per parallel task: enough tasks to balance two to a few dozen threads.
constexpr std::int64_t kTaskCols = 256;
// Below this many flops a product runs on the calling thread: waking the pool costs tens of
// microseconds, about what 1 MFLOP takes on one core.
constexpr double kParallelFlops = 1 << 20;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// parallel_for over `count` items when `parallel`, else one inline call.
void run_items(bool parallel, std::int64_t count,
               const std::function<void(std::int64_t, std::int64_t)>& body) {
  parallel_for(count, parallel ? 1 : count, body);
}

// One kMR-row panel of A: for each of the kc columns, kMR consecutive values (zero past `rows`).
template <typename T>
void pack_a_panel(MatrixView<T> a, std::int64_t m0, std::int64_t rows, std::int64_t k0, std::int64_t kc,
                  T* dst) {
  for (std::int64_t p = 0; p < kc; ++p, dst += kMR) {
    for (std::int64_t r = 0; r < kMR; ++r) {
      dst[r] = r < rows ? a.at(m0 + r, k0 + p) : T(0);
    }
  }
}

// C tile (rows x cols, at most kMR x kGemmNR) = alpha * Apanel * Bpanel + (first K block ? beta * C : C).
template <typename T>
void micro_kernel(std::int64_t kc, const T* __restrict a, const T* __restrict b, T* __restrict c,
                  std::int64_t ldc, std::int64_t rows, std::int64_t cols, T alpha, T beta, bool first) {
  constexpr std::int64_t kNR = kGemmNR<T>;
  T acc[kMR][kNR] = {};
  for (std::int64_t p = 0; p < kc; ++p, a += kMR, b += kNR) {
    for (std::int64_t i = 0; i < kMR; ++i) {
      const T ai = a[i];
      for (std::int64_t j = 0; j < kNR; ++j) acc[i][j] += ai * b[j];
    }
  }
  for (std::int64_t i = 0; i < rows; ++i) {
    T* row = c + i * ldc;
    for (std::int64_t j = 0; j < cols; ++j) {
      const T product = alpha * acc[i][j];
      if (!first) {
        row[j] += product;
      } else if (beta == T(0)) {
        row[j] = product;
      } else {
        row[j] = product + beta * row[j];
      }
    }
  }
}

template <typename T>
void scale_c(std::int64_t m, std::int64_t n, T beta, T* c, std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
  }
}

}  // namespace

template <typename T>
PackB<T> pack_matrix(MatrixView<T> b) {
  return [b](std::int64_t k0, std::int64_t kc, std::int64_t n0, std::int64_t nc, T* panel) {
    constexpr std::int64_t kNR = kGemmNR<T>;
    for (std::int64_t j = 0; j < nc; j += kNR) {
      const std::int64_t cols = std::min(kNR, nc - j);
      for (std::int64_t p = 0; p < kc; ++p, panel += kNR) {
        const T* src = b.data + (k0 + p) * b.row_stride + (n0 + j) * b.col_stride;
        for (std::int64_t q = 0; q < kNR; ++q) panel[q] = q < cols ? src[q * b.col_stride] : T(0);
      }
    }
  };
}

template <typename T>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, T alpha, MatrixView<T> a, const PackB<T>& pack_b,
          T beta, T* c, std::int64_t ldc) {
  constexpr std::int64_t kNR = kGemmNR<T>;
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    scale_c(m, n, beta, c, ldc);
    return;
  }
  const bool parallel =
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) >= kParallelFlops;
  const std::int64_t m_panels = ceil_div(m, kMR);
  const std::int64_t max_kc = std::min(k, kKC);
  std::vector<T> a_pack(static_cast<std::size_t>(m_panels * kMR * max_kc));
  std::vector<T> b_pack(static_cast<std::size_t>(std::min(kNC, ceil_div(n, kNR) * kNR) * max_kc));

  for (std::int64_t k0 = 0; k0 < k; k0 += kKC) {
    const std::int64_t kc = std::min(kKC, k - k0);
    run_items(parallel, m_panels, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t p = begin; p < end; ++p) {
        pack_a_panel(a, p * kMR, std::min(kMR, m - p * kMR), k0, kc, a_pack.data() + p * kMR * kc);
      }
    });
    for (std::int64_t n0 = 0; n0 < n; n0 += kNC) {
      const std::int64_t nc = std::min(kNC, n - n0);
      run_items(parallel, ceil_div(nc, kNR), [&](std::int64_t begin, std::int64_t end) {
        const std::int64_t j0 = begin * kNR;
        pack_b(k0, kc, n0 + j0, std::min(nc, end * kNR) - j0, b_pack.data() + j0 * kc);
      });
      const std::int64_t n_tasks = ceil_div(nc, kTaskCols);
      run_items(parallel, ceil_div(m, kMC) * n_tasks, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t t = begin; t < end; ++t) {
          const std::int64_t m0 = (t / n_tasks) * kMC;
          const std::int64_t m1 = std::min(m, m0 + kMC);
          const std::int64_t j_begin = (t % n_tasks) * kTaskCols;
          const std::int64_t j_end = std::min(nc, j_begin + kTaskCols);
          for (std::int64_t j = j_begin; j < j_end; j += kNR) {
            const T* b_panel = b_pack.data() + j * kc;
            for (std::int64_t i = m0; i < m1; i += kMR) {
              micro_kernel(kc, a_pack.data() + i * kc, b_panel, c + i * ldc + n0 + j, ldc,
                           std::min(kMR, m - i), std::min(kNR, nc - j), alpha, beta, k0 == 0);
            }
          }
        }
      });
    }
  }
}

template PackB<float> pack_matrix(MatrixView<float>);
template PackB<double> pack_matrix(MatrixView<double>);
template void gemm(std::int64_t, std::int64_t, std::int64_t, float, MatrixView<float>, const PackB<float>&,
                   float, float*, std::int64_t);
template void gemm(std::int64_t, std::int64_t, std::int64_t, double, MatrixView<double>, const PackB<double>&,
                   double, double*, std::int64_t);

}  // namespace fovea::runtime::ops
