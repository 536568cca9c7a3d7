// Fused preprocess benchmark: a batch of NV12 frames to a network tensor (default: 8 x 1080p to
// 3x544x960 FP16 NCHW), timed with CUDA events over many iterations, next to the
// device-to-device copy bandwidth measured in the same program. Bandwidth counts the bytes the
// kernel must read (the NV12 payload of each ROI; here the whole frames, all of which a 2x
// bilinear downscale samples) plus the bytes it writes.
//
// Both sides rotate over --sets copies of their buffers (default 4, ~200 MB in all), so no
// iteration finds its input in the 50-60 MB L2 of an H100/H200 and the figures are DRAM figures.
//
//   preprocess_bench [--batch 8] [--in 1920x1080] [--out 960x544] [--dtype f16|f32]
//                    [--layout nchw|nhwc] [--iters 200] [--sets 4] [--json result.json]
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "image/preprocess.h"

namespace {

using fovea::DataType;
using fovea::image::ImageBatch;
using fovea::image::PreprocessParams;
using fovea::image::TensorLayout;

#define BENCH_CUDA(call)                                                                         \
  do {                                                                                           \
    cudaError_t e = (call);                                                                      \
    if (e != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

struct Options {
  int batch = 8;
  int in_width = 1920, in_height = 1080;
  int out_width = 960, out_height = 544;
  DataType dtype = DataType::kFloat16;
  TensorLayout layout = TensorLayout::kNCHW;
  int iters = 200;
  int sets = 4;
  std::string json;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const char* v = argv[i + 1];
    if (key == "--batch")
      o.batch = std::atoi(v);
    else if (key == "--in")
      std::sscanf(v, "%dx%d", &o.in_width, &o.in_height);
    else if (key == "--out")
      std::sscanf(v, "%dx%d", &o.out_width, &o.out_height);
    else if (key == "--dtype")
      o.dtype = std::strcmp(v, "f32") == 0 ? DataType::kFloat32 : DataType::kFloat16;
    else if (key == "--layout")
      o.layout = std::strcmp(v, "nhwc") == 0 ? TensorLayout::kNHWC : TensorLayout::kNCHW;
    else if (key == "--iters")
      o.iters = std::atoi(v);
    else if (key == "--sets")
      o.sets = std::atoi(v);
    else if (key == "--json")
      o.json = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", key.c_str());
      std::exit(2);
    }
  }
  return o;
}

// Milliseconds per call of `body(iteration)`, averaged over `iters` calls after 10 warm-up calls.
template <class Body>
double time_ms(int iters, cudaStream_t stream, Body&& body) {
  for (int i = 0; i < 10; ++i) body(i);
  cudaEvent_t start, stop;
  BENCH_CUDA(cudaEventCreate(&start));
  BENCH_CUDA(cudaEventCreate(&stop));
  BENCH_CUDA(cudaEventRecord(start, stream));
  for (int i = 0; i < iters; ++i) body(i);
  BENCH_CUDA(cudaEventRecord(stop, stream));
  BENCH_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
  BENCH_CUDA(cudaGetLastError());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return static_cast<double>(ms) / iters;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  PreprocessParams params;
  params.width = o.out_width;
  params.height = o.out_height;
  params.dtype = o.dtype;
  params.layout = o.layout;
  params.mean = {0.485f, 0.456f, 0.406f};
  params.std = {0.229f, 0.224f, 0.225f};

  // Frames: --sets batches of NV12 frames, random content, pitched like NVDEC surfaces.
  std::vector<std::uint8_t> host(static_cast<std::size_t>(o.in_width) * o.in_height * 3 / 2);
  std::mt19937 rng(1);
  for (auto& b : host) b = static_cast<std::uint8_t>(rng());
  std::vector<ImageBatch> batches(static_cast<std::size_t>(o.sets));
  std::vector<void*> allocations;
  for (ImageBatch& batch : batches) {
    for (int i = 0; i < o.batch; ++i) {
      fovea::ImageView view;
      view.format = fovea::PixelFormat::kNV12;
      view.width = o.in_width;
      view.height = o.in_height;
      view.memory = fovea::MemoryKind::kDevice;
      view.num_planes = 2;
      void* data = nullptr;
      std::size_t pitch = 0;
      BENCH_CUDA(cudaMallocPitch(&data, &pitch, o.in_width, o.in_height * 3 / 2));
      BENCH_CUDA(cudaMemcpy2D(data, pitch, host.data(), o.in_width, o.in_width, o.in_height * 3 / 2,
                              cudaMemcpyHostToDevice));
      allocations.push_back(data);
      view.planes[0] = {data, pitch};
      view.planes[1] = {static_cast<std::uint8_t*>(data) + pitch * o.in_height, pitch};
      batch.images.push_back(view);
    }
  }
  auto plan = fovea::image::plan_preprocess(batches[0], params);
  if (!plan.is_ok()) {
    std::fprintf(stderr, "%s\n", plan.status().to_string().c_str());
    return 1;
  }
  const auto& s = plan->shape;
  std::vector<fovea::TensorView> outputs;
  for (int k = 0; k < o.sets; ++k) {
    void* d_out = nullptr;
    BENCH_CUDA(cudaMalloc(&d_out, plan->output_bytes));
    allocations.push_back(d_out);
    outputs.push_back(
        fovea::contiguous_tensor(d_out, o.dtype, fovea::MemoryKind::kDevice, {s[0], s[1], s[2], s[3]}));
  }
  const double read_bytes = static_cast<double>(host.size()) * o.batch;
  const double written_bytes = static_cast<double>(plan->output_bytes);

  cudaStream_t stream = nullptr;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto run = [&](int k) {
    const fovea::Status status = fovea::image::run_preprocess_cuda(
        stream, batches[static_cast<std::size_t>(k)], params, outputs[static_cast<std::size_t>(k)]);
    if (!status.is_ok()) {
      std::fprintf(stderr, "%s\n", status.to_string().c_str());
      std::exit(1);
    }
  };
  // Direct calls include the host's validation and launch per batch; if those took longer than the
  // kernel, the GPU would wait for the host and this time would be the host's.
  const double direct_ms = time_ms(o.iters, stream, [&](int i) { run(i % o.sets); });
  // The pipeline replays captured work; a CUDA graph per input set measures the kernel alone.
  std::vector<cudaGraphExec_t> graphs(static_cast<std::size_t>(o.sets));
  for (int k = 0; k < o.sets; ++k) {
    cudaGraph_t graph = nullptr;
    BENCH_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    run(k);
    BENCH_CUDA(cudaStreamEndCapture(stream, &graph));
    BENCH_CUDA(cudaGraphInstantiate(&graphs[static_cast<std::size_t>(k)], graph, 0));
    BENCH_CUDA(cudaGraphDestroy(graph));
  }
  const double preprocess_ms = time_ms(o.iters, stream, [&](int i) {
    BENCH_CUDA(cudaGraphLaunch(graphs[static_cast<std::size_t>(i % o.sets)], stream));
  });

  // The copy moves as many bytes as the preprocess touches: read_bytes + written_bytes in all.
  const std::size_t copy_bytes = static_cast<std::size_t>((read_bytes + written_bytes) / 2);
  std::vector<void*> copy_src(static_cast<std::size_t>(o.sets)), copy_dst(static_cast<std::size_t>(o.sets));
  for (int k = 0; k < o.sets; ++k) {
    BENCH_CUDA(cudaMalloc(&copy_src[static_cast<std::size_t>(k)], copy_bytes));
    BENCH_CUDA(cudaMalloc(&copy_dst[static_cast<std::size_t>(k)], copy_bytes));
    BENCH_CUDA(cudaMemset(copy_src[static_cast<std::size_t>(k)], 1, copy_bytes));
  }
  const double copy_ms = time_ms(o.iters, stream, [&](int i) {
    const auto k = static_cast<std::size_t>(i % o.sets);
    BENCH_CUDA(cudaMemcpyAsync(copy_dst[k], copy_src[k], copy_bytes, cudaMemcpyDeviceToDevice, stream));
  });

  const double preprocess_gbs = (read_bytes + written_bytes) / (preprocess_ms * 1e6);
  const double copy_gbs = 2.0 * static_cast<double>(copy_bytes) / (copy_ms * 1e6);
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s\n", prop.name);
  std::printf(
      "preprocess: %d x NV12 %dx%d -> %s %s 3x%dx%d: %.4f ms/batch (CUDA graph replay), read %.1f MB + "
      "written %.1f MB, %.1f "
      "GB/s\n",
      o.batch, o.in_width, o.in_height, o.dtype == DataType::kFloat16 ? "f16" : "f32",
      o.layout == TensorLayout::kNCHW ? "NCHW" : "NHWC", o.out_height, o.out_width, preprocess_ms,
      read_bytes / 1e6, written_bytes / 1e6, preprocess_gbs);
  std::printf("  direct calls (validation + launch each): %.4f ms/batch\n", direct_ms);
  std::printf("device-to-device copy of %.1f MB: %.4f ms, %.1f GB/s (read + written)\n",
              static_cast<double>(copy_bytes) / 1e6, copy_ms, copy_gbs);
  std::printf("preprocess / copy bandwidth: %.1f%% (target >= 70%%)\n", 100.0 * preprocess_gbs / copy_gbs);
  if (!o.json.empty()) {
    FILE* f = std::fopen(o.json.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", o.json.c_str());
      return 1;
    }
    std::fprintf(f,
                 "{\"device\": \"%s\", \"batch\": %d, \"preprocess_ms\": %.6f, \"preprocess_gbs\": %.3f, "
                 "\"copy_gbs\": %.3f, \"ratio_to_copy\": %.4f}\n",
                 prop.name, o.batch, preprocess_ms, preprocess_gbs, copy_gbs, preprocess_gbs / copy_gbs);
    std::fclose(f);
  }
  for (cudaGraphExec_t g : graphs) cudaGraphExecDestroy(g);
  cudaStreamDestroy(stream);
  for (void* p : allocations) cudaFree(p);
  for (int k = 0; k < o.sets; ++k) {
    cudaFree(copy_src[static_cast<std::size_t>(k)]);
    cudaFree(copy_dst[static_cast<std::size_t>(k)]);
  }
  return 0;
}
