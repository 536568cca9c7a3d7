// nvJPEG behind fovea's interface: the JPEG header reader that picks each file's route (plain C++,
// every build), and with CUDA the decoder itself, calling libnvjpeg through pointers dlsym found
// (io/nvjpeg_library.h), so no build depends on the library being installed.
#include "io/nvjpeg_decoder.h"

#include <array>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "io/image_codec.h"
#include "io/image_codec_internal.h"

#if defined(FOVEA_HAVE_CUDA)
#include <vector>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#include "core/log.h"
#include "io/nvjpeg_library.h"
#endif

namespace fovea::io {
namespace {

constexpr std::string_view kJpeg = "JPEG";

// Markers, ITU-T T.81 table B.1.
constexpr std::uint8_t kTem = 0x01;
constexpr std::uint8_t kSoi = 0xD8;
constexpr std::uint8_t kEoi = 0xD9;
constexpr std::uint8_t kSos = 0xDA;
constexpr std::uint8_t kApp1 = 0xE1;
constexpr std::uint8_t kApp14 = 0xEE;

bool is_restart(std::uint8_t marker) {
  return marker >= 0xD0 && marker <= 0xD7;
}
// SOF0..SOF15 less DHT (C4), JPG (C8) and DAC (CC), which share the range.
bool is_start_of_frame(std::uint8_t marker) {
  return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
}

std::uint16_t big_endian16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] << 8 | p[1]);
}

std::string_view coding_name(JpegCoding coding) {
  switch (coding) {
    case JpegCoding::kBaseline: return "baseline";
    case JpegCoding::kExtended: return "extended sequential";
    case JpegCoding::kProgressive: return "progressive";
    case JpegCoding::kLossless: return "lossless";
    case JpegCoding::kHierarchical: return "hierarchical";
    case JpegCoding::kArithmetic: return "arithmetic-coded";
  }
  return "unknown";
}

std::string_view color_name(JpegColor color) {
  switch (color) {
    case JpegColor::kGray: return "gray";
    case JpegColor::kYCbCr: return "YCbCr";
    case JpegColor::kRgb: return "RGB-stored";
    case JpegColor::kCmyk: return "CMYK";
    case JpegColor::kYcck: return "YCCK";
  }
  return "unknown";
}

// SOF0 baseline, SOF1 extended, SOF2 progressive, SOF3 lossless (Huffman); SOF5..7 hierarchical;
// SOF9 and up arithmetic-coded.
JpegCoding coding_of(std::uint8_t sof) {
  switch (sof) {
    case 0xC0: return JpegCoding::kBaseline;
    case 0xC1: return JpegCoding::kExtended;
    case 0xC2: return JpegCoding::kProgressive;
    case 0xC3: return JpegCoding::kLossless;
    case 0xC5:
    case 0xC6:
    case 0xC7: return JpegCoding::kHierarchical;
    default: return JpegCoding::kArithmetic;
  }
}

struct Component {
  int id = 0;
  int h = 1;
  int v = 1;
};

// What the marker walk collects before the info is classified.
struct Header {
  JpegInfo info;
  std::array<Component, 4> components{};
  bool frame_seen = false;
  int adobe_transform = -1;  // APP14 "Adobe" transform byte; -1 when there is no such segment
  bool ended = false;        // EOI reached
};

// Where the entropy-coded data that starts at `pos` ends: the next marker that is neither a
// stuffed zero (FF 00) nor a restart marker, or bytes.size() when the data runs to the end.
std::size_t end_of_entropy_data(std::span<const std::uint8_t> bytes, std::size_t pos) {
  while (pos < bytes.size()) {
    const void* found = std::memchr(bytes.data() + pos, 0xFF, bytes.size() - pos);
    if (found == nullptr) return bytes.size();
    pos = static_cast<std::size_t>(static_cast<const std::uint8_t*>(found) - bytes.data());
    if (pos + 1 >= bytes.size()) return bytes.size();
    const std::uint8_t next = bytes[pos + 1];
    if (next == 0xFF) {
      pos += 1;  // fill byte before a marker
    } else if (next == 0x00 || is_restart(next)) {
      pos += 2;
    } else {
      return pos;
    }
  }
  return bytes.size();
}

