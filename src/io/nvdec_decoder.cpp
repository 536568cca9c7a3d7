// The nvdec backend: nvcuvid's bitstream parser feeding an NVDEC hardware decoder, loaded at run time
// through FFmpeg's ffnvcodec loader so that fovea has no link-time dependency on the NVIDIA driver.
// Decoded pictures are copied out of the decoder's surfaces into pooled device memory on the
// caller's stream; nothing touches host memory.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "core/library_error.h"
#include "core/log.h"
#include "core/nvtx.h"
#include "core/pool.h"
#include "io/decoder.h"

namespace fovea::io {
namespace {
void append_loader_message(void* sink, const char* format, ...) __attribute__((format(printf, 2, 3)));
}  // namespace
}  // namespace fovea::io

// The loader reports the library or symbol it could not load through this hook; keep the text for
// the kUnsupported message instead of letting it print to stderr.
#define FFNV_LOG_FUNC(logctx, msg, ...) ::fovea::io::append_loader_message((logctx), (msg), __VA_ARGS__)
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...)
#include <ffnvcodec/dynlink_loader.h>

namespace fovea::io {
namespace {

// The parser's picture indices, and the SDK sample's per-picture tables (MAX_FRM_CNT), stop at 32.
constexpr int kMaxDecodeSurfaces = 32;
// Pictures mapped at once. A picture stays mapped until the copies out of it have finished on the
// caller's stream (an event tells), so the decoder waits for a copy only when it laps this ring or
// decodes into a surface still mapped, not after every frame; one slot is always free for the next
// map.
constexpr unsigned int kOutputSurfaces = 4;
// Call the decode callback even for pictures the parser finds corrupt, so the hardware conceals
// the damage and cuvidGetDecodeStatus reports it (the frame is flagged) instead of the parser
// dropping the picture without a trace.
constexpr unsigned int kErrorThresholdPercent = 100;

void append_loader_message(void* sink, const char* format, ...) {
  char line[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  auto* message = static_cast<std::string*>(sink);
  if (!message->empty()) {
    message->append("; ");
  }
  message->append(line);
  while (!message->empty() && message->back() == '\n') {
    message->pop_back();
  }
}

// ---------------------------------------------------------------------------------------------
// The driver libraries, loaded once per process.

struct NvdecLibrary {
  CudaFunctions* cu = nullptr;
  CuvidFunctions* cuvid = nullptr;
  Status status;
};

std::string describe_cu_error(const CudaFunctions& functions, CUresult result) {
  const char* name = nullptr;
  if (functions.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) {
    return "unknown CUDA driver error";
  }
  std::string message = name;
  const char* text = nullptr;
  if (functions.cuGetErrorString(result, &text) == CUDA_SUCCESS && text != nullptr) {
    message.append(": ").append(text);
  }
  return message;
}

NvdecLibrary load_nvdec_library() {
  NvdecLibrary library;
  std::string message;
  if (cuda_load_functions(&library.cu, &message) != 0) {
    library.status = make_error(StatusCode::kUnsupported, "NVDEC unavailable: ", message);
    return library;
  }
  if (cuvid_load_functions(&library.cuvid, &message) != 0) {
    library.status = make_error(StatusCode::kUnsupported, "NVDEC unavailable: ", message);
    return library;
  }
  if (library.cuvid->cuvidGetDecoderCaps == nullptr) {
    library.status = make_error(StatusCode::kUnsupported,
                                "NVDEC unavailable: the NVIDIA driver predates cuvidGetDecoderCaps (378.13)");
    return library;
  }
  const CUresult init = library.cu->cuInit(0);
  if (init != CUDA_SUCCESS) {
    library.status = make_error(StatusCode::kUnsupported,
                                "NVDEC unavailable: cuInit failed: ", describe_cu_error(*library.cu, init));
  }
  return library;
}

// Never unloaded: decoders and their frames can outlive main's locals, and unloading libcuda while
// the CUDA runtime still uses it is unsafe.
const NvdecLibrary& nvdec_library() {
  static const NvdecLibrary library = load_nvdec_library();
  return library;
}

// Only called once nvdec_library().status is ok.
const CudaFunctions& cu() {
  return *nvdec_library().cu;
}
const CuvidFunctions& cuvid() {
  return *nvdec_library().cuvid;
}

bool cu_ok(CUresult result) {
  return result == CUDA_SUCCESS;
}
std::string cu_message(CUresult result) {
  return describe_cu_error(cu(), result);
}

}  // namespace
}  // namespace fovea::io

// Return a kDeviceError Status from the enclosing function when a CUDA driver / NVDEC call fails,
// with the driver's own error name and text.
#define FOVEA_CU_TRY(call)                                                                      \
  FOVEA_LIBRARY_TRY(::fovea::StatusCode::kDeviceError, "CUDA driver", call, ::fovea::io::cu_ok, \
                    ::fovea::io::cu_message)
#define FOVEA_CUVID_TRY(call)                                                             \
  FOVEA_LIBRARY_TRY(::fovea::StatusCode::kDeviceError, "NVDEC", call, ::fovea::io::cu_ok, \
                    ::fovea::io::cu_message)

namespace fovea::io {
namespace {

// ---------------------------------------------------------------------------------------------
// RAII owners for the driver's handles.

struct ParserDestroyer {
  void operator()(CUvideoparser parser) const { static_cast<void>(cuvid().cuvidDestroyVideoParser(parser)); }
};
struct DecoderDestroyer {
  void operator()(CUvideodecoder decoder) const { static_cast<void>(cuvid().cuvidDestroyDecoder(decoder)); }
};
struct CtxLockDestroyer {
  void operator()(CUvideoctxlock lock) const { static_cast<void>(cuvid().cuvidCtxLockDestroy(lock)); }
};
using ParserHandle = std::unique_ptr<void, ParserDestroyer>;
using DecoderHandle = std::unique_ptr<void, DecoderDestroyer>;
using CtxLockHandle = std::unique_ptr<_CUcontextlock_st, CtxLockDestroyer>;
struct EventDestroyer {
  void operator()(CUevent event) const { static_cast<void>(cu().cuEventDestroy(event)); }
};
using EventHandle = std::unique_ptr<CUevent_st, EventDestroyer>;

// A picture mapped out of the decoder whose copies were queued on the caller's stream; `copied`
// completes when they have run, and only then may the picture be unmapped.
struct MappedPicture {
  int picture_index = 0;
  CUdeviceptr d_surface = 0;
  CUevent copied = nullptr;
};

// A reference on a device's primary context: the one the CUDA runtime uses, so device memory from
// cudaMalloc (the core pools) and NVDEC's surfaces live in the same context.
class PrimaryContext {
 public:
  PrimaryContext(CUdevice device, CUcontext context) : device_(device), context_(context) {}
  PrimaryContext(PrimaryContext&& other) noexcept
      : device_(other.device_), context_(std::exchange(other.context_, nullptr)) {}
  PrimaryContext& operator=(PrimaryContext&&) = delete;
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  ~PrimaryContext() {
    if (context_ != nullptr) {
      static_cast<void>(cu().cuDevicePrimaryCtxRelease(device_));
    }
  }

