// JPEG on the GPU through nvJPEG, loaded at run time (libnvjpeg.so.13, .12, then libnvjpeg.so) so
// that fovea builds and runs where the CUDA toolkit has no nvJPEG; there available() is false and
// create() says why (kUnsupported). The CPU path (io/image_codec.h, libjpeg-turbo) is the fallback
// and the reference the GPU output is compared with.
//
// Which path decodes a file (JpegRoute) comes from its header, read on the CPU (read_jpeg_info):
//
// | route    | nvJPEG backend            | takes (NVIDIA's nvJPEG documentation, "nvJPEG Backend")     |
// |----------|---------------------------|--------------------------------------------------------------|
// | hardware | NVJPEG_BACKEND_HARDWARE   | baseline (SOF0) Huffman, one scan, 1 or 3 components, 8-bit, |
// |          | (the GPU's JPEG engines)  | 4:4:4, 4:2:2, 4:2:0, 4:4:0 or gray; not 4:1:1, 4:1:0          |
// | gpu      | NVJPEG_BACKEND_GPU_HYBRID | also extended (SOF1) Huffman, several scans, 4:1:1 and 4:1:0 |
// | cpu      | libjpeg-turbo             | the rest: progressive (nvJPEG decodes it, but wrongly after a |
// |          |                           | larger progressive file: why_not_gpu), arithmetic coding,    |
// |          |                           | lossless, 12-bit, CMYK, YCCK, RGB-stored (Adobe transform 0)  |
// |          |                           | files, unusual sampling                                       |
//
// Output: kRGB8 in device memory, the file's stored width x height, on the caller's stream. EXIF
// orientation is NOT applied on any route (JpegInfo::orientation tells the caller what to apply),
// so every route gives the same pixels for the same file. Gray files come out as R = G = B.
// Chroma is upsampled by replication on the GPU, while libjpeg-turbo interpolates ("fancy"
// upsampling): subsampled files differ from the CPU reference near sharp color edges.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/cuda_stream.h"
#include "core/image.h"
#include "core/status.h"

namespace fovea::io {

// kAuto: the hardware engines when the GPU has them, else the GPU hybrid backend.
enum class NvjpegBackend { kAuto, kHardware, kGpu };
std::string_view nvjpeg_backend_name(NvjpegBackend backend);

enum class JpegRoute { kHardware, kGpu, kCpu };
std::string_view jpeg_route_name(JpegRoute route);

enum class JpegCoding { kBaseline, kExtended, kProgressive, kLossless, kHierarchical, kArithmetic };
enum class JpegColor { kGray, kYCbCr, kRgb, kCmyk, kYcck };
// Chroma sampling of a YCbCr file relative to luma; kGray for one component, kOther for sampling
// factors that fit none of the named ones (and for CMYK/YCCK).
enum class JpegSampling { kGray, k444, k422, k420, k440, k411, k410, kOther };
std::string_view jpeg_sampling_name(JpegSampling sampling);

struct JpegInfo {
  int width = 0;
  int height = 0;
  int components = 0;
  int precision = 8;  // bits per sample
  int scans = 0;
  JpegCoding coding = JpegCoding::kBaseline;
  JpegColor color = JpegColor::kYCbCr;
  JpegSampling sampling = JpegSampling::kOther;
  int orientation = 1;  // EXIF orientation (1 when none); never applied by decode_batch
  // The last scan's entropy-coded data runs to the end of the file, with no EOI marker after it:
  // a file whose writer left the EOI off, or one cut short inside its data, which only decoding
  // tells apart. Such a file takes the CPU route, where libjpeg decodes the first and names the
  // second as damaged (decode_jpeg).
  bool ends_without_eoi = false;
  // What each GPU backend can take, and if not, why ("progressive", "CMYK", ...).
  bool hardware_decodable = false;
  bool gpu_decodable = false;
  std::string not_hardware_reason;
  std::string not_gpu_reason;
  // Filled by NvjpegDecoder::probe: the path this decoder takes for the file.
  JpegRoute route = JpegRoute::kCpu;
};

// Reads the file's markers up to EOI without decoding pixels (and without nvJPEG). Errors name
// `name`: kCorruptData (not a JPEG, a header or marker segment cut short, no scan), kUnsupported (a
// height given only after the first scan), kResourceExhausted (beyond ImageLimits). Data that runs
// to the end without an EOI is no error here: `ends_without_eoi`.
Result<JpegInfo> read_jpeg_info(std::span<const std::uint8_t> bytes, std::string_view name);

// Images and compressed bytes per route since the decoder was created.
struct NvjpegStats {
  std::int64_t hardware_images = 0;
  std::int64_t hardware_bytes = 0;
  std::int64_t gpu_images = 0;
  std::int64_t gpu_bytes = 0;
  std::int64_t cpu_images = 0;  // fell back: decoded by libjpeg-turbo, then uploaded
  std::int64_t cpu_bytes = 0;
};

// One decoder on one device, used by one thread at a time (nvJPEG's decoding states are per
// thread). Makes `device` current on the calling thread in create() and decode_batch().
class NvjpegDecoder {
 public:
  // Whether libnvjpeg loads (and this build has CUDA). Says nothing of the GPU.
  static bool available();
  // kUnsupported naming what failed: no CUDA in this build, no libnvjpeg (every name tried), a
  // missing symbol, no GPU, or (kHardware) a GPU without JPEG engines.
  static Result<std::unique_ptr<NvjpegDecoder>> create(NvjpegBackend backend, int device = 0);

  ~NvjpegDecoder();
  NvjpegDecoder(const NvjpegDecoder&) = delete;
  NvjpegDecoder& operator=(const NvjpegDecoder&) = delete;

  // kHardware or kGpu: what kAuto resolved to.
  NvjpegBackend backend() const;
  // The hardware decoder's engines (0 with the GPU backend, or when the library does not say).
  int hardware_engines() const;
  // Why kAuto did not get the hardware backend ("" when it did or was not asked).
  const std::string& hardware_unavailable_reason() const;

  // read_jpeg_info, with the route this decoder takes for the file.
  Result<JpegInfo> probe(std::span<const std::uint8_t> bytes, std::string_view name) const;

  // Decodes jpegs[i] into outputs[i] (kRGB8, device memory, the size probe() gives) on `stream`:
  // the hardware route's files in one batched call, the GPU route's one by one, the CPU route's
  // through libjpeg-turbo and an upload. The bytes must stay valid until the work on `stream`
  // completes. A failed hardware batch is retried file by file on the GPU backend, so the error
  // names the file: the first failure is returned (the files before it are decoded).
  // The stream comes first, as in every fovea GPU entry point.
  Status decode_batch(cudaStream_t stream, std::span<const std::span<const std::uint8_t>> jpegs,
                      std::span<const std::string_view> names, std::span<const ImageView> outputs);
  // The same with each file's probe() taken already (infos[i] for jpegs[i], from this decoder): the
  // markers are not walked again. A caller that read the headers to size its outputs saves the
  // second walk, which for files with several scans (or bytes after their EOI) reads every byte of
  // the entropy-coded data.
  Status decode_batch(cudaStream_t stream, std::span<const std::span<const std::uint8_t>> jpegs,
                      std::span<const std::string_view> names, std::span<const ImageView> outputs,
                      std::span<const JpegInfo> infos);

  NvjpegStats stats() const;

 private:
  struct Impl;
  explicit NvjpegDecoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fovea::io