Status read_frame(std::span<const std::uint8_t> payload, std::uint8_t marker, std::string_view name,
                  Header* header) {
  if (payload.size() < 6)
    return detail::image_error(StatusCode::kCorruptData, name, kJpeg, "short SOF segment");
  JpegInfo& info = header->info;
  info.coding = coding_of(marker);
  info.precision = payload[0];
  info.height = big_endian16(&payload[1]);
  info.width = big_endian16(&payload[3]);
  info.components = payload[5];
  if (info.components != 1 && info.components != 3 && info.components != 4) {
    return detail::image_error(StatusCode::kUnsupported, name, kJpeg,
                               fmt::format("{} color components (fovea decodes 1, 3 or 4)", info.components));
  }
  if (payload.size() < 6 + 3 * static_cast<std::size_t>(info.components)) {
    return detail::image_error(StatusCode::kCorruptData, name, kJpeg, "short SOF segment");
  }
  for (int c = 0; c < info.components; ++c) {
    const std::uint8_t* entry = &payload[6 + 3 * static_cast<std::size_t>(c)];
    header->components[static_cast<std::size_t>(c)] = {entry[0], entry[1] >> 4, entry[1] & 0x0F};
  }
  header->frame_seen = true;
  return Status::ok();
}

void read_app_segment(std::span<const std::uint8_t> payload, std::uint8_t marker, Header* header) {
  if (marker == kApp1 && header->info.orientation == 1) {
    header->info.orientation = detail::exif_orientation(payload);
  }
  // "Adobe", version (2 bytes), flags0 (2), flags1 (2), transform (1).
  constexpr std::size_t kTransformAt = 11;
  if (marker == kApp14 && payload.size() > kTransformAt && std::memcmp(payload.data(), "Adobe", 5) == 0) {
    header->adobe_transform = payload[kTransformAt];
  }
}

// Whether the scan whose header is `payload` is the file's only one and runs to the EOI that ends
// the file, so that nothing after it needs reading: a sequential frame (each component is coded in
// exactly one scan) whose first scan codes every component, in a file whose last bytes are EOI. The
// walk would otherwise look for 0xFF bytes through every byte of the entropy-coded data: a sixth
// of a JPEG thread's time on 1080p photos (docs/perf.md, "Hardware work queues"). Damage inside the
// data is then the decoder's to find, as it is for data the walk skips anyway.
bool only_scan_runs_to_the_end(std::span<const std::uint8_t> bytes, std::span<const std::uint8_t> payload,
                               const JpegInfo& info) {
  const bool sequential = info.coding == JpegCoding::kBaseline || info.coding == JpegCoding::kExtended;
  const std::size_t n = bytes.size();
  return sequential && info.height > 0 && !payload.empty() && payload[0] == info.components && n >= 2 &&
         bytes[n - 2] == 0xFF && bytes[n - 1] == kEoi;
}

// Walks the markers from SOI to EOI, skipping the entropy-coded data after each SOS.
Status walk_markers(std::span<const std::uint8_t> bytes, std::string_view name, Header* header) {
  const auto corrupt = [name](std::string_view reason) {
    return detail::image_error(StatusCode::kCorruptData, name, kJpeg, reason);
  };
  if (bytes.size() < 4 || bytes[0] != 0xFF || bytes[1] != kSoi)
    return corrupt("not a JPEG file (no SOI marker)");
  std::size_t pos = 2;
  while (!header->ended) {
    if (pos >= bytes.size()) return corrupt("the file ends before its EOI marker (truncated)");
    if (bytes[pos] != 0xFF) return corrupt(fmt::format("no marker where one belongs (byte {})", pos));
    while (pos < bytes.size() && bytes[pos] == 0xFF) ++pos;
    if (pos >= bytes.size()) return corrupt("the file ends before its EOI marker (truncated)");
    const std::uint8_t marker = bytes[pos++];
    if (marker == kEoi) {
      header->ended = true;
      continue;
    }
    if (marker == kSoi || marker == kTem || is_restart(marker)) continue;  // no length field
    if (pos + 2 > bytes.size()) return corrupt("the file ends inside a marker segment (truncated)");
    const std::size_t length = big_endian16(&bytes[pos]);
    if (length < 2 || pos + length > bytes.size()) {
      return corrupt("a marker segment runs past the end of the file (truncated)");
    }
    const std::span<const std::uint8_t> payload = bytes.subspan(pos + 2, length - 2);
    pos += length;
    if (is_start_of_frame(marker)) {
      if (header->frame_seen) return corrupt("a second SOF marker");
      FOVEA_TRY(read_frame(payload, marker, name, header));
    } else if (marker == kApp1 || marker == kApp14) {
      read_app_segment(payload, marker, header);
    } else if (marker == kSos) {
      if (!header->frame_seen) return corrupt("image data (SOS) before the frame header (SOF)");
      ++header->info.scans;
      if (header->info.scans == 1 && only_scan_runs_to_the_end(bytes, payload, header->info)) {
        header->ended = true;
        continue;
      }
      pos = end_of_entropy_data(bytes, pos);
      if (pos == bytes.size()) {  // no EOI after the data: decoding tells a cut file from one without it
        header->info.ends_without_eoi = true;
        header->ended = true;
      }
    }
  }
  if (!header->frame_seen || header->info.scans == 0) return corrupt("no image data (no SOF or SOS marker)");
  return Status::ok();
}

