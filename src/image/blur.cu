// Separable blur in one kernel per launch: each block stages input rows (border applied) in shared
// memory, runs the horizontal pass into a shared tile that covers the vertical kernel's reach, then
// runs the vertical pass from it, so the intermediate never goes to global memory.
#include <algorithm>

#include "core/cuda_check.h"
#include "core/nvtx.h"
#include "image/blur.h"

namespace fovea::image {

namespace {

// 16 planes per launch keep the launch parameters (jobs + weights) under the 4 KiB that kernel
// arguments may take; larger batches take several launches.
constexpr int kJobsPerLaunch = 16;
// A 32x32 output tile per 32x8 block: 32 columns make warp-wide rows (coalesced loads, conflict-
// free shared access); 32 rows halve the vertical halo overhead of 16 at radius 7.
constexpr int kTileWidth = 32;
constexpr int kTileHeight = 32;
constexpr int kBlockRows = 8;
constexpr int kThreads = kTileWidth * kBlockRows;
// Each thread's vertical pass slides down 4 output rows, reusing each shared load 4 times.
constexpr int kRowsPerThread = kTileHeight / kBlockRows;

struct BlurLaunch {
  detail::PlaneJob jobs[kJobsPerLaunch];
  float wx[kMaxBlurKernelSize];
  float wy[kMaxBlurKernelSize];
  int kernel_width;
  int kernel_height;
  BorderMode border;
  float border_value;
};

template <typename T>
__device__ float load_sample(const void* base, std::size_t pitch, int y, int element) {
  return static_cast<float>(
      reinterpret_cast<const T*>(static_cast<const std::uint8_t*>(base) + y * pitch)[element]);
}

// Shared floats: kBlockRows staged input rows, then the horizontal results for every row the
// vertical kernel reaches.
template <int C>
std::size_t shared_bytes(int kernel_width, int kernel_height) {
  const std::size_t staged = static_cast<std::size_t>(kBlockRows) * (kTileWidth + kernel_width - 1) * C;
  const std::size_t horizontal = static_cast<std::size_t>(kTileHeight + kernel_height - 1) * kTileWidth * C;
  return (staged + horizontal) * sizeof(float);
}

template <typename T, int C>
__global__ void __launch_bounds__(kThreads) blur_tile_kernel(const __grid_constant__ BlurLaunch launch) {
  const detail::PlaneJob& job = launch.jobs[blockIdx.z];
  const int x0 = blockIdx.x * kTileWidth;
  const int y0 = blockIdx.y * kTileHeight;
  if (x0 >= job.width || y0 >= job.height) return;
  extern __shared__ float shared[];
  const int rx = launch.kernel_width / 2;
  const int ry = launch.kernel_height / 2;
  const int staged_cols = (kTileWidth + launch.kernel_width - 1) * C;
  const int horizontal_rows = kTileHeight + launch.kernel_height - 1;
  constexpr int kTileElements = kTileWidth * C;
  float* s_in = shared;
  float* s_h = shared + kBlockRows * staged_cols;
  const int tid = threadIdx.y * kTileWidth + threadIdx.x;

  for (int r0 = 0; r0 < horizontal_rows; r0 += kBlockRows) {
    for (int i = tid; i < kBlockRows * staged_cols; i += kThreads) {
      const int r = i / staged_cols;
      const int e = i - r * staged_cols;
      const int sy = border_index(y0 - ry + r0 + r, job.height, launch.border);
      const int sx = border_index(x0 - rx + e / C, job.width, launch.border);
      s_in[i] = r0 + r < horizontal_rows && sy >= 0 && sx >= 0
                    ? load_sample<T>(job.src, job.src_pitch, sy, sx * C + e % C)
                    : launch.border_value;
    }
    __syncthreads();
    const int r = r0 + threadIdx.y;
    if (r < horizontal_rows) {
      // Rows beyond the edges under kConstant are the border value itself, as in the CPU reference.
      const bool constant_row = border_index(y0 - ry + r, job.height, launch.border) < 0;
      for (int e = threadIdx.x; e < kTileElements; e += kTileWidth) {
        float sum = 0.0f;
        const float* row = s_in + threadIdx.y * staged_cols + e;
        for (int k = 0; k < launch.kernel_width; ++k) sum += launch.wx[k] * row[k * C];
        s_h[r * kTileElements + e] = constant_row ? launch.border_value : sum;
      }
    }
    __syncthreads();
  }

  const int oy0 = threadIdx.y * kRowsPerThread;
  for (int e = threadIdx.x; e < kTileElements; e += kTileWidth) {
    float acc[kRowsPerThread] = {};
    // Input row oy0 + k feeds output row oy0 + j with weight wy[k - j]; each acc[j] still sums its
    // taps in ascending order, as the CPU reference does.
    for (int k = 0; k < launch.kernel_height + kRowsPerThread - 1; ++k) {
      const float v = s_h[(oy0 + k) * kTileElements + e];
#pragma unroll
      for (int j = 0; j < kRowsPerThread; ++j) {
        const int tap = k - j;
        if (tap >= 0 && tap < launch.kernel_height) acc[j] += launch.wy[tap] * v;
      }
    }
    const int x = x0 + e / C;
    if (x >= job.width) continue;
#pragma unroll
    for (int j = 0; j < kRowsPerThread; ++j) {
      const int y = y0 + oy0 + j;
      if (y < job.height) {
        T* out = reinterpret_cast<T*>(static_cast<std::uint8_t*>(job.dst) + y * job.dst_pitch);
        detail::store_sample(&out[x0 * C + e], acc[j]);
      }
    }
  }
}

template <typename T, int C>
Status launch_blur(cudaStream_t stream, const BlurLaunch& launch, int num_jobs, int max_width,
                   int max_height) {
  const std::size_t bytes = shared_bytes<C>(launch.kernel_width, launch.kernel_height);
  // Above the default 48 KiB a kernel must opt in (wide kernels: up to ~180 KiB at 255 taps).
  constexpr std::size_t kDefaultSharedLimit = 48 * 1024;
  if (bytes > kDefaultSharedLimit) {
    FOVEA_CUDA_TRY(cudaFuncSetAttribute(blur_tile_kernel<T, C>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes)));
  }
  const dim3 grid((max_width + kTileWidth - 1) / kTileWidth, (max_height + kTileHeight - 1) / kTileHeight,
                  num_jobs);
  blur_tile_kernel<T, C><<<grid, dim3(kTileWidth, kBlockRows), bytes, stream>>>(launch);
  FOVEA_CUDA_TRY_LAUNCH();
  return Status::ok();
}

Status launch_for_format(cudaStream_t stream, PixelFormat format, const BlurLaunch& launch, int num_jobs,
                         int max_width, int max_height) {
  switch (format) {
    case PixelFormat::kRGB8:
    case PixelFormat::kBGR8:
      return launch_blur<std::uint8_t, 3>(stream, launch, num_jobs, max_width, max_height);
    case PixelFormat::kRGBA8:
      return launch_blur<std::uint8_t, 4>(stream, launch, num_jobs, max_width, max_height);
    case PixelFormat::kGRAY8:
      return launch_blur<std::uint8_t, 1>(stream, launch, num_jobs, max_width, max_height);
    default: return launch_blur<float, 1>(stream, launch, num_jobs, max_width, max_height);
  }
}

}  // namespace

