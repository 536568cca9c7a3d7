// Winograd's F(2x2, 3x3) for the CPU executor's 3x3 stride-1 convolutions (conv_winograd.h). With
// d a 4x4 input block, g a 3x3 filter and Y its 2x2 outputs (cross-correlation, as Conv computes):
//   Y = A^T [ (G g G^T) . (B^T d B) ] A      (. elementwise over the 16 positions)
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//   G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1]
// Summed over the input channels, position xi of every tile is a matrix product:
//   P[xi] (M x tiles) = U[xi] (M x C) * V[xi] (C x tiles),  U = G g G^T, V = B^T d B,
// and the outputs are A^T P A per tile. Tiles go through in chunks of whole tile rows, so that V and
// P stay bounded whatever the image size, and the transforms run along rows (they vectorize).
#include "runtime/ops/conv_winograd.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "runtime/ops/gemm_kernel.h"
#include "runtime/parallel.h"

namespace fovea::runtime::ops {
namespace {

constexpr int kPositions = 16;  // values of a transformed 4x4 tile
// Transformed values (V or P) held per chunk of tiles: 16 MiB of float32.
constexpr std::int64_t kChunkValues = std::int64_t{1} << 22;

std::atomic<WinogradUse> winograd_use{WinogradUse::kWherePays};

// u (row-major 4x4) = G g G^T for g, a row-major 3x3 filter.
template <typename T>
void transform_filter(const T* g, T* u) {
  T t[4][3];  // G g
  for (int j = 0; j < 3; ++j) {
    const T g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
    t[0][j] = g0;
    t[1][j] = (g0 + g1 + g2) / 2;
    t[2][j] = (g0 - g1 + g2) / 2;
    t[3][j] = g2;
  }
  for (int i = 0; i < 4; ++i) {
    const T a = t[i][0], b = t[i][1], c = t[i][2];
    u[i * 4] = a;
    u[i * 4 + 1] = (a + b + c) / 2;
    u[i * 4 + 2] = (a - b + c) / 2;
    u[i * 4 + 3] = c;
  }
}

// One tile row of V for one channel: the B^T rows of the four input rows under it (ho, the top
// output row of the tiles), combined whole, then B's columns per tile. Positions go to
// v[xi * stride + j] for tile j, so that both loops run along a row and vectorize.
template <typename T>
void transform_input_row(const T* plane, const WinogradShape& s, std::int64_t ho, std::int64_t tiles_w,
                         T* padded, T* v, std::int64_t stride) {
  const std::int64_t width = 2 * tiles_w + 2;  // the tiles' input columns, padding included
  T* rows[4];
  for (int r = 0; r < 4; ++r) {
    rows[r] = padded + r * width;
    const std::int64_t h = ho - s.pad_top + r;
    for (std::int64_t q = 0; q < width; ++q) {
      const std::int64_t col = q - s.pad_left;
      rows[r][q] = h >= 0 && h < s.in_h && col >= 0 && col < s.in_w ? plane[h * s.in_w + col] : T(0);
    }
  }
  T* t[4] = {padded + 4 * width, padded + 5 * width, padded + 6 * width, padded + 7 * width};  // B^T d
  for (std::int64_t q = 0; q < width; ++q) {
    t[0][q] = rows[0][q] - rows[2][q];
    t[1][q] = rows[1][q] + rows[2][q];
    t[2][q] = rows[2][q] - rows[1][q];
    t[3][q] = rows[1][q] - rows[3][q];
  }
  for (int i = 0; i < 4; ++i) {
    const T* ti = t[i];
    T* v0 = v + (i * 4) * stride;
    T* v1 = v0 + stride;
    T* v2 = v1 + stride;
    T* v3 = v2 + stride;
    for (std::int64_t j = 0; j < tiles_w; ++j) {
      v0[j] = ti[2 * j] - ti[2 * j + 2];
      v1[j] = ti[2 * j + 1] + ti[2 * j + 2];
      v2[j] = ti[2 * j + 2] - ti[2 * j + 1];
      v3[j] = ti[2 * j + 1] - ti[2 * j + 3];
    }
  }
}

// One tile row of Y for one output channel: A^T p A per tile, p's position xi at p[xi * stride + j]
// for tile j, into the output rows ho and ho + 1 (those inside the output), added to Y's values
// when `accumulate`.
template <typename T>
void transform_output_row(const T* p, std::int64_t stride, const WinogradShape& s, std::int64_t ho,
                          std::int64_t tiles_w, T* scratch, T* plane, bool accumulate) {
  const std::int64_t width = 2 * tiles_w;
  T* out[2] = {scratch, scratch + width};
  for (int i = 0; i < 2; ++i) {
    // Row i of A^T p at position column c: a[c] = p(0,c) + p(1,c) + p(2,c), or p(1,c) - p(2,c) - p(3,c).
    const auto row = [&](int c, std::int64_t j) {
      const T p0 = p[c * stride + j], p1 = p[(4 + c) * stride + j], p2 = p[(8 + c) * stride + j],
              p3 = p[(12 + c) * stride + j];
      return i == 0 ? p0 + p1 + p2 : p1 - p2 - p3;
    };
    for (std::int64_t j = 0; j < tiles_w; ++j) {
      const T a0 = row(0, j), a1 = row(1, j), a2 = row(2, j), a3 = row(3, j);
      out[i][2 * j] = a0 + a1 + a2;
      out[i][2 * j + 1] = a1 - a2 - a3;
    }
  }
  for (int i = 0; i < 2 && ho + i < s.out_h; ++i) {
    T* dst = plane + (ho + i) * s.out_w;
    if (accumulate) {
      for (std::int64_t q = 0; q < s.out_w; ++q) dst[q] += out[i][q];
    } else {
      std::copy(out[i], out[i] + s.out_w, dst);
    }
  }
}

}  // namespace

bool takes_winograd(std::int64_t channels, std::int64_t out_channels) {
  constexpr std::int64_t kFewestChannels = 128;
  switch (winograd_use.load(std::memory_order_relaxed)) {
    case WinogradUse::kAlways: return true;
    case WinogradUse::kNever: return false;
    default: return channels >= kFewestChannels && out_channels >= kFewestChannels;
  }
}

WinogradUse use_winograd(WinogradUse use) {
  return winograd_use.exchange(use);
}

template <typename T>
void winograd_conv_3x3(const T* x, const T* w, T* y, const WinogradShape& s, bool accumulate) {
  const std::int64_t channels = s.channels, outs = s.out_channels;
  const std::int64_t tiles_w = (s.out_w + 1) / 2, tiles_h = (s.out_h + 1) / 2;
  const std::int64_t in_plane = s.in_h * s.in_w, out_plane = s.out_h * s.out_w;

  std::vector<T> u(static_cast<std::size_t>(kPositions * outs * channels));  // [16][M][C]
  parallel_for(outs, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t m = begin; m < end; ++m) {
      for (std::int64_t c = 0; c < channels; ++c) {
        T f[kPositions];
        transform_filter(w + (m * channels + c) * 9, f);
        for (int xi = 0; xi < kPositions; ++xi)
          u[static_cast<std::size_t>((xi * outs + m) * channels + c)] = f[xi];
      }
    }
  });

  // Chunks of whole tile rows (over the batch: row r is image r / tiles_h, tile row r % tiles_h).
  const std::int64_t tile_rows = s.batch * tiles_h;
  const std::int64_t rows_per_chunk = std::clamp<std::int64_t>(
      kChunkValues / (kPositions * std::max(channels, outs) * tiles_w), std::int64_t{1}, tile_rows);
  const std::int64_t chunk = rows_per_chunk * tiles_w;
  std::vector<T> v(static_cast<std::size_t>(kPositions * channels * chunk));  // [16][C][tiles]
  std::vector<T> p(static_cast<std::size_t>(kPositions * outs * chunk));      // [16][M][tiles]
  for (std::int64_t first_row = 0; first_row < tile_rows; first_row += rows_per_chunk) {
    const std::int64_t rows = std::min(rows_per_chunk, tile_rows - first_row);
    const std::int64_t count = rows * tiles_w;
    parallel_for(channels, 1, [&](std::int64_t begin, std::int64_t end) {
      std::vector<T> scratch(static_cast<std::size_t>(8 * (2 * tiles_w + 2)));
      for (std::int64_t c = begin; c < end; ++c) {
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::int64_t row = first_row + r;
          const T* plane = x + (row / tiles_h * channels + c) * in_plane;
          transform_input_row(plane, s, row % tiles_h * 2, tiles_w, scratch.data(),
                              v.data() + c * count + r * tiles_w, channels * count);
        }
      }
    });
    for (int xi = 0; xi < kPositions; ++xi) {
      gemm(outs, count, channels, T(1), MatrixView<T>{u.data() + xi * outs * channels, channels, 1},
           MatrixView<T>{v.data() + xi * channels * count, count, 1}, T(0), p.data() + xi * outs * count,
           count);
    }
    parallel_for(outs, 1, [&](std::int64_t begin, std::int64_t end) {
      std::vector<T> scratch(static_cast<std::size_t>(4 * tiles_w));
      for (std::int64_t m = begin; m < end; ++m) {
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::int64_t row = first_row + r;
          T* plane = y + (row / tiles_h * outs + m) * out_plane;
          transform_output_row(p.data() + m * count + r * tiles_w, outs * count, s, row % tiles_h * 2,
                               tiles_w, scratch.data(), plane, accumulate);
        }
      }
    });
  }
}

template void winograd_conv_3x3<float>(const float*, const float*, float*, const WinogradShape&, bool);
template void winograd_conv_3x3<double>(const double*, const double*, double*, const WinogradShape&, bool);

}  // namespace fovea::runtime::ops