  CUdevice device() const { return device_; }
  CUcontext get() const { return context_; }

 private:
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

// Pops the context that the statement before it pushed, on every path out of the scope:
//   FOVEA_CU_TRY(cu().cuCtxPushCurrent(context));
//   const ContextPop pop;
class ContextPop {
 public:
  ContextPop() = default;
  ContextPop(const ContextPop&) = delete;
  ContextPop& operator=(const ContextPop&) = delete;
  ~ContextPop() {
    CUcontext popped = nullptr;
    static_cast<void>(cu().cuCtxPopCurrent(&popped));
  }
};

// ---------------------------------------------------------------------------------------------
// Codec and capability checks.

Result<cudaVideoCodec> cuvid_codec(const StreamInfo& stream) {
  switch (stream.codec) {
    case VideoCodec::kH264: return cudaVideoCodec_H264;
    case VideoCodec::kHevc: return cudaVideoCodec_HEVC;
    case VideoCodec::kVp9: return cudaVideoCodec_VP9;
    case VideoCodec::kAv1: return cudaVideoCodec_AV1;
    case VideoCodec::kMpeg4: return cudaVideoCodec_MPEG4;
    case VideoCodec::kMjpeg: return cudaVideoCodec_JPEG;
    case VideoCodec::kOther: break;
  }
  const std::string_view name =
      stream.codec_name.empty() ? video_codec_name(stream.codec) : stream.codec_name;
  return make_error(StatusCode::kUnsupported, "NVDEC has no decoder for codec ", name);
}

std::string_view chroma_name(int chroma_format) {
  switch (chroma_format) {
    case cudaVideoChromaFormat_Monochrome: return "4:0:0";
    case cudaVideoChromaFormat_420: return "4:2:0";
    case cudaVideoChromaFormat_422: return "4:2:2";
    case cudaVideoChromaFormat_444: return "4:4:4";
    default: return "unknown chroma";
  }
}

// What a capability check asks about: from StreamInfo up front, from the parser's sequence later.
struct StreamShape {
  VideoCodec codec = VideoCodec::kOther;
  cudaVideoCodec cuvid_codec = cudaVideoCodec_H264;
  int chroma_format = cudaVideoChromaFormat_420;
  int bit_depth = 8;
  int width = 0;
  int height = 0;
  bool eight_bit_output = false;  // DecoderOptions::eight_bit_output
};

// P016 for 10/12-bit sources unless the caller takes 8 bits; NVDEC then narrows in hardware.
bool outputs_p016(const StreamShape& shape) {
  return shape.bit_depth > 8 && !shape.eight_bit_output;
}
PixelFormat output_format_for(const StreamShape& shape) {
  return outputs_p016(shape) ? PixelFormat::kP016 : PixelFormat::kNV12;
}
cudaVideoSurfaceFormat surface_format_for(const StreamShape& shape) {
  return outputs_p016(shape) ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12;
}

// fovea's frames from NVDEC are NV12/P016, so only 4:2:0 sources qualify; the rest decode on the CPU.
Status check_shape(const StreamShape& shape) {
  if (shape.chroma_format != cudaVideoChromaFormat_420) {
    return make_error(StatusCode::kUnsupported, "fovea's NVDEC path delivers 4:2:0 frames (nv12/p016); this ",
                      video_codec_name(shape.codec), " stream is ", chroma_name(shape.chroma_format));
  }
  if (shape.bit_depth < 8 || shape.bit_depth > 16) {
    return make_error(StatusCode::kUnsupported, "NVDEC cannot decode ", std::to_string(shape.bit_depth),
                      "-bit video");
  }
  return Status::ok();
}

Status check_limits(const CUVIDDECODECAPS& caps, const StreamShape& shape, std::string_view gpu) {
  const std::string_view codec = video_codec_name(shape.codec);
  const std::string what =
      fmt::format("{} {} {}-bit", codec, chroma_name(shape.chroma_format), shape.bit_depth);
  if (!caps.bIsSupported) {
    return make_error(StatusCode::kUnsupported, fmt::format("NVDEC on {} cannot decode {}", gpu, what));
  }
  const cudaVideoSurfaceFormat surface = surface_format_for(shape);
  if ((caps.nOutputFormatMask & (1u << surface)) == 0) {
    return make_error(StatusCode::kUnsupported,
                      fmt::format("NVDEC on {} cannot output {} for {}", gpu,
                                  pixel_format_name(output_format_for(shape)), what));
  }
  const auto width = static_cast<unsigned int>(shape.width);
  const auto height = static_cast<unsigned int>(shape.height);
  if (width < caps.nMinWidth || height < caps.nMinHeight) {
    return make_error(StatusCode::kUnsupported, fmt::format("{}x{} is below NVDEC min {}x{} for {}", width,
                                                            height, caps.nMinWidth, caps.nMinHeight, codec));
  }
  if (width > caps.nMaxWidth || height > caps.nMaxHeight) {
    return make_error(StatusCode::kUnsupported, fmt::format("{}x{} exceeds NVDEC max {}x{} for {}", width,
                                                            height, caps.nMaxWidth, caps.nMaxHeight, codec));
  }
  const unsigned int macroblocks = ((width + 15) / 16) * ((height + 15) / 16);
  if (macroblocks > caps.nMaxMBCount) {
    return make_error(StatusCode::kUnsupported,
                      fmt::format("{}x{} ({} macroblocks) exceeds NVDEC max of {} macroblocks for {}", width,
                                  height, macroblocks, caps.nMaxMBCount, codec));
  }
  return Status::ok();
}

// The decoder's capabilities for a codec, chroma format and bit depth on a device, asked of the
// driver once per process and remembered. Why remember them: on the H200, one cuvidGetDecoderCaps
// call made while other sessions of the process are decoding slowed every session for the rest of
// the run, by about a quarter (8 sessions: 2,941 frames/s with the query in each decoder's sequence
// callback, 3,759-3,872 without; docs/perf.md, "Run E"). Needs a context on `device` current.
Result<CUVIDDECODECAPS> decoder_caps(CUdevice device, const StreamShape& shape) {
  using Key = std::tuple<CUdevice, cudaVideoCodec, int, int>;
  static std::mutex mutex;
  static std::map<Key, CUVIDDECODECAPS> known;
  const Key key{device, shape.cuvid_codec, shape.chroma_format, shape.bit_depth};
  const std::lock_guard lock(mutex);
  if (const auto found = known.find(key); found != known.end()) {
    return found->second;
  }
  CUVIDDECODECAPS caps{};
  caps.eCodecType = shape.cuvid_codec;
  caps.eChromaFormat = static_cast<cudaVideoChromaFormat>(shape.chroma_format);
  caps.nBitDepthMinus8 = static_cast<unsigned int>(shape.bit_depth - 8);
  FOVEA_CUVID_TRY(cuvid().cuvidGetDecoderCaps(&caps));
  known.emplace(key, caps);
  return caps;
}

// Needs a context on `device` current on the calling thread.
Status check_capabilities(CUdevice device, const StreamShape& shape, std::string_view gpu) {
  FOVEA_TRY(check_shape(shape));
  FOVEA_ASSIGN_OR_RETURN(const CUVIDDECODECAPS caps, decoder_caps(device, shape));
  return check_limits(caps, shape, gpu);
}

StreamShape shape_of(const StreamInfo& stream, cudaVideoCodec codec, const DecoderOptions& options) {
  return {stream.codec, codec,         stream.chroma_format,    stream.bit_depth,
          stream.width, stream.height, options.eight_bit_output};
}

StreamShape shape_of(const CUVIDEOFORMAT& format, VideoCodec codec, const DecoderOptions& options) {
  return {codec,
          format.codec,
          static_cast<int>(format.chroma_format),
          format.bit_depth_luma_minus8 + 8,
          static_cast<int>(format.coded_width),
          static_cast<int>(format.coded_height),
          options.eight_bit_output};
}

// ---------------------------------------------------------------------------------------------
// Options and output geometry.

Status check_crop(const CropRect& crop, int width, int height) {
  if (crop.left < 0 || crop.top < 0 || crop.left >= crop.right || crop.top >= crop.bottom ||
      crop.right > width || crop.bottom > height) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("crop {},{} to {},{} is not a rectangle inside the {}x{} picture",
                                  crop.left, crop.top, crop.right, crop.bottom, width, height));
  }
  return Status::ok();
}

Status check_options(const StreamInfo& stream, const DecoderOptions& options) {
  // The parser accepts a display delay of 0..4 pictures (the Video Codec SDK's documented range).
  if (options.display_delay < 0 || options.display_delay > 4) {
    return make_error(StatusCode::kInvalidArgument, "display_delay must be 0..4, not ",
                      std::to_string(options.display_delay));
  }
  if (options.max_frames_in_flight < 1) {
    return make_error(StatusCode::kInvalidArgument, "max_frames_in_flight must be at least 1, not ",
                      std::to_string(options.max_frames_in_flight));
  }
  if (options.decode_surfaces < 0 || options.decode_surfaces > kMaxDecodeSurfaces) {
    return make_error(StatusCode::kInvalidArgument, "decode_surfaces must be 0 (automatic) or up to ",
                      std::to_string(kMaxDecodeSurfaces), ", not ", std::to_string(options.decode_surfaces));
  }
  if (options.output_width < 0 || options.output_height < 0 ||
      (options.output_width > 0) != (options.output_height > 0)) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("output size {}x{}: give both output_width and output_height, or neither",
                                  options.output_width, options.output_height));
  }
  if ((stream.codec == VideoCodec::kH264 || stream.codec == VideoCodec::kHevc) && !stream.annex_b) {
    return make_error(StatusCode::kUnsupported,
                      "NVDEC's parser needs Annex B H.264/HEVC packets; open the demuxer with annex_b");
  }
  return options.crop.empty() ? Status::ok() : check_crop(options.crop, stream.width, stream.height);
}