Status run_blur_cuda(cudaStream_t stream, const ImageBatch& input, const ImageBatch& output,
                     const BlurParams& params) {
  FOVEA_NVTX_RANGE("blur");
  FOVEA_TRY(detail::check_blur(input, output, params));
  BlurLaunch launch{};
  const double sigma_y = params.sigma_y > 0.0 ? params.sigma_y : params.sigma_x;
  const std::vector<float> wx = blur_weights(params.kind, params.kernel_width, params.sigma_x);
  const std::vector<float> wy = blur_weights(params.kind, params.kernel_height, sigma_y);
  std::copy(wx.begin(), wx.end(), launch.wx);
  std::copy(wy.begin(), wy.end(), launch.wy);
  launch.kernel_width = params.kernel_width;
  launch.kernel_height = params.kernel_height;
  launch.border = params.border;
  launch.border_value = params.border_value;
  // One launch covers up to kJobsPerLaunch planes of one format; a format change starts a new one.
  int num_jobs = 0;
  int max_width = 0;
  int max_height = 0;
  PixelFormat format = input.images[0].format;
  for (int i = 0; i < input.size(); ++i) {
    for (int p = 0; p < detail::plane_count(input.images[i]); ++p) {
      if (num_jobs == kJobsPerLaunch || (num_jobs > 0 && input.images[i].format != format)) {
        FOVEA_TRY(launch_for_format(stream, format, launch, num_jobs, max_width, max_height));
        num_jobs = max_width = max_height = 0;
      }
      format = input.images[i].format;
      launch.jobs[num_jobs] = detail::plane_job(input, output, i, p);
      max_width = std::max(max_width, launch.jobs[num_jobs].width);
      max_height = std::max(max_height, launch.jobs[num_jobs].height);
      ++num_jobs;
    }
  }
  return launch_for_format(stream, format, launch, num_jobs, max_width, max_height);
}

}  // namespace fovea::image