// libjpeg's rules: Adobe's transform flag first, then component ids 'R' 'G' 'B' for RGB-stored
// files without one; 3 components are YCbCr otherwise, 4 are CMYK unless Adobe says YCCK.
JpegColor color_of(const Header& header) {
  switch (header.info.components) {
    case 1: return JpegColor::kGray;
    case 3: {
      if (header.adobe_transform == 0) return JpegColor::kRgb;
      const auto& c = header.components;
      if (header.adobe_transform < 0 && c[0].id == 'R' && c[1].id == 'G' && c[2].id == 'B')
        return JpegColor::kRgb;
      return JpegColor::kYCbCr;
    }
    default: return header.adobe_transform == 2 ? JpegColor::kYcck : JpegColor::kCmyk;
  }
}

// Luma's sampling factors over chroma's (both chroma components alike), as nvJPEG names them.
JpegSampling sampling_of(const Header& header) {
  if (header.info.color == JpegColor::kGray) return JpegSampling::kGray;
  if (header.info.color != JpegColor::kYCbCr) return JpegSampling::kOther;
  const Component& y = header.components[0];
  const Component& cb = header.components[1];
  const Component& cr = header.components[2];
  if (cb.h != cr.h || cb.v != cr.v || cb.h == 0 || cb.v == 0 || y.h % cb.h != 0 || y.v % cb.v != 0) {
    return JpegSampling::kOther;
  }
  const int h = y.h / cb.h;
  const int v = y.v / cb.v;
  if (h == 1 && v == 1) return JpegSampling::k444;
  if (h == 2 && v == 1) return JpegSampling::k422;
  if (h == 2 && v == 2) return JpegSampling::k420;
  if (h == 1 && v == 2) return JpegSampling::k440;
  if (h == 4 && v == 1) return JpegSampling::k411;
  if (h == 4 && v == 2) return JpegSampling::k410;
  return JpegSampling::kOther;
}

// "" when nvJPEG's GPU hybrid backend takes the file, else why not.
std::string why_not_gpu(const JpegInfo& info) {
  if (info.precision != 8) return fmt::format("{}-bit samples", info.precision);
  // Progressive files are nvJPEG's GPU backend's to decode, but on the H200 (CUDA 13's nvJPEG) a
  // progressive file decoded right after a larger progressive one on the same decoding state came
  // out wrong (NvjpegGpu.OneBatchOfEveryRouteMatchesLibjpegAndIsCounted, its second batch: every
  // pixel off, mean 94 levels), with no error. Until that is understood they take the CPU route.
  if (info.coding != JpegCoding::kBaseline && info.coding != JpegCoding::kExtended) {
    return std::string(coding_name(info.coding));
  }
  if (info.color != JpegColor::kYCbCr && info.color != JpegColor::kGray)
    return std::string(color_name(info.color));
  if (info.sampling == JpegSampling::kOther) return "unusual chroma sampling factors";
  return "";
}

// "" when the hardware engines take the file, else why not.
std::string why_not_hardware(const JpegInfo& info) {
  if (!info.gpu_decodable) return info.not_gpu_reason;
  if (info.coding != JpegCoding::kBaseline) return std::string(coding_name(info.coding));
  if (info.scans != 1) return fmt::format("{} scans", info.scans);
  if (info.sampling == JpegSampling::k411 || info.sampling == JpegSampling::k410) {
    return fmt::format("{} chroma", jpeg_sampling_name(info.sampling));
  }
  return "";
}

}  // namespace