// Where a delivered frame comes from in NVDEC's output surface, for one sequence.
struct OutputGeometry {
  CropRect display;      // coded-picture rectangle NVDEC post-processes; all 0 = the whole picture
  int target_width = 0;  // the surface NVDEC writes
  int target_height = 0;
  int source_x = 0;  // top-left of the delivered picture in that surface
  int source_y = 0;
  int width = 0;  // the delivered frame
  int height = 0;
};

Result<OutputGeometry> plan_geometry(const CUVIDEOFORMAT& format, const DecoderOptions& options) {
  const CropRect picture{format.display_area.left, format.display_area.top, format.display_area.right,
                         format.display_area.bottom};
  const int picture_width = picture.right - picture.left;
  const int picture_height = picture.bottom - picture.top;
  OutputGeometry geometry;
  // Decided per sequence: a stream that changes its resolution mid-stream is scaled only while
  // its pictures are not at the requested size.
  const bool scaled = options.output_width > 0 &&
                      (options.output_width != picture_width || options.output_height != picture_height);
  if (options.crop.empty() && !scaled) {
    // Untouched frames skip NVDEC's scaler: decode at the coded size and copy the visible rectangle
    // out, which keeps the output bit-identical to a software decoder's.
    geometry.target_width = static_cast<int>(format.coded_width);
    geometry.target_height = static_cast<int>(format.coded_height);
    geometry.source_x = picture.left;
    geometry.source_y = picture.top;
    geometry.width = picture_width;
    geometry.height = picture_height;
    return geometry;
  }
  CropRect region = picture;
  if (!options.crop.empty()) {
    FOVEA_TRY(check_crop(options.crop, picture_width, picture_height));
    region = {picture.left + options.crop.left, picture.top + options.crop.top,
              picture.left + options.crop.right, picture.top + options.crop.bottom};
  }
  geometry.display = region;
  geometry.width = scaled ? options.output_width : region.right - region.left;
  geometry.height = scaled ? options.output_height : region.bottom - region.top;
  // NVDEC's post-processor writes even sizes only; an odd last column or row is padding we skip.
  geometry.target_width = (geometry.width + 1) & ~1;
  geometry.target_height = (geometry.height + 1) & ~1;
  return geometry;
}

