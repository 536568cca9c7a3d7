#include "runtime/ops/gemm_kernel.h"

#include <algorithm>
#include <atomic>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

// Register blocks: kMR rows x kGemmNR<T> columns of C stay in registers through the whole k loop.
// The baseline kernel is plain loops that GCC -O3 vectorizes with x86-64's SSE2 (4 x 8 floats = 8
// XMM accumulators); where the CPU has AVX2 and FMA (checked at run time: the build itself targets
// the x86-64 baseline), floats take a 12 x 8 kernel of fused multiply-adds on YMM registers (12
// accumulators, one B vector, a broadcast A value: 14 of the 16): 2.9x the baseline on a 1024^3
// product (docs/perf.md, "The CPU executor's matrix product on AVX2 and FMA").
constexpr std::int64_t kMR = 4;
constexpr std::int64_t kWideMR = 12;
// Cache blocks, sized for a 32 KiB L1 and >= 256 KiB L2 (any x86-64 of the last decade): a kKC-deep
// B micro-panel (256 x 8 floats = 8 KiB) plus an A micro-panel (4 or 12 KiB) stay in L1; a task's
// kMC x kKC A block (132 KiB) stays in L2.
constexpr std::int64_t kKC = 256;
constexpr std::int64_t kMC = 132;  // a multiple of both kernels' rows
// Columns of B packed at once, shared by all threads (kKC x kNC floats = 2 MiB, in L3).
constexpr std::int64_t kNC = 2048;
// Columns of C per parallel task, at most; fewer where that leaves threads without work.
constexpr std::int64_t kTaskCols = 256;
// Tasks per pool thread that a product's column split aims for, so that uneven tasks balance.
constexpr std::int64_t kTasksPerThread = 4;
// Below this many flops a product runs on the calling thread: waking the pool costs tens of
// microseconds, about what 1 MFLOP takes on one core.
constexpr double kParallelFlops = 1 << 20;

std::atomic<bool> wide_kernel_allowed{true};

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// The columns of C one task computes, for a column block `nc` wide split with `row_blocks` row
// blocks: kTaskCols, or fewer (whole `panel`-wide micro-panels) where kTaskCols would leave pool
// threads idle. A product with few rows (a convolution with 64 output channels: one row block)
// would otherwise give 16 threads the 8 tasks of a 2048-column block.
std::int64_t task_columns(std::int64_t nc, std::int64_t row_blocks, std::int64_t panel) {
  const std::int64_t wanted_column_tasks =
      std::max<std::int64_t>(1, kTasksPerThread * cpu_thread_count() / row_blocks);
  const std::int64_t columns = ceil_div(ceil_div(nc, wanted_column_tasks), panel) * panel;
  return std::clamp<std::int64_t>(columns, panel, kTaskCols);
}

// parallel_for over `count` items when `parallel`, else one inline call.
void run_items(bool parallel, std::int64_t count,
               const std::function<void(std::int64_t, std::int64_t)>& body) {
  parallel_for(count, parallel ? 1 : count, body);
}

// One `mr`-row panel of A: for each of the kc columns, mr consecutive values (zero past `rows`).
template <typename T>
void pack_a_panel(MatrixView<T> a, std::int64_t mr, std::int64_t m0, std::int64_t rows, std::int64_t k0,
                  std::int64_t kc, T* dst) {
  for (std::int64_t p = 0; p < kc; ++p, dst += mr) {
    for (std::int64_t r = 0; r < mr; ++r) {
      dst[r] = r < rows ? a.at(m0 + r, k0 + p) : T(0);
    }
  }
}