std::string_view nvjpeg_backend_name(NvjpegBackend backend) {
  switch (backend) {
    case NvjpegBackend::kAuto: return "auto";
    case NvjpegBackend::kHardware: return "hardware";
    case NvjpegBackend::kGpu: return "gpu";
  }
  return "unknown";
}

std::string_view jpeg_route_name(JpegRoute route) {
  switch (route) {
    case JpegRoute::kHardware: return "hardware";
    case JpegRoute::kGpu: return "gpu";
    case JpegRoute::kCpu: return "cpu";
  }
  return "unknown";
}

std::string_view jpeg_sampling_name(JpegSampling sampling) {
  switch (sampling) {
    case JpegSampling::kGray: return "gray";
    case JpegSampling::k444: return "4:4:4";
    case JpegSampling::k422: return "4:2:2";
    case JpegSampling::k420: return "4:2:0";
    case JpegSampling::k440: return "4:4:0";
    case JpegSampling::k411: return "4:1:1";
    case JpegSampling::k410: return "4:1:0";
    case JpegSampling::kOther: return "other";
  }
  return "unknown";
}

Result<JpegInfo> read_jpeg_info(std::span<const std::uint8_t> bytes, std::string_view name) {
  Header header;
  FOVEA_TRY(walk_markers(bytes, name, &header));
  JpegInfo& info = header.info;
  if (info.height == 0) {
    return detail::image_error(StatusCode::kUnsupported, name, kJpeg,
                               "the height is given only after the first scan (DNL marker)");
  }
  FOVEA_TRY(check_image_size(name, info.width, info.height, ImageLimits{}));
  info.color = color_of(header);
  info.sampling = sampling_of(header);
  info.not_gpu_reason = info.ends_without_eoi ? "no EOI marker after the data" : why_not_gpu(info);
  info.gpu_decodable = info.not_gpu_reason.empty();
  info.not_hardware_reason = why_not_hardware(info);
  info.hardware_decodable = info.not_hardware_reason.empty();
  return std::move(header.info);
}

}  // namespace fovea::io

#if defined(FOVEA_HAVE_CUDA)

namespace fovea::io {
namespace {

namespace abi = nvjpeg_abi;

using detail::nvjpeg;
using detail::nvjpeg_ok;
using detail::nvjpeg_status_name;

struct StateDestroyer {
  void operator()(abi::JpegState state) const { static_cast<void>(nvjpeg().jpeg_state_destroy(state)); }
};
using detail::HandleOwner;
using StateOwner = std::unique_ptr<abi::JpegStateHandle, StateDestroyer>;

// Every decoder of the process submits to the same JPEG engines, one batch at a time. Batches
// submitted from several threads at once (the image source's JPEG threads, each with its own
// handle and state) only shared the engines (two threads: 22 ms a batch of 32 where one alone
// takes 8.6 ms, call 23), and with three such threads a flow over 6,000 photos hung inside the
// decode call (call 25), as did the earlier read-ahead. One at a time, a thread that is not
// decoding reads and probes its next files meanwhile.
std::mutex& hardware_submission() {
  static std::mutex mutex;
  return mutex;
}

// A library handle on one backend with its decoding state. The state is declared last so that it
// is destroyed first.
struct BackendHandles {
  HandleOwner handle;
  StateOwner state;
};

Result<BackendHandles> create_backend(abi::Backend which) {
  abi::Handle handle = nullptr;
  FOVEA_NVJPEG_TRY(nvjpeg().create_ex(which, nullptr, nullptr, 0, &handle));
  BackendHandles backend;
  backend.handle.reset(handle);
  abi::JpegState state = nullptr;
  FOVEA_NVJPEG_TRY(nvjpeg().jpeg_state_create(handle, &state));
  backend.state.reset(state);
  return backend;
}

// Bad data is the file's fault (kCorruptData), a form nvJPEG refuses is kUnsupported, anything
// else the device's; every message names the file and the backend.
Status decode_error(abi::Status status, std::string_view name, std::string_view backend) {
  StatusCode code = StatusCode::kDeviceError;
  if (status == abi::kStatusBadJpeg || status == abi::kStatusIncompleteBitstream)
    code = StatusCode::kCorruptData;
  if (status == abi::kStatusJpegNotSupported) code = StatusCode::kUnsupported;
  return detail::image_error(
      code, name, kJpeg, fmt::format("nvJPEG ({} backend) failed: {}", backend, nvjpeg_status_name(status)));
}

Status check_output(const ImageView& output, const JpegInfo& info, std::string_view name) {
  if (output.format != PixelFormat::kRGB8 || output.memory != MemoryKind::kDevice ||
      output.planes[0].data == nullptr) {
    return make_error(StatusCode::kInvalidArgument, name, ": nvJPEG decodes into rgb8 device images, not ",
                      pixel_format_name(output.format), " in ", memory_kind_name(output.memory), " memory");
  }
  if (output.width != info.width || output.height != info.height ||
      output.planes[0].pitch < static_cast<std::size_t>(info.width) * 3) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("{}: the output is {}x{} (pitch {}), the JPEG {}x{}", name, output.width,
                                  output.height, output.planes[0].pitch, info.width, info.height));
  }
  return Status::ok();
}