// When DecoderOptions::decode_surfaces is 0, the stream's minimum and more: the display
// delay keeps up to that many decoded pictures waiting outside the DPB, and up to kOutputSurfaces
// displayed pictures stay mapped until their copies finish.
int decode_surface_count(const CUVIDEOFORMAT& format, int requested, int display_delay) {
  const int needed = format.min_num_decode_surfaces;
  const int automatic = needed + display_delay + static_cast<int>(kOutputSurfaces);
  const int wanted = requested > 0 ? std::max(needed, requested) : automatic;
  return std::min(wanted, kMaxDecodeSurfaces);
}

// The parser calls the sequence callback again for repeated sequence headers; only a real change
// needs a new decoder.
bool same_sequence(const CUVIDEOFORMAT& a, const CUVIDEOFORMAT& b) {
  return a.codec == b.codec && a.coded_width == b.coded_width && a.coded_height == b.coded_height &&
         a.chroma_format == b.chroma_format && a.bit_depth_luma_minus8 == b.bit_depth_luma_minus8 &&
         a.progressive_sequence == b.progressive_sequence &&
         a.min_num_decode_surfaces == b.min_num_decode_surfaces &&
         a.display_area.left == b.display_area.left && a.display_area.top == b.display_area.top &&
         a.display_area.right == b.display_area.right && a.display_area.bottom == b.display_area.bottom;
}

