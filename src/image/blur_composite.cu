// Background blur in one kernel: each block stages a tile of the frame plus the blur's halo in shared
// memory as bytes (once, with 4-byte loads), runs the horizontal pass from it into a float tile,
// slides the vertical pass down each thread's column in registers, and blends the sharp byte with
// the blurred one by the mask in the epilogue. The blurred frame never reaches global memory, so the
// kernel moves the minimum: the frame and the mask read once (halos are L2 hits), the output written
// once. Tiles whose mask is all 255 show only the sharp frame and are copied without blurring.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/blur_composite.h"

namespace fovea::image {

namespace {

// 16 images per launch keep the launch parameters (jobs + weights, ~1.2 KiB) under the 4 KiB that
// kernel arguments may take; larger batches take several launches.
constexpr int kJobsPerLaunch = 16;
// A 64x32-pixel output tile: 64 RGB pixels are 192 bytes = 48 four-byte columns (RGBA: 64), and 32
// rows keep the horizontal pass's halo rows (2 * radius) at 44% extra work for the 15-tap kernel
// while the float tile stays ~35 KiB, so 4 blocks fit on an SM.
constexpr int kTileWidth = 64;
constexpr int kTileHeight = 32;
// Each thread owns 4 consecutive bytes of 8 output rows: 4 row groups per tile. 8 rows per thread
// reuse each shared float4 of the vertical pass up to 8 times from registers.
constexpr int kVec = 4;
constexpr int kRowGroups = 4;
constexpr int kRowsPerThread = kTileHeight / kRowGroups;
// Blocks above the 48 KiB default shared memory must opt in.
constexpr std::size_t kDefaultSharedLimit = 48 * 1024;

struct FusedJob {
  const std::uint8_t* frame = nullptr;
  std::size_t frame_pitch = 0;
  const std::uint8_t* mask = nullptr;
  std::size_t mask_pitch = 0;
  std::uint8_t* out = nullptr;
  std::size_t out_pitch = 0;
  int width = 0;
  int height = 0;
  bool frame_aligned = false;  // base and pitch multiples of 4: 4-byte row accesses are aligned
  bool out_aligned = false;
};

struct FusedLaunch {
  FusedJob jobs[kJobsPerLaunch];
  // Zero-padded to the kernel's radius, centered: padding taps add exact zeros.
  float wx[kMaxBlurCompositeKernelSize];
  float wy[kMaxBlurCompositeKernelSize];
  BorderMode border;
  std::uint8_t border_value;
};

constexpr int round_up(int v, int m) {
  return (v + m - 1) / m * m;
}

// Shared memory of one block for C channels and radius R: the float tile of horizontal results
// (every row the vertical pass reaches), the staged frame bytes, the mask tile.
template <int C, int R>
struct Tile {
  static constexpr int kHaloRows = kTileHeight + 2 * R;
  static constexpr int kOutBytes = kTileWidth * C;  // bytes (= floats) per output row
  static constexpr int kColumns = kOutBytes / kVec;
  static constexpr int kThreads = kColumns * kRowGroups;
  static constexpr int kInBytes = (kTileWidth + 2 * R) * C;
  // One horizontal item is kVec pixels: it reads (kVec + 2R) * C bytes, as 16-byte loads when its
  // start is 16-byte aligned (RGBA) and as 4-byte loads otherwise.
  static constexpr int kItemBytes = (kVec + 2 * R) * C;
  static constexpr int kItemWords = round_up((kItemBytes + 3) / 4, C % 4 == 0 ? 4 : 1);
  // 16 bytes of slack for the last item's over-read; rows 64 bytes off a multiple of 128 so the two
  // rows one warp reads at 12-byte steps (RGB) fall into disjoint banks.
  static constexpr int kInPitch = round_up(kInBytes + 16, 128) + 64;
  static constexpr std::size_t kInOffset = static_cast<std::size_t>(kHaloRows) * kOutBytes * sizeof(float);
  static constexpr std::size_t kMaskOffset = kInOffset + static_cast<std::size_t>(kHaloRows) * kInPitch;
  static constexpr std::size_t kSharedBytes = kMaskOffset + kTileHeight * kTileWidth;
};

// Byte k of `word` as a float, exactly: 2^23 + b has b in its mantissa (a permute and an add, where
// an int-to-float conversion runs at a quarter of the FMA rate).
__device__ __forceinline__ float byte_value(std::uint32_t word, int k) {
  return __uint_as_float(__byte_perm(word, 0x4B000000u, 0x7440 + k)) - 8388608.0f;
}

// to_u8(v) for every float v, without the quarter-rate float-to-int conversion: adding 2^23 rounding
// toward zero leaves floor(clamped + 0.5) in the low mantissa bits.
__device__ __forceinline__ std::uint32_t round_to_u8(float v) {
  const float clamped = fminf(fmaxf(v, 0.0f), 255.0f);
  return __float_as_uint(__fadd_rz(clamped + 0.5f, 8388608.0f)) & 0xFFu;
}

// The 4 bytes at e of a tile row (`row` = the tile's first byte in its image row), `limit` bytes of
// which lie inside the image.
__device__ __forceinline__ std::uint32_t load4(const std::uint8_t* row, int e, int limit, bool aligned) {
  if (aligned && e + kVec <= limit) return __ldg(reinterpret_cast<const std::uint32_t*>(row + e));
  std::uint32_t packed = 0;
  for (int i = 0; i < kVec && e + i < limit; ++i) packed |= static_cast<std::uint32_t>(row[e + i]) << (8 * i);
  return packed;
}

__device__ __forceinline__ void store4(std::uint8_t* row, int e, int limit, std::uint32_t packed,
                                       bool aligned) {
  if (aligned && e + kVec <= limit) {
    *reinterpret_cast<std::uint32_t*>(row + e) = packed;
    return;
  }
  for (int i = 0; i < kVec && e + i < limit; ++i) row[e + i] = static_cast<std::uint8_t>(packed >> (8 * i));
}

// Stages the tile's mask (255 beyond the image) and says whether all of it is 255.
template <int kThreads>
__device__ bool stage_mask(const FusedJob& job, int x0, int y0, std::uint8_t* s_mask) {
  bool opaque = true;
  for (int i = threadIdx.x; i < kTileHeight * kTileWidth; i += kThreads) {
    const int x = x0 + i % kTileWidth;
    const int y = y0 + i / kTileWidth;
    const std::uint8_t m = x < job.width && y < job.height ? job.mask[y * job.mask_pitch + x] : 255;
    s_mask[i] = m;
    opaque = opaque && m == 255;
  }
  return __syncthreads_and(opaque) != 0;
}

// Stages the frame bytes the tile's blur reads, border applied. Tiles whose halo lies inside the
// image load 4-byte words (realigned with a funnel shift, since a row may start at any byte); edge
// tiles map every byte through border_index.
template <int C, int R>
__device__ void stage_frame(const FusedLaunch& launch, const FusedJob& job, int x0, int y0,
                            std::uint8_t* s_in) {
  using T = Tile<C, R>;
  const bool interior =
      x0 >= R && x0 + kTileWidth + R <= job.width && y0 >= R && y0 + kTileHeight + R <= job.height;
  if (interior) {
    constexpr int kWords = (T::kInBytes + 3) / 4;
    for (int i = threadIdx.x; i < T::kHaloRows * kWords; i += T::kThreads) {
      const int r = i / kWords;
      const int w = i - r * kWords;
      const std::uint8_t* row = job.frame + (y0 - R + r) * job.frame_pitch + (x0 - R) * C;
      const auto start = reinterpret_cast<std::uintptr_t>(row);
      const auto* base = reinterpret_cast<const std::uint32_t*>(start & ~std::uintptr_t{3});
      // Word w always holds a byte of the row; word w + 1 only near its end may not (then it is
      // not read: it could lie past the allocation).
      const std::uint32_t lo = __ldg(base + w);
      const bool hi_inside = reinterpret_cast<const std::uint8_t*>(base + w + 1) < row + T::kInBytes;
      const std::uint32_t hi = hi_inside ? __ldg(base + w + 1) : 0u;
      reinterpret_cast<std::uint32_t*>(s_in + r * T::kInPitch)[w] =
          __funnelshift_r(lo, hi, static_cast<unsigned>(start & 3) * 8);
    }
    return;
  }
  // Each staged row and column maps through border_index once (-1: the constant border).
  constexpr int kInPixels = kTileWidth + 2 * R;
  __shared__ int s_source_row[T::kHaloRows];
  __shared__ int s_source_column[kInPixels];
  for (int i = threadIdx.x; i < T::kHaloRows + kInPixels; i += T::kThreads) {
    if (i < T::kHaloRows) {
      s_source_row[i] = border_index(y0 - R + i, job.height, launch.border);
    } else {
      s_source_column[i - T::kHaloRows] = border_index(x0 - R + i - T::kHaloRows, job.width, launch.border);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < T::kHaloRows * T::kInBytes; i += T::kThreads) {
    const int r = i / T::kInBytes;
    const int e = i - r * T::kInBytes;
    const int sy = s_source_row[r];
    const int sx = s_source_column[e / C];
    s_in[r * T::kInPitch + e] =
        sy >= 0 && sx >= 0 ? job.frame[sy * job.frame_pitch + sx * C + e % C] : launch.border_value;
  }
}

// Horizontal pass: each item filters kVec pixels of one staged row into the float tile, taps in
// ascending order as the CPU reference sums them.
template <int C, int R>
__device__ void horizontal_pass(const FusedLaunch& launch, const std::uint8_t* s_in, float* s_h) {
  using T = Tile<C, R>;
  constexpr int kItemsPerRow = kTileWidth / kVec;
  for (int i = threadIdx.x; i < T::kHaloRows * kItemsPerRow; i += T::kThreads) {
    const int r = i / kItemsPerRow;
    const int q = i - r * kItemsPerRow;
    const std::uint8_t* src = s_in + r * T::kInPitch + q * kVec * C;
    std::uint32_t words[T::kItemWords];
    if constexpr (C % 4 == 0) {
#pragma unroll
      for (int k = 0; k < T::kItemWords / 4; ++k) {
        const uint4 v = reinterpret_cast<const uint4*>(src)[k];
        words[4 * k] = v.x;
        words[4 * k + 1] = v.y;
        words[4 * k + 2] = v.z;
        words[4 * k + 3] = v.w;
      }
    } else {
#pragma unroll
      for (int k = 0; k < T::kItemWords; ++k) words[k] = reinterpret_cast<const std::uint32_t*>(src)[k];
    }
    float in[T::kItemBytes];
#pragma unroll
    for (int n = 0; n < T::kItemBytes; ++n) in[n] = byte_value(words[n / 4], n % 4);
    float out[kVec * C];
#pragma unroll
    for (int o = 0; o < kVec * C; ++o) {
      float sum = 0.0f;
#pragma unroll
      for (int k = 0; k <= 2 * R; ++k) sum = fmaf(launch.wx[k], in[o + k * C], sum);
      out[o] = sum;
    }
    auto* dst = reinterpret_cast<float4*>(s_h + r * T::kOutBytes + q * kVec * C);
#pragma unroll
    for (int k = 0; k < C; ++k)
      dst[k] = make_float4(out[4 * k], out[4 * k + 1], out[4 * k + 2], out[4 * k + 3]);
  }
}

// Vertical pass and blend: the thread's kVec bytes of kRowsPerThread rows. Each float4 of the tile is
// loaded once and added into every output row it reaches (taps in ascending order per row).
template <int C, int R>
__device__ void vertical_blend(const FusedLaunch& launch, const FusedJob& job, int x0, int y0,
                               const float* s_h, const std::uint8_t* s_in, const std::uint8_t* s_mask) {
  using T = Tile<C, R>;
  const int column = threadIdx.x % T::kColumns;
  const int r0 = threadIdx.x / T::kColumns * kRowsPerThread;
  const int e = column * kVec;
  const int limit = (job.width - x0) * C;
  if (e >= limit) return;
  float acc[kRowsPerThread][kVec] = {};
  const float4* src = reinterpret_cast<const float4*>(s_h) + r0 * T::kColumns + column;
#pragma unroll
  for (int k = 0; k < kRowsPerThread + 2 * R; ++k) {
    const float4 v = src[k * T::kColumns];
#pragma unroll
    for (int o = 0; o < kRowsPerThread; ++o) {
      const int tap = k - o;
      if (tap >= 0 && tap <= 2 * R) {
        const float w = launch.wy[tap];
        acc[o][0] = fmaf(w, v.x, acc[o][0]);
        acc[o][1] = fmaf(w, v.y, acc[o][1]);
        acc[o][2] = fmaf(w, v.z, acc[o][2]);
        acc[o][3] = fmaf(w, v.w, acc[o][3]);
      }
    }
  }
  std::uint8_t* out_row = job.out + (y0 + r0) * job.out_pitch + x0 * C;
#pragma unroll
  for (int o = 0; o < kRowsPerThread; ++o, out_row += job.out_pitch) {
    const int r = r0 + o;
    if (y0 + r >= job.height) break;
    std::uint32_t packed = 0;
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      const int m = s_mask[r * kTileWidth + (e + i) / C];
      const int sharp = s_in[(r + R) * T::kInPitch + R * C + e + i];
      const int blurred = static_cast<int>(round_to_u8(acc[o][i]));
      packed |= static_cast<std::uint32_t>(detail::blend_u8(m, sharp, blurred)) << (8 * i);
    }
    store4(out_row, e, limit, packed, job.out_aligned);
  }
}

// Where the mask is all 255 the output is the frame itself (blend_u8(255, f, b) == f exactly).
template <int C, int R>
__device__ void copy_tile(const FusedJob& job, int x0, int y0) {
  using T = Tile<C, R>;
  const int e = threadIdx.x % T::kColumns * kVec;
  const int r0 = threadIdx.x / T::kColumns * kRowsPerThread;
  const int limit = (job.width - x0) * C;
  if (e >= limit) return;
  for (int y = y0 + r0; y < y0 + r0 + kRowsPerThread && y < job.height; ++y) {
    const std::uint32_t packed = load4(job.frame + y * job.frame_pitch + x0 * C, e, limit, job.frame_aligned);
    store4(job.out + y * job.out_pitch + x0 * C, e, limit, packed, job.out_aligned);
  }
}

template <int C, int R>
__global__ void __launch_bounds__(Tile<C, R>::kThreads)
    blur_composite_kernel(const __grid_constant__ FusedLaunch launch) {
  using T = Tile<C, R>;
  const FusedJob& job = launch.jobs[blockIdx.z];
  const int x0 = blockIdx.x * kTileWidth;
  const int y0 = blockIdx.y * kTileHeight;
  if (x0 >= job.width || y0 >= job.height) return;
  extern __shared__ __align__(16) std::uint8_t shared[];
  auto* s_h = reinterpret_cast<float*>(shared);
  std::uint8_t* s_in = shared + T::kInOffset;
  std::uint8_t* s_mask = shared + T::kMaskOffset;
  if (stage_mask<T::kThreads>(job, x0, y0, s_mask)) {
    copy_tile<C, R>(job, x0, y0);
    return;
  }
  stage_frame<C, R>(launch, job, x0, y0, s_in);
  __syncthreads();
  horizontal_pass<C, R>(launch, s_in, s_h);
  __syncthreads();
  vertical_blend<C, R>(launch, job, x0, y0, s_h, s_in, s_mask);
}

template <int C, int R>
Status launch_tiles(cudaStream_t stream, const FusedLaunch& launch, int num_jobs, int max_width,
                    int max_height) {
  using T = Tile<C, R>;
  if (T::kSharedBytes > kDefaultSharedLimit) {
    FOVEA_CUDA_TRY(cudaFuncSetAttribute(blur_composite_kernel<C, R>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(T::kSharedBytes)));
  }
  const dim3 grid((max_width + kTileWidth - 1) / kTileWidth, (max_height + kTileHeight - 1) / kTileHeight,
                  num_jobs);
  blur_composite_kernel<C, R><<<grid, T::kThreads, T::kSharedBytes, stream>>>(launch);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

// The unrolled radii: 3, 7 and 15 (kernels up to 7, 15 and 31 taps).
int padded_radius(const BlurParams& params) {
  const int radius = std::max(params.kernel_width, params.kernel_height) / 2;
  return radius <= 3 ? 3 : (radius <= 7 ? 7 : 15);
}

template <int C>
Status launch_for_radius(cudaStream_t stream, int radius, const FusedLaunch& launch, int num_jobs,
                         int max_width, int max_height) {
  switch (radius) {
    case 3: return launch_tiles<C, 3>(stream, launch, num_jobs, max_width, max_height);
    case 7: return launch_tiles<C, 7>(stream, launch, num_jobs, max_width, max_height);
    default: return launch_tiles<C, 15>(stream, launch, num_jobs, max_width, max_height);
  }
}

// `weights` centered in 2 * radius + 1 taps, zeros around.
void pad_weights(const std::vector<float>& weights, int radius, float* out) {
  std::fill(out, out + 2 * radius + 1, 0.0f);
  std::copy(weights.begin(), weights.end(), out + radius - static_cast<int>(weights.size()) / 2);
}

bool aligned4(const void* p, std::size_t pitch) {
  return reinterpret_cast<std::uintptr_t>(p) % 4 == 0 && pitch % 4 == 0;
}

FusedJob fused_job(const ImageBatch& frame, const ImageBatch& mask, const ImageBatch& output, int i) {
  const ImageView f = roi_subview(frame.images[i], frame.roi(i));
  const ImageView m = roi_subview(mask.images[i], mask.roi(i));
  const ImageView o = roi_subview(output.images[i], output.roi(i));
  FusedJob job;
  job.frame = static_cast<const std::uint8_t*>(f.planes[0].data);
  job.frame_pitch = f.planes[0].pitch;
  job.mask = static_cast<const std::uint8_t*>(m.planes[0].data);
  job.mask_pitch = m.planes[0].pitch;
  job.out = static_cast<std::uint8_t*>(o.planes[0].data);
  job.out_pitch = o.planes[0].pitch;
  job.width = f.width;
  job.height = f.height;
  job.frame_aligned = aligned4(job.frame, job.frame_pitch);
  job.out_aligned = aligned4(job.out, job.out_pitch);
  return job;
}

}  // namespace

Status run_blur_composite_cuda(cudaStream_t stream, const ImageBatch& frame, const ImageBatch& mask,
                               const ImageBatch& output, const BlurParams& params) {
  FOVEA_NVTX_RANGE("blur_composite");
  FOVEA_TRY(detail::check_blur_composite(frame, mask, &output, params));
  FusedLaunch launch{};
  const int radius = padded_radius(params);
  const double sigma_y = params.sigma_y > 0.0 ? params.sigma_y : params.sigma_x;
  pad_weights(blur_weights(params.kind, params.kernel_width, params.sigma_x), radius, launch.wx);
  pad_weights(blur_weights(params.kind, params.kernel_height, sigma_y), radius, launch.wy);
  launch.border = params.border;
  launch.border_value = static_cast<std::uint8_t>(params.border_value);
  // One launch covers up to kJobsPerLaunch images of one channel count; a change starts a new one.
  const auto channels = [&](int i) { return pixel_bytes(frame.images[i].format); };
  const auto flush = [&](int c, int num_jobs, int max_width, int max_height) {
    return c == 4 ? launch_for_radius<4>(stream, radius, launch, num_jobs, max_width, max_height)
                  : launch_for_radius<3>(stream, radius, launch, num_jobs, max_width, max_height);
  };
  int num_jobs = 0;
  int max_width = 0;
  int max_height = 0;
  for (int i = 0; i < frame.size(); ++i) {
    if (num_jobs == kJobsPerLaunch || (num_jobs > 0 && channels(i) != channels(i - 1))) {
      FOVEA_TRY(flush(channels(i - 1), num_jobs, max_width, max_height));
      num_jobs = max_width = max_height = 0;
    }
    launch.jobs[num_jobs] = fused_job(frame, mask, output, i);
    max_width = std::max(max_width, launch.jobs[num_jobs].width);
    max_height = std::max(max_height, launch.jobs[num_jobs].height);
    ++num_jobs;
  }
  return flush(channels(frame.size() - 1), num_jobs, max_width, max_height);
}

}  // namespace fovea::image