// C's rows x cols corner of a register tile (rows `tile_ld` apart) = alpha * tile + (first K block ?
// beta * C : C).
template <typename T>
void store_tile(const T* tile, std::int64_t tile_ld, T* c, std::int64_t ldc, std::int64_t rows,
                std::int64_t cols, T alpha, T beta, bool first) {
  for (std::int64_t i = 0; i < rows; ++i) {
    T* row = c + i * ldc;
    for (std::int64_t j = 0; j < cols; ++j) {
      const T product = alpha * tile[i * tile_ld + j];
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
  store_tile(&acc[0][0], kNR, c, ldc, rows, cols, alpha, beta, first);
}

template <typename T>
using MicroKernelFn = void (*)(std::int64_t, const T*, const T*, T*, std::int64_t, std::int64_t, std::int64_t,
                               T, T, bool);

// A micro-kernel and the rows of its A panels.
template <typename T>
struct MicroKernel {
  std::int64_t mr;
  MicroKernelFn<T> run;
};

#if defined(__x86_64__)
static_assert(kGemmNR<float> == 8, "the AVX2 kernel's B panels are one YMM register wide");

// The 12 x 8 float kernel. A full tile is written straight from the registers; an edge tile goes
// through memory and store_tile.
__attribute__((target("avx2,fma"))) void micro_kernel_avx2(std::int64_t kc, const float* __restrict a,
                                                           const float* __restrict b, float* __restrict c,
                                                           std::int64_t ldc, std::int64_t rows,
                                                           std::int64_t cols, float alpha, float beta,
                                                           bool first) {
  // Every loop over the accumulators is unrolled: an index GCC cannot resolve keeps the array on the
  // stack, and it then stores all twelve every step.
  __m256 acc[kWideMR];
#pragma GCC unroll 12
  for (std::int64_t i = 0; i < kWideMR; ++i) acc[i] = _mm256_setzero_ps();
  for (std::int64_t p = 0; p < kc; ++p, a += kWideMR, b += 8) {
    const __m256 bv = _mm256_loadu_ps(b);
#pragma GCC unroll 12
    for (std::int64_t i = 0; i < kWideMR; ++i)
      acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + i), bv, acc[i]);
  }
  if (rows < kWideMR || cols < 8) {
    alignas(32) float tile[kWideMR * 8];
#pragma GCC unroll 12
    for (std::int64_t i = 0; i < kWideMR; ++i) _mm256_store_ps(tile + i * 8, acc[i]);
    store_tile(tile, 8, c, ldc, rows, cols, alpha, beta, first);
    return;
  }
  const __m256 alpha_v = _mm256_set1_ps(alpha), beta_v = _mm256_set1_ps(beta);
#pragma GCC unroll 12
  for (std::int64_t i = 0; i < kWideMR; ++i) {
    float* row = c + i * ldc;
    __m256 product = _mm256_mul_ps(alpha_v, acc[i]);
    if (!first) {
      product = _mm256_add_ps(product, _mm256_loadu_ps(row));
    } else if (beta != 0.0f) {
      product = _mm256_fmadd_ps(beta_v, _mm256_loadu_ps(row), product);
    }
    _mm256_storeu_ps(row, product);
  }
}
#endif

template <typename T>
MicroKernel<T> choose_kernel() {
  return {kMR, micro_kernel<T>};
}

template <>
MicroKernel<float> choose_kernel<float>() {
#if defined(__x86_64__)
  static const bool wide = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (wide && wide_kernel_allowed.load(std::memory_order_relaxed)) return {kWideMR, micro_kernel_avx2};
#endif
  return {kMR, micro_kernel<float>};
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
  const MicroKernel<T> kernel = choose_kernel<T>();
  const std::int64_t mr = kernel.mr;
  const std::int64_t m_panels = ceil_div(m, mr);
  const std::int64_t max_kc = std::min(k, kKC);
  std::vector<T> a_pack(static_cast<std::size_t>(m_panels * mr * max_kc));
  std::vector<T> b_pack(static_cast<std::size_t>(std::min(kNC, ceil_div(n, kNR) * kNR) * max_kc));

  for (std::int64_t k0 = 0; k0 < k; k0 += kKC) {
    const std::int64_t kc = std::min(kKC, k - k0);
    run_items(parallel, m_panels, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t p = begin; p < end; ++p) {
        pack_a_panel(a, mr, p * mr, std::min(mr, m - p * mr), k0, kc, a_pack.data() + p * mr * kc);
      }
    });
    for (std::int64_t n0 = 0; n0 < n; n0 += kNC) {
      const std::int64_t nc = std::min(kNC, n - n0);
      run_items(parallel, ceil_div(nc, kNR), [&](std::int64_t begin, std::int64_t end) {
        const std::int64_t j0 = begin * kNR;
        pack_b(k0, kc, n0 + j0, std::min(nc, end * kNR) - j0, b_pack.data() + j0 * kc);
      });
      const std::int64_t task_cols = task_columns(nc, ceil_div(m, kMC), kNR);
      const std::int64_t n_tasks = ceil_div(nc, task_cols);
      run_items(parallel, ceil_div(m, kMC) * n_tasks, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t t = begin; t < end; ++t) {
          const std::int64_t m0 = (t / n_tasks) * kMC;
          const std::int64_t m1 = std::min(m, m0 + kMC);
          const std::int64_t j_begin = (t % n_tasks) * task_cols;
          const std::int64_t j_end = std::min(nc, j_begin + task_cols);
          for (std::int64_t j = j_begin; j < j_end; j += kNR) {
            const T* b_panel = b_pack.data() + j * kc;
            for (std::int64_t i = m0; i < m1; i += mr) {
              kernel.run(kc, a_pack.data() + i * kc, b_panel, c + i * ldc + n0 + j, ldc, std::min(mr, m - i),
                         std::min(kNR, nc - j), alpha, beta, k0 == 0);
            }
          }
        }
      });
    }
  }
}

bool allow_wide_gemm_kernel(bool allowed) {
  return wide_kernel_allowed.exchange(allowed);
}

template PackB<float> pack_matrix(MatrixView<float>);
template PackB<double> pack_matrix(MatrixView<double>);
template void gemm(std::int64_t, std::int64_t, std::int64_t, float, MatrixView<float>, const PackB<float>&,
                   float, float*, std::int64_t);
template void gemm(std::int64_t, std::int64_t, std::int64_t, double, MatrixView<double>, const PackB<double>&,
                   double, double*, std::int64_t);

}  // namespace fovea::runtime::ops