Status copy_plane(CUdeviceptr d_source, std::size_t source_pitch, std::size_t x_bytes, std::size_t y,
                  CUdeviceptr d_destination, std::size_t destination_pitch, const PlaneShape& shape,
                  CUstream stream) {
  CUDA_MEMCPY2D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = d_source;
  copy.srcPitch = source_pitch;
  copy.srcXInBytes = x_bytes;
  copy.srcY = y;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = d_destination;
  copy.dstPitch = destination_pitch;
  copy.WidthInBytes = static_cast<std::size_t>(shape.width_bytes);
  copy.Height = static_cast<std::size_t>(shape.height);
  FOVEA_CU_TRY(cu().cuMemcpy2DAsync(&copy, stream));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// The decoder.
//
// Everything runs on the caller's thread, inside the parser's callbacks, as in the Video Codec
// SDK's own decoder class: the sequence callback creates the hardware decoder, the decode callback
// submits a picture (cuvidDecodePicture), and the display callback maps the picture, queues its
// copies into a pooled block on the caller's stream and keeps it mapped until they have run.
//
// Why no mapping thread of its own, as the SDK's programming guide suggests so that mapping's wait
// for a decode does not hold back the next submission: fovea had one until 2026-11-21, and it bought
// nothing. Measured on the H200 (docs/perf.md), this single-threaded decoder runs 1 session at the
// same rate (607 frames/s against 613 for nvcuvid alone) and 8 sessions at the same rate as the
// threaded one (2,900-3,100 then, before decoder_caps was remembered), with a third less code and
// no locks between threads.

// What the decode callback learned about the picture now in a decode surface.
struct SurfaceState {
  bool keyframe = false;
  bool decode_failed = false;
};

class NvdecDecoder final : public Decoder {
 public:
  NvdecDecoder(const StreamInfo& stream, const DecoderOptions& options, cudaVideoCodec codec,
               PrimaryContext context, std::string gpu_name)
      : stream_(stream),
        options_(options),
        codec_(codec),
        gpu_name_(std::move(gpu_name)),
        context_(std::move(context)) {}
  NvdecDecoder(const NvdecDecoder&) = delete;
  NvdecDecoder& operator=(const NvdecDecoder&) = delete;
  ~NvdecDecoder() override;

  // Creates the context lock, the parser and the copy events, and feeds the stream's parameter
  // sets.
  Status start();
  Status restart() override;

  Result<IoState> send(const Packet& packet) override;
  Status send_eof() override;
  Result<IoState> receive(Frame& frame) override;
  DecoderBackend backend() const override { return DecoderBackend::kNvdec; }
  DecoderStats stats() const override;

 private:
  static int CUDAAPI on_sequence(void* self, CUVIDEOFORMAT* format);
  static int CUDAAPI on_decode(void* self, CUVIDPICPARAMS* picture);
  static int CUDAAPI on_display(void* self, CUVIDPARSERDISPINFO* display);
  // Keeps the first error raised inside a callback (send/receive return it; the decoder is
  // unusable after it) and tells the parser to stop: callbacks answer 0 for failure.
  int callback_result(Status status);

  Status create_lock();
  Status create_parser();
  Status create_copy_events();
  Status feed_parameter_sets();
  // Feeds one chunk to the parser, whose callbacks run inside. False when the parser refused it.
  Result<bool> parse(const std::uint8_t* data, std::size_t size, unsigned long flags, std::int64_t timestamp);

  // Inside the parser's callbacks.
  Result<int> handle_sequence(const CUVIDEOFORMAT& format);
  Status create_decoder(const CUVIDEOFORMAT& format, const OutputGeometry& geometry, int surfaces,
                        cudaVideoSurfaceFormat surface_format);
  Status prepare_output(PixelFormat format, const OutputGeometry& geometry, int surfaces);
  Status handle_decode(CUVIDPICPARAMS& picture);
  Status handle_display(const CUVIDPARSERDISPINFO& display);
  Status check_picture_index(int picture_index) const;
  Result<Frame> map_picture(const CUVIDPARSERDISPINFO& display);
  Result<PooledBuffer> acquire_output_block();
  Status copy_surface(CUdeviceptr d_surface, unsigned int pitch, void* d_frame) const;
  // Unmaps the oldest mapped pictures (after their copies finished) until at most `keep` remain.
  Status retire_mapped(std::size_t keep);
  // Unmaps mapped pictures, oldest first, until none is in decode surface `picture_index`.
  Status release_surface(int picture_index);
  bool reported_damage(int picture_index) const;
  Frame make_frame(PooledBuffer block, const CUVIDPARSERDISPINFO& display, bool damaged) const;

  void count(std::int64_t DecoderStats::*counter);

  const StreamInfo stream_;
  const DecoderOptions options_;
  const cudaVideoCodec codec_;
  const std::string gpu_name_;
  // Destroyed in reverse order: parser, decoder (both released with the context current in the
  // destructor), the output pool, the events, the lock, and last the context reference.
  PrimaryContext context_;
  CtxLockHandle lock_;
  std::vector<EventHandle> copy_events_;  // one per output surface, used round robin
  std::optional<BufferPool> pool_;
  DecoderHandle decoder_;
  ParserHandle parser_;

  // The current sequence's output.
  CUVIDEOFORMAT format_{};
  OutputGeometry geometry_;
  ImageAllocation allocation_;
  PixelFormat output_format_ = PixelFormat::kNV12;
  int bit_depth_ = 8;  // of the delivered frames: 8 when NVDEC narrows a 10/12-bit source to NV12

  std::vector<SurfaceState> surfaces_;
  std::size_t next_copy_event_ = 0;
  std::deque<MappedPicture> mapped_;
  std::int64_t surface_waits_ = 0;  // decode callbacks that waited for a mapped picture's copies
  std::deque<Frame> ready_;
  bool timestamps_seen_ = false;
  bool eof_requested_ = false;
  bool drained_ = false;  // the parser has released its last picture
  Status error_;

  // stats() may be called from another thread.
  mutable std::mutex stats_mutex_;
  DecoderStats stats_;
};

NvdecDecoder::~NvdecDecoder() {
  if (surface_waits_ > 0) {
    log_debug("{}: NVDEC's decode callback waited {} times for the copies out of a mapped picture",
              stream_.url, surface_waits_);
  }
  // Unmapping and cuvidDestroyDecoder need the decoder's context current. The parser goes before
  // the decoder: it refers to the decoder's pictures.
  const bool pushed = cu().cuCtxPushCurrent(context_.get()) == CUDA_SUCCESS;
  if (pushed) {
    static_cast<void>(retire_mapped(0));
  }
  parser_.reset();
  decoder_.reset();
  if (pushed) {
    CUcontext popped = nullptr;
    static_cast<void>(cu().cuCtxPopCurrent(&popped));
  }
}

Status NvdecDecoder::start() {
  FOVEA_CU_TRY(cu().cuCtxPushCurrent(context_.get()));
  const ContextPop pop;
  FOVEA_TRY(create_lock());
  FOVEA_TRY(create_parser());
  FOVEA_TRY(create_copy_events());
  return feed_parameter_sets();
}

Status NvdecDecoder::restart() {
  FOVEA_TRY(error_);
  FOVEA_CU_TRY(cu().cuCtxPushCurrent(context_.get()));
  const ContextPop pop;
  FOVEA_TRY(retire_mapped(0));
  ready_.clear();
  // A new parser forgets the old stream's pictures. The hardware decoder stays: the new parser's
  // sequence callback finds the same sequence and keeps it.
  parser_.reset();
  FOVEA_TRY(create_parser());
  eof_requested_ = false;
  drained_ = false;
  return feed_parameter_sets();
}

Status NvdecDecoder::feed_parameter_sets() {
  if (stream_.extradata.empty()) {
    return Status::ok();
  }
  FOVEA_ASSIGN_OR_RETURN(const bool accepted,
                         parse(stream_.extradata.data(), stream_.extradata.size(), 0, 0));
  if (!accepted) {
    log_warn("{}: NVDEC's parser refused the stream's parameter sets; waiting for in-band ones", stream_.url);
  }
  return Status::ok();
}

// One lock per decoder, handed to the driver, which takes it around its own use of the context.
Status NvdecDecoder::create_lock() {
  CUvideoctxlock lock = nullptr;
  FOVEA_CUVID_TRY(cuvid().cuvidCtxLockCreate(&lock, context_.get()));
  lock_.reset(lock);
  return Status::ok();
}

Status NvdecDecoder::create_parser() {
  CUVIDPARSERPARAMS params{};
  params.CodecType = codec_;
  // Replaced by what the sequence callback returns once the stream's needs are known.
  params.ulMaxNumDecodeSurfaces = 1;
  params.ulErrorThreshold = kErrorThresholdPercent;
  params.ulMaxDisplayDelay = static_cast<unsigned int>(options_.display_delay);
  params.pUserData = this;
  params.pfnSequenceCallback = &NvdecDecoder::on_sequence;
  params.pfnDecodePicture = &NvdecDecoder::on_decode;
  params.pfnDisplayPicture = &NvdecDecoder::on_display;
  CUvideoparser parser = nullptr;
  FOVEA_CUVID_TRY(cuvid().cuvidCreateVideoParser(&parser, &params));
  parser_.reset(parser);
  return Status::ok();
}

Status NvdecDecoder::create_copy_events() {
  while (copy_events_.size() < kOutputSurfaces) {
    CUevent event = nullptr;
    FOVEA_CU_TRY(cu().cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
    copy_events_.emplace_back(event);
  }
  return Status::ok();
}

Result<IoState> NvdecDecoder::send(const Packet& packet) {
  FOVEA_TRY(error_);
  if (eof_requested_) {
    return make_error(StatusCode::kInvalidArgument, stream_.url, ": packet sent to NVDEC after send_eof()");
  }
  // ready_ holds as many frames as the caller may: past that, the caller takes frames first, which
  // bounds the pool (see prepare_output).
  if (ready_.size() >= static_cast<std::size_t>(options_.max_frames_in_flight)) {
    return IoState::kAgain;
  }
  count(&DecoderStats::packets_sent);
  if (packet.data.empty()) {
    return IoState::kOk;
  }
  timestamps_seen_ = timestamps_seen_ || packet.has_pts;
  // The demuxer delivers whole access units, so the parser may hand the picture to the hardware
  // at once instead of waiting for the next packet's start code to know the picture ended.
  unsigned long flags = CUVID_PKT_ENDOFPICTURE;
  if (packet.has_pts) {
    flags |= CUVID_PKT_TIMESTAMP;
  }
  FOVEA_ASSIGN_OR_RETURN(const bool accepted,
                         parse(packet.data.data(), packet.data.size(), flags, packet.pts));
  if (!accepted) {
    // Damaged data, not a failure: the parser resynchronizes at the next start code and the
    // picture resumes at the next keyframe.
    count(&DecoderStats::packets_rejected);
    log_debug("{}: NVDEC's parser rejected a packet (pts {})", stream_.url, packet.pts);
  }
  return IoState::kOk;
}

Status NvdecDecoder::send_eof() {
  // The parser is drained from receive() once the frames already queued are taken, for the same
  // reason send() answers kAgain while ready_ is full.
  eof_requested_ = true;
  return error_;
}

Result<IoState> NvdecDecoder::receive(Frame& frame) {
  if (ready_.empty() && eof_requested_ && !drained_ && error_.is_ok()) {
    drained_ = true;
    FOVEA_ASSIGN_OR_RETURN(const bool accepted, parse(nullptr, 0, CUVID_PKT_ENDOFSTREAM, 0));
    if (!accepted) {
      log_debug("{}: NVDEC's parser reported an error while draining", stream_.url);
    }
  }
  if (!ready_.empty()) {
    frame = std::move(ready_.front());
    ready_.pop_front();
    return IoState::kOk;
  }
  FOVEA_TRY(error_);
  return drained_ ? IoState::kEof : IoState::kAgain;
}

DecoderStats NvdecDecoder::stats() const {
  const std::lock_guard lock(stats_mutex_);
  return stats_;
}

void NvdecDecoder::count(std::int64_t DecoderStats::*counter) {
  const std::lock_guard lock(stats_mutex_);
  ++(stats_.*counter);
}

Result<bool> NvdecDecoder::parse(const std::uint8_t* data, std::size_t size, unsigned long flags,
                                 std::int64_t timestamp) {
  FOVEA_CU_TRY(cu().cuCtxPushCurrent(context_.get()));
  const ContextPop pop;
  CUVIDSOURCEDATAPACKET packet{};
  packet.flags = flags;
  packet.payload_size = size;
  packet.payload = data;
  packet.timestamp = timestamp;
  CUresult parsed = CUDA_SUCCESS;
  {
    FOVEA_NVTX_RANGE("decode");
    parsed = cuvid().cuvidParseVideoData(parser_.get(), &packet);
  }
  // cuvidParseVideoData does not reliably report a callback's failure; the stored error does.
  FOVEA_TRY(error_);
  return parsed == CUDA_SUCCESS;
}

int NvdecDecoder::callback_result(Status status) {
  if (status.is_ok()) {
    return 1;
  }
  if (error_.is_ok()) {
    error_ = status.with_context(stream_.url);
  }
  return 0;
}

int CUDAAPI NvdecDecoder::on_sequence(void* self, CUVIDEOFORMAT* format) {
  auto* decoder = static_cast<NvdecDecoder*>(self);
  if (!decoder->error_.is_ok()) {
    return 0;
  }
  Result<int> surfaces = decoder->handle_sequence(*format);
  // More than 1 tells the parser how many decode surfaces it may cycle through.
  return surfaces.is_ok() ? surfaces.value() : decoder->callback_result(surfaces.status());
}

int CUDAAPI NvdecDecoder::on_decode(void* self, CUVIDPICPARAMS* picture) {
  auto* decoder = static_cast<NvdecDecoder*>(self);
  return decoder->error_.is_ok() ? decoder->callback_result(decoder->handle_decode(*picture)) : 0;
}

int CUDAAPI NvdecDecoder::on_display(void* self, CUVIDPARSERDISPINFO* display) {
  auto* decoder = static_cast<NvdecDecoder*>(self);
  return decoder->error_.is_ok() ? decoder->callback_result(decoder->handle_display(*display)) : 0;
}

Result<int> NvdecDecoder::handle_sequence(const CUVIDEOFORMAT& format) {
  if (decoder_ && same_sequence(format, format_)) {
    return static_cast<int>(surfaces_.size());
  }
  const StreamShape shape = shape_of(format, stream_.codec, options_);
  FOVEA_TRY(check_capabilities(context_.device(), shape, gpu_name_));
  FOVEA_ASSIGN_OR_RETURN(const OutputGeometry geometry, plan_geometry(format, options_));
  const int surfaces = decode_surface_count(format, options_.decode_surfaces, options_.display_delay);
  // A new sequence (a resolution change mid-stream, say) replaces the decoder: no picture of the
  // old one may stay mapped. Frames already copied out keep their pool blocks.
  FOVEA_TRY(retire_mapped(0));
  FOVEA_TRY(create_decoder(format, geometry, surfaces, surface_format_for(shape)));
  FOVEA_TRY(prepare_output(output_format_for(shape), geometry, surfaces));
  format_ = format;
  geometry_ = geometry;
  bit_depth_ = outputs_p016(shape) ? shape.bit_depth : 8;
  surfaces_.assign(static_cast<std::size_t>(surfaces), SurfaceState{});
  log_debug("{}: NVDEC on {}: {} coded {}x{} {}-bit, {} decode surfaces, output {} {}x{}", stream_.url,
            gpu_name_, video_codec_name(stream_.codec), format.coded_width, format.coded_height,
            shape.bit_depth, surfaces, pixel_format_name(output_format_), geometry.width, geometry.height);
  return surfaces;
}

Status NvdecDecoder::create_decoder(const CUVIDEOFORMAT& format, const OutputGeometry& geometry, int surfaces,
                                    cudaVideoSurfaceFormat surface_format) {
  CUVIDDECODECREATEINFO info{};
  info.ulWidth = format.coded_width;
  info.ulHeight = format.coded_height;
  info.ulNumDecodeSurfaces = static_cast<unsigned long>(surfaces);
  info.CodecType = format.codec;
  info.ChromaFormat = format.chroma_format;
  info.ulCreationFlags = cudaVideoCreate_PreferCUVID;
  info.bitDepthMinus8 = format.bit_depth_luma_minus8;
  info.display_area.left = static_cast<short>(geometry.display.left);
  info.display_area.top = static_cast<short>(geometry.display.top);
  info.display_area.right = static_cast<short>(geometry.display.right);
  info.display_area.bottom = static_cast<short>(geometry.display.bottom);
  info.OutputFormat = surface_format;
  // Analytics wants whole progressive frames; weaving interlaced fields would leave combing.
  info.DeinterlaceMode =
      format.progressive_sequence ? cudaVideoDeinterlaceMode_Weave : cudaVideoDeinterlaceMode_Adaptive;
  info.ulTargetWidth = static_cast<unsigned long>(geometry.target_width);
  info.ulTargetHeight = static_cast<unsigned long>(geometry.target_height);
  info.ulNumOutputSurfaces = kOutputSurfaces;
  info.vidLock = lock_.get();
  // Freeing the old decoder first keeps two decoders' surfaces from being allocated at once.
  decoder_.reset();
  CUvideodecoder decoder = nullptr;
  FOVEA_CUVID_TRY(cuvid().cuvidCreateDecoder(&decoder, &info));
  decoder_.reset(decoder);
  return Status::ok();
}

Status NvdecDecoder::prepare_output(PixelFormat format, const OutputGeometry& geometry, int surfaces) {
  output_format_ = format;
  FOVEA_ASSIGN_OR_RETURN(allocation_, plan_image_allocation(output_format_, geometry.width, geometry.height));
  // Blocks in use at once: up to max_frames_in_flight that the caller holds, as many in ready_
  // (send() answers kAgain past that), and the pictures that one parse call displays past that
  // bound: at most one per decode surface, when the end of the stream flushes the parser.
  const auto capacity = static_cast<std::size_t>(2 * options_.max_frames_in_flight + surfaces);
  FOVEA_ASSIGN_OR_RETURN(BufferPool pool, BufferPool::create("nvdec-output", MemoryKind::kDevice,
                                                             allocation_.total_bytes, capacity));
  pool_.emplace(std::move(pool));
  return Status::ok();
}

Status NvdecDecoder::check_picture_index(int picture_index) const {
  if (picture_index < 0 || static_cast<std::size_t>(picture_index) >= surfaces_.size()) {
    return make_error(StatusCode::kInternal, fmt::format("NVDEC's parser used picture index {} outside 0..{}",
                                                         picture_index, surfaces_.size()));
  }
  return Status::ok();
}

Status NvdecDecoder::handle_decode(CUVIDPICPARAMS& picture) {
  FOVEA_TRY(check_picture_index(picture.CurrPicIdx));
  // The parser reuses a surface once it has displayed the picture in it and needs it no longer for
  // reference, sometimes while that picture is still mapped for its copies.
  FOVEA_TRY(release_surface(picture.CurrPicIdx));
  SurfaceState& surface = surfaces_[static_cast<std::size_t>(picture.CurrPicIdx)];
  surface.keyframe = picture.intra_pic_flag != 0;
  const CUresult decoded = cuvid().cuvidDecodePicture(decoder_.get(), &picture);
  surface.decode_failed = decoded != CUDA_SUCCESS;
  if (surface.decode_failed) {
    // Picture parameters the hardware refuses come from a damaged bitstream, not a failing device:
    // the picture is lost (counted), and decoding resumes cleanly at the next keyframe.
    count(&DecoderStats::packets_rejected);
    log_debug("{}: NVDEC refused a picture: {}", stream_.url, cu_message(decoded));
  }
  return Status::ok();
}

Status NvdecDecoder::handle_display(const CUVIDPARSERDISPINFO& display) {
  FOVEA_TRY(check_picture_index(display.picture_index));
  if (surfaces_[static_cast<std::size_t>(display.picture_index)].decode_failed) {
    return Status::ok();  // already counted as rejected; there is nothing to show
  }
  FOVEA_ASSIGN_OR_RETURN(Frame frame, map_picture(display));
  {
    const std::lock_guard lock(stats_mutex_);
    frame.index = stats_.frames_decoded++;
    if (frame.damaged) {
      ++stats_.frames_damaged;
    }
  }
  ready_.push_back(std::move(frame));
  return Status::ok();
}

Result<Frame> NvdecDecoder::map_picture(const CUVIDPARSERDISPINFO& display) {
  FOVEA_NVTX_RANGE("decode");
  FOVEA_ASSIGN_OR_RETURN(PooledBuffer block, acquire_output_block());
  FOVEA_TRY(retire_mapped(kOutputSurfaces - 1));
  CUVIDPROCPARAMS params{};
  params.progressive_frame = display.progressive_frame;
  params.top_field_first = display.top_field_first;
  params.unpaired_field = display.repeat_first_field < 0 ? 1 : 0;
  params.output_stream = options_.stream;
  CUdeviceptr d_surface = 0;
  unsigned int pitch = 0;
  // Waits until the picture has been decoded.
  FOVEA_CUVID_TRY(
      cuvid().cuvidMapVideoFrame(decoder_.get(), display.picture_index, &d_surface, &pitch, &params));
  const CUevent copy_event = copy_events_[next_copy_event_].get();
  next_copy_event_ = (next_copy_event_ + 1) % copy_events_.size();
  mapped_.push_back({display.picture_index, d_surface, copy_event});
  FOVEA_TRY(copy_surface(d_surface, pitch, block.data()));
  FOVEA_CU_TRY(cu().cuEventRecord(copy_event, options_.stream));
  return make_frame(std::move(block), display, reported_damage(display.picture_index));
}

Result<PooledBuffer> NvdecDecoder::acquire_output_block() {
  Result<PooledBuffer> block = pool_->acquire();
  if (!block.is_ok() && block.status().code() == StatusCode::kResourceExhausted) {
    return make_error(StatusCode::kResourceExhausted,
                      fmt::format("NVDEC output pool exhausted: the caller holds more than {} decoded frames "
                                  "(DecoderOptions::max_frames_in_flight); release frames sooner or raise it",
                                  options_.max_frames_in_flight));
  }
  return block;
}

Status NvdecDecoder::copy_surface(CUdeviceptr d_surface, unsigned int pitch, void* d_frame) const {
  const auto sample_bytes = static_cast<std::size_t>(output_format_ == PixelFormat::kP016 ? 2 : 1);
  const auto x = static_cast<std::size_t>(geometry_.source_x);
  const auto y = static_cast<std::size_t>(geometry_.source_y);
  const auto d_destination = reinterpret_cast<CUdeviceptr>(d_frame);
  // NVDEC places the interleaved chroma plane right after target_height rows of luma.
  const CUdeviceptr d_chroma =
      d_surface + std::size_t{pitch} * static_cast<std::size_t>(geometry_.target_height);
  FOVEA_TRY(copy_plane(d_surface, pitch, x * sample_bytes, y, d_destination + allocation_.offsets[0],
                       allocation_.pitches[0], allocation_.layout.planes[0], options_.stream));
  FOVEA_TRY(copy_plane(d_chroma, pitch, (x / 2) * 2 * sample_bytes, y / 2,
                       d_destination + allocation_.offsets[1], allocation_.pitches[1],
                       allocation_.layout.planes[1], options_.stream));
  return Status::ok();
}

// cuvidUnmapVideoFrame hands the surface back to the decoder at once, without waiting for work
// queued on our stream; unless the copies have finished, the next picture could overwrite the
// surface while they still read it. Hence the wait on each picture's copy event first.
Status NvdecDecoder::retire_mapped(std::size_t keep) {
  while (mapped_.size() > keep) {
    const MappedPicture oldest = mapped_.front();
    mapped_.pop_front();
    FOVEA_CU_TRY(cu().cuEventSynchronize(oldest.copied));
    FOVEA_CUVID_TRY(cuvid().cuvidUnmapVideoFrame(decoder_.get(), oldest.d_surface));
  }
  return Status::ok();
}

Status NvdecDecoder::release_surface(int picture_index) {
  const auto last = std::find_if(
      mapped_.rbegin(), mapped_.rend(),
      [picture_index](const MappedPicture& mapped) { return mapped.picture_index == picture_index; });
  if (last == mapped_.rend()) {
    return Status::ok();
  }
  ++surface_waits_;
  return retire_mapped(static_cast<std::size_t>(last - mapped_.rbegin()));
}

bool NvdecDecoder::reported_damage(int picture_index) const {
  CUVIDGETDECODESTATUS status{};
  // H.264, HEVC and JPEG report a status; the other codecs answer CUDA_ERROR_NOT_SUPPORTED, so
  // their damage goes unreported rather than failing the frame.
  if (cuvid().cuvidGetDecodeStatus(decoder_.get(), picture_index, &status) != CUDA_SUCCESS) {
    return false;
  }
  return status.decodeStatus == cuvidDecodeStatus_Error ||
         status.decodeStatus == cuvidDecodeStatus_Error_Concealed;
}

// The frame's index is set when it joins ready_, in display order.
Frame NvdecDecoder::make_frame(PooledBuffer block, const CUVIDPARSERDISPINFO& display, bool damaged) const {
  Frame frame;
  frame.image = image_view_in(block.data(), allocation_, output_format_, geometry_.width, geometry_.height,
                              MemoryKind::kDevice);
  frame.owner = std::make_shared<PooledBuffer>(std::move(block));
  // The parser hands each picture the timestamp of the packet it started in.
  frame.pts = display.timestamp;
  frame.has_pts = timestamps_seen_;
  frame.time_base = stream_.time_base;
  frame.keyframe = surfaces_[static_cast<std::size_t>(display.picture_index)].keyframe;
  frame.damaged = damaged;
  frame.bit_depth = bit_depth_;
  return frame;
}

// ---------------------------------------------------------------------------------------------
// Opening.

Result<PrimaryContext> retain_primary_context(int ordinal) {
  const int count = cuda_device_count();
  if (count == 0) {
    return make_error(StatusCode::kUnsupported, "NVDEC unavailable: no CUDA device");
  }
  if (ordinal < 0 || ordinal >= count) {
    return make_error(StatusCode::kNotFound, "CUDA device ", std::to_string(ordinal), " does not exist (",
                      std::to_string(count), " present)");
  }
  // The runtime initializes the device's primary context first, so that the pool's cudaMalloc
  // memory and the driver calls below share it.
  FOVEA_CUDA_TRY(cudaSetDevice(ordinal));
  FOVEA_CUDA_TRY(cudaFree(nullptr));
  CUdevice device = 0;
  FOVEA_CU_TRY(cu().cuDeviceGet(&device, ordinal));
  CUcontext context = nullptr;
  FOVEA_CU_TRY(cu().cuDevicePrimaryCtxRetain(&context, device));
  return PrimaryContext(device, context);
}

Result<std::string> device_name(CUdevice device) {
  char name[256] = {};
  FOVEA_CU_TRY(cu().cuDeviceGetName(name, static_cast<int>(sizeof(name)), device));
  return std::string(name);
}

Status check_stream_capabilities(const PrimaryContext& context, const StreamShape& shape,
                                 std::string_view gpu) {
  FOVEA_CU_TRY(cu().cuCtxPushCurrent(context.get()));
  const ContextPop pop;
  return check_capabilities(context.device(), shape, gpu);
}

}  // namespace

Result<std::unique_ptr<Decoder>> open_nvdec_decoder(const StreamInfo& stream, const DecoderOptions& options) {
  FOVEA_ASSIGN_OR_RETURN(const cudaVideoCodec codec, cuvid_codec(stream));
  const StreamShape shape = shape_of(stream, codec, options);
  FOVEA_TRY(check_shape(shape));
  FOVEA_TRY(check_options(stream, options));
  FOVEA_TRY(nvdec_library().status);
  FOVEA_ASSIGN_OR_RETURN(PrimaryContext context, retain_primary_context(options.device));
  FOVEA_ASSIGN_OR_RETURN(std::string gpu, device_name(context.device()));
  FOVEA_TRY(check_stream_capabilities(context, shape, gpu));
  auto decoder = std::make_unique<NvdecDecoder>(stream, options, codec, std::move(context), std::move(gpu));
  FOVEA_TRY(decoder->start());
  return std::unique_ptr<Decoder>(std::move(decoder));
}

}  // namespace fovea::io