abi::Image nvjpeg_image(const ImageView& output) {
  abi::Image image{};
  image.channel[0] = static_cast<unsigned char*>(output.planes[0].data);
  image.pitch[0] = output.planes[0].pitch;
  return image;
}

}  // namespace
}  // namespace fovea::io

#endif

namespace fovea::io {

// What every build keeps; the CUDA build adds the library handles and the decoding.
struct NvjpegDecoder::Impl {
  NvjpegBackend backend = NvjpegBackend::kGpu;
  int engines = 0;
  std::string hardware_unavailable_reason;
  mutable std::mutex stats_mutex;
  NvjpegStats stats;
#if defined(FOVEA_HAVE_CUDA)
  int device = 0;
  BackendHandles hardware;    // empty unless backend is kHardware
  BackendHandles gpu;         // always: the GPU route, and the retry of a failed hardware batch
  int batch_initialized = 0;  // the batch size nvjpegDecodeBatchedInitialize was last called with
  // The stream the last hardware batch was decoded on: its work may still use the state's buffers.
  cudaStream_t last_batch_stream = nullptr;

  void count(std::int64_t NvjpegStats::*images, std::int64_t NvjpegStats::*bytes, std::size_t size) {
    const std::lock_guard lock(stats_mutex);
    ++(stats.*images);
    stats.*bytes += static_cast<std::int64_t>(size);
  }

  Status decode_gpu(cudaStream_t stream, std::span<const std::uint8_t> jpeg, std::string_view name,
                    const ImageView& output);
  Status decode_cpu(cudaStream_t stream, std::span<const std::uint8_t> jpeg, std::string_view name,
                    const ImageView& output);
  Status decode_hardware(cudaStream_t stream, std::span<const std::span<const std::uint8_t>> jpegs,
                         std::span<const std::string_view> names, std::span<const ImageView> outputs,
                         const std::vector<std::size_t>& files);
#endif
};

NvjpegDecoder::NvjpegDecoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NvjpegDecoder::~NvjpegDecoder() = default;

NvjpegBackend NvjpegDecoder::backend() const {
  return impl_->backend;
}

int NvjpegDecoder::hardware_engines() const {
  return impl_->engines;
}

const std::string& NvjpegDecoder::hardware_unavailable_reason() const {
  return impl_->hardware_unavailable_reason;
}

Result<JpegInfo> NvjpegDecoder::probe(std::span<const std::uint8_t> bytes, std::string_view name) const {
  FOVEA_ASSIGN_OR_RETURN(JpegInfo info, read_jpeg_info(bytes, name));
  if (info.hardware_decodable && impl_->backend == NvjpegBackend::kHardware) {
    info.route = JpegRoute::kHardware;
  } else if (info.gpu_decodable) {
    info.route = JpegRoute::kGpu;
  } else {
    info.route = JpegRoute::kCpu;
  }
  return info;
}

NvjpegStats NvjpegDecoder::stats() const {
  const std::lock_guard lock(impl_->stats_mutex);
  return impl_->stats;
}

#if defined(FOVEA_HAVE_CUDA)

Status NvjpegDecoder::Impl::decode_gpu(cudaStream_t stream, std::span<const std::uint8_t> jpeg,
                                       std::string_view name, const ImageView& output) {
  abi::Image image = nvjpeg_image(output);
  const abi::Status status = nvjpeg().decode(gpu.handle.get(), gpu.state.get(), jpeg.data(), jpeg.size(),
                                             abi::kOutputRgbi, &image, stream);
  if (!nvjpeg_ok(status)) return decode_error(status, name, "gpu");
  count(&NvjpegStats::gpu_images, &NvjpegStats::gpu_bytes, jpeg.size());
  return Status::ok();
}

// libjpeg-turbo on this thread, then an upload. From pageable memory the copy has taken the host
// buffer by the time it returns (CUDA's "API synchronization behavior"), so the image may go.
Status NvjpegDecoder::Impl::decode_cpu(cudaStream_t stream, std::span<const std::uint8_t> jpeg,
                                       std::string_view name, const ImageView& output) {
  ImageDecodeOptions options;
  options.apply_orientation = false;  // as the GPU routes: stored pixels
  // nvJPEG replicates chroma samples (libjpeg's plain upsampling): so does this route, so that a
  // file's pixels do not depend on the route its coding sent it to.
  options.fancy_upsampling = false;
  FOVEA_ASSIGN_OR_RETURN(DecodedImage decoded, decode_image(jpeg, name, options));
  const ImageView& host = decoded.image.view();
  if (host.format != PixelFormat::kRGB8 || host.width != output.width || host.height != output.height) {
    return make_error(StatusCode::kInternal, name,
                      ": libjpeg decoded another size or format than the header says");
  }
  FOVEA_CUDA_TRY(cudaMemcpy2DAsync(output.planes[0].data, output.planes[0].pitch, host.planes[0].data,
                                   host.planes[0].pitch, static_cast<std::size_t>(host.width) * 3,
                                   static_cast<std::size_t>(host.height), cudaMemcpyHostToDevice, stream));
  count(&NvjpegStats::cpu_images, &NvjpegStats::cpu_bytes, jpeg.size());
  return Status::ok();
}

Status NvjpegDecoder::Impl::decode_hardware(cudaStream_t stream,
                                            std::span<const std::span<const std::uint8_t>> jpegs,
                                            std::span<const std::string_view> names,
                                            std::span<const ImageView> outputs,
                                            const std::vector<std::size_t>& files) {
  std::vector<const unsigned char*> data;
  std::vector<std::size_t> lengths;
  std::vector<abi::Image> images;
  for (const std::size_t i : files) {
    data.push_back(jpegs[i].data());
    lengths.push_back(jpegs[i].size());
    images.push_back(nvjpeg_image(outputs[i]));
  }
  const int batch = static_cast<int>(files.size());
  abi::Status status;
  {
    const std::lock_guard one_batch_at_a_time(hardware_submission());
    if (batch_initialized != batch) {
      // Initializing again replaces the buffers of the state, which the previous batch's work on its
      // stream may still be reading or writing: let it finish first.
      if (last_batch_stream != nullptr) FOVEA_CUDA_TRY(cudaStreamSynchronize(last_batch_stream));
      // One CPU thread: the engines do the Huffman decoding, the host only parses.
      FOVEA_NVJPEG_TRY(nvjpeg().decode_batched_initialize(hardware.handle.get(), hardware.state.get(), batch,
                                                          1, abi::kOutputRgbi));
      batch_initialized = batch;
    }
    status = nvjpeg().decode_batched(hardware.handle.get(), hardware.state.get(), data.data(), lengths.data(),
                                     images.data(), stream);
  }
  last_batch_stream = stream;
  if (nvjpeg_ok(status)) {
    for (const std::size_t i : files)
      count(&NvjpegStats::hardware_images, &NvjpegStats::hardware_bytes, jpegs[i].size());
    return Status::ok();
  }
  // nvJPEG's documentation: after a failed batch, initialize again before the next one.
  batch_initialized = 0;
  log_debug("nvJPEG hardware batch of {} failed ({}); decoding its files one by one on the gpu backend",
            batch, nvjpeg_status_name(status));
  for (const std::size_t i : files) FOVEA_TRY(decode_gpu(stream, jpegs[i], names[i], outputs[i]));
  return Status::ok();
}

bool NvjpegDecoder::available() {
  return nvjpeg().status.is_ok();
}

Result<std::unique_ptr<NvjpegDecoder>> NvjpegDecoder::create(NvjpegBackend backend, int device) {
  FOVEA_TRY(nvjpeg().status);
  FOVEA_TRY(detail::use_nvjpeg_device(device, "nvJPEG"));
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  if (backend != NvjpegBackend::kGpu) {
    Result<BackendHandles> hardware = create_backend(abi::kBackendHardware);
    if (hardware.is_ok()) {
      impl->hardware = std::move(hardware).value();
      impl->backend = NvjpegBackend::kHardware;
    } else if (backend == NvjpegBackend::kHardware) {
      return make_error(StatusCode::kUnsupported, "nvJPEG hardware backend unavailable on CUDA device ",
                        std::to_string(device), ": ", hardware.status().message());
    } else {
      impl->hardware_unavailable_reason = hardware.status().message();
      log_debug("nvJPEG: no hardware backend ({}); using the gpu backend", impl->hardware_unavailable_reason);
    }
  }
  FOVEA_ASSIGN_OR_RETURN(impl->gpu, create_backend(abi::kBackendGpuHybrid));
  unsigned int engines = 0;
  unsigned int cores = 0;
  if (impl->hardware.handle && nvjpeg().get_hardware_decoder_info != nullptr &&
      nvjpeg_ok(nvjpeg().get_hardware_decoder_info(impl->hardware.handle.get(), &engines, &cores))) {
    impl->engines = static_cast<int>(engines);
  }
  return std::unique_ptr<NvjpegDecoder>(new NvjpegDecoder(std::move(impl)));
}

Status NvjpegDecoder::decode_batch(cudaStream_t stream, std::span<const std::span<const std::uint8_t>> jpegs,
                                   std::span<const std::string_view> names,
                                   std::span<const ImageView> outputs) {
  // Every file is checked before any work is queued, so a bad one costs no decoding. (Lists of
  // different lengths are refused by the overload, whose infos then number the shorter.)
  std::vector<JpegInfo> infos;
  for (std::size_t i = 0; i < std::min(jpegs.size(), names.size()); ++i) {
    FOVEA_ASSIGN_OR_RETURN(JpegInfo info, probe(jpegs[i], names[i]));
    infos.push_back(std::move(info));
  }
  return decode_batch(stream, jpegs, names, outputs, infos);
}

Status NvjpegDecoder::decode_batch(cudaStream_t stream, std::span<const std::span<const std::uint8_t>> jpegs,
                                   std::span<const std::string_view> names,
                                   std::span<const ImageView> outputs, std::span<const JpegInfo> infos) {
  if (names.size() != jpegs.size() || outputs.size() != jpegs.size() || infos.size() != jpegs.size()) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("decode_batch: {} files, {} names, {} outputs, {} infos", jpegs.size(),
                                  names.size(), outputs.size(), infos.size()));
  }
  FOVEA_CUDA_TRY(cudaSetDevice(impl_->device));
  std::vector<std::size_t> hardware_files;
  for (std::size_t i = 0; i < jpegs.size(); ++i) {
    FOVEA_TRY(check_output(outputs[i], infos[i], names[i]));
    if (infos[i].route == JpegRoute::kHardware) hardware_files.push_back(i);
  }
  if (!hardware_files.empty())
    FOVEA_TRY(impl_->decode_hardware(stream, jpegs, names, outputs, hardware_files));
  for (std::size_t i = 0; i < jpegs.size(); ++i) {
    const JpegRoute route = infos[i].route;
    if (route == JpegRoute::kGpu) FOVEA_TRY(impl_->decode_gpu(stream, jpegs[i], names[i], outputs[i]));
    if (route == JpegRoute::kCpu) FOVEA_TRY(impl_->decode_cpu(stream, jpegs[i], names[i], outputs[i]));
  }
  return Status::ok();
}

#else  // CPU-only build: create() never succeeds, so no decoder exists to decode with.

constexpr std::string_view kBuiltWithoutCuda = "nvJPEG unavailable: this fovea was built without CUDA";

bool NvjpegDecoder::available() {
  return false;
}

Result<std::unique_ptr<NvjpegDecoder>> NvjpegDecoder::create(NvjpegBackend, int) {
  return make_error(StatusCode::kUnsupported, kBuiltWithoutCuda);
}

Status NvjpegDecoder::decode_batch(cudaStream_t, std::span<const std::span<const std::uint8_t>>,
                                   std::span<const std::string_view>, std::span<const ImageView>) {
  return make_error(StatusCode::kUnsupported, kBuiltWithoutCuda);
}

Status NvjpegDecoder::decode_batch(cudaStream_t, std::span<const std::span<const std::uint8_t>>,
                                   std::span<const std::string_view>, std::span<const ImageView>,
                                   std::span<const JpegInfo>) {
  return make_error(StatusCode::kUnsupported, kBuiltWithoutCuda);
}

#endif

}  // namespace fovea::io
