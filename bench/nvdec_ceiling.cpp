// The raw NVDEC ceiling on a clip: how fast nvcuvid alone decodes it on this GPU, without fovea's
// decoder, so that `fovea decode-bench --decoder nvdec` can be compared with a ceiling measured in
// the same run on the same file.
//
//   nvdec_ceiling FILE [--sessions N] [--repeat R] [--mode replay|parse|parse-map|fovea] [options]
//   (--help lists every option)
//
// Modes, from the hardware's own rate to what an application sees:
//   replay     The clip is parsed once before timing and every picture's parameters and slice data
//              are kept; each session then submits them back to back with cuvidDecodePicture and
//              nothing else. This is the decoder engines' rate with no parsing, mapping or copying.
//   parse      Each session runs nvcuvid's parser over the clip, as the Video Codec SDK's samples
//              do, submitting each picture from the parser's decode callback; nothing is mapped.
//   parse-map  As parse, and each displayed picture is mapped, copied into device memory and
//              unmapped inside the display callback (the SDK sample NvDecoder's way).
//   fovea      fovea's own NVDEC decoder (io::open_decoder, send_and_receive) in this harness.
// Sessions run on their own threads in this process, all started together; --contexts own gives
// each session a CUDA context of its own instead of the device's primary context, and
// --create-on-main creates every session's decoder on the main thread instead of its own.
// The parser's settings default to the SDK sample's (display delay 1, the stream's minimum number
// of decode surfaces); --display-delay and --surfaces change them, --end-of-picture marks every
// packet as a whole picture (CUVID_PKT_ENDOFPICTURE) and --decode-status asks
// cuvidGetDecodeStatus about every displayed picture, as fovea's decoder does. The options after
// those make one more of fovea's choices at a time (docs/perf.md, "Run D"): the CUDA runtime's
// memory and stream, pictures kept mapped until their copy events, the context pushed per packet,
// packet timestamps, the parser's error threshold, two 2-D copies per frame into pitched blocks,
// N destination blocks in turn, one parser for all passes, NVTX ranges. --create-in-callback
// creates each decoder in the parser's sequence callback, as fovea does, once timing has started,
// instead of before: the cost of creating a decoder while other sessions decode; with
// --decoder-per-pass a new one each pass, as fovea's pipeline did when it looped a file (in fovea
// mode too). --restart-per-pass ends the stream each pass and restarts fovea's decoder, as the
// pipeline does now.
#include <cuda_runtime_api.h>
#include <ffnvcodec/dynlink_loader.h>

#include <CLI/CLI.hpp>

#include <array>
#include <deque>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/nvtx.h"
#include "io/decoder.h"
#include "io/demuxer.h"

namespace {

using Clock = std::chrono::steady_clock;

CudaFunctions* g_cu = nullptr;
CuvidFunctions* g_cuvid = nullptr;

void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    const char* name = "?";
    g_cu->cuGetErrorName(result, &name);
    throw std::runtime_error(std::string(what) + " failed: " + name);
  }
}

enum class Mode { kReplay, kParse, kParseMap, kFovea };

struct Options {
  std::string file;
  int sessions = 1;
  int repeat = 1;
  Mode mode = Mode::kReplay;
  bool own_contexts = false;
  int display_delay = 1;
  int surfaces = 0;  // 0: the stream's minimum
  bool end_of_picture = false;
  bool decode_status = false;
  bool create_on_main = false;
  bool runtime = false;
  bool hold_maps = false;
  bool push_per_packet = false;
  bool timestamps = false;
  int error_threshold = 0;
  bool two_copies = false;
  int pool_blocks = 1;
  bool one_parser = false;
  bool nvtx = false;
  bool create_in_callback = false;
  bool decoder_per_pass = false;
  bool restart_per_pass = false;
};

// One picture as the parser handed it to the decode callback, with the slice data and offsets the
// parameters point to copied out of the parser's buffers (they are only valid during the callback).
struct RecordedPicture {
  CUVIDPICPARAMS params{};
  std::vector<unsigned char> bitstream;
  std::vector<unsigned int> slice_offsets;
};

struct Clip {
  fovea::io::StreamInfo info;
  std::vector<fovea::io::Packet> packets;
  std::vector<std::uint8_t> extradata;
  cudaVideoCodec codec = cudaVideoCodec_H264;
  CUVIDEOFORMAT format{};
  std::vector<RecordedPicture> pictures;
};

cudaVideoCodec cuvid_codec(fovea::io::VideoCodec codec) {
  switch (codec) {
    case fovea::io::VideoCodec::kH264: return cudaVideoCodec_H264;
    case fovea::io::VideoCodec::kHevc: return cudaVideoCodec_HEVC;
    case fovea::io::VideoCodec::kVp9: return cudaVideoCodec_VP9;
    case fovea::io::VideoCodec::kAv1: return cudaVideoCodec_AV1;
    default: throw std::runtime_error("nvdec_ceiling handles H.264, HEVC, VP9 and AV1 only");
  }
}

Clip read_clip(const std::string& file) {
  auto demuxer = fovea::io::Demuxer::open(file);
  if (!demuxer.is_ok()) {
    throw std::runtime_error(demuxer.status().to_string());
  }
  Clip clip;
  clip.codec = cuvid_codec((*demuxer)->info().codec);
  clip.extradata = (*demuxer)->info().extradata;
  clip.info = (*demuxer)->info();
  while (true) {
    fovea::io::Packet packet;
    auto more = (*demuxer)->read(packet);
    if (!more.is_ok()) {
      throw std::runtime_error(more.status().to_string());
    }
    if (!*more) {
      break;
    }
    clip.packets.push_back(std::move(packet));
  }
  return clip;
}

// Runs nvcuvid's parser over the clip `passes` times; the callbacks are the caller's.
void parse_clip(const Clip& clip, const Options& options, CUVIDPARSERPARAMS params, int passes = 1) {
  CUvideoparser parser = nullptr;
  params.CodecType = clip.codec;
  params.ulMaxNumDecodeSurfaces = 1;  // raised by the sequence callback's answer
  params.ulMaxDisplayDelay = static_cast<unsigned int>(options.display_delay);
  params.ulErrorThreshold = static_cast<unsigned int>(options.error_threshold);
  check(g_cuvid->cuvidCreateVideoParser(&parser, &params), "cuvidCreateVideoParser");
  auto feed = [&](const std::uint8_t* data, std::size_t size, unsigned long flags, std::int64_t pts = 0) {
    CUVIDSOURCEDATAPACKET packet{};
    packet.payload = data;
    packet.payload_size = static_cast<unsigned long>(size);
    packet.flags = flags;
    packet.timestamp = pts;
    if (options.push_per_packet) {
      // fovea pushes the context for each packet and pops it after.
      CUcontext current = nullptr;
      g_cu->cuCtxPopCurrent(&current);
      check(g_cu->cuCtxPushCurrent(current), "cuCtxPushCurrent");
    }
    std::optional<fovea::NvtxRange> range;  // fovea's NVTX range, only when --nvtx asks for it
    if (options.nvtx) {
      range.emplace("decode");
    }
    check(g_cuvid->cuvidParseVideoData(parser, &packet), "cuvidParseVideoData");
  };
  if (!clip.extradata.empty()) {
    feed(clip.extradata.data(), clip.extradata.size(), 0);
  }
  for (int pass = 0; pass < passes; ++pass) {
    for (const auto& packet : clip.packets) {
      const unsigned long flags = (options.end_of_picture ? unsigned{CUVID_PKT_ENDOFPICTURE} : 0u) |
                                  (options.timestamps ? unsigned{CUVID_PKT_TIMESTAMP} : 0u);
      feed(packet.data.data(), packet.data.size(), flags, packet.pts);
    }
  }
  feed(nullptr, 0, CUVID_PKT_ENDOFSTREAM);
  g_cuvid->cuvidDestroyVideoParser(parser);
}

int surface_count(const CUVIDEOFORMAT& format, const Options& options) {
  return std::max<int>({format.min_num_decode_surfaces, options.surfaces, 1});
}

void record_pictures(Clip& clip, const Options& options) {
  struct Recorder {
    static int CUDAAPI sequence(void* user, CUVIDEOFORMAT* format) {
      static_cast<Clip*>(user)->format = *format;
      return std::max<int>(format->min_num_decode_surfaces, 1);
    }
    static int CUDAAPI decode(void* user, CUVIDPICPARAMS* params) {
      RecordedPicture picture;
      picture.params = *params;
      picture.bitstream.assign(params->pBitstreamData, params->pBitstreamData + params->nBitstreamDataLen);
      picture.slice_offsets.assign(params->pSliceDataOffsets, params->pSliceDataOffsets + params->nNumSlices);
      static_cast<Clip*>(user)->pictures.push_back(std::move(picture));
      return 1;
    }
    static int CUDAAPI display(void*, CUVIDPARSERDISPINFO*) { return 1; }
  };
  CUVIDPARSERPARAMS params{};
  params.pUserData = &clip;
  params.pfnSequenceCallback = Recorder::sequence;
  params.pfnDecodePicture = Recorder::decode;
  params.pfnDisplayPicture = Recorder::display;
  parse_clip(clip, options, params);
  for (auto& picture : clip.pictures) {
    picture.params.pBitstreamData = picture.bitstream.data();
    picture.params.pSliceDataOffsets = picture.slice_offsets.data();
  }
}

CUvideodecoder create_decoder(const CUVIDEOFORMAT& format, const Options& options, CUvideoctxlock lock) {
  CUVIDDECODECREATEINFO info{};
  info.ulWidth = format.coded_width;
  info.ulHeight = format.coded_height;
  info.ulNumDecodeSurfaces = static_cast<unsigned long>(surface_count(format, options));
  info.CodecType = format.codec;
  info.ChromaFormat = format.chroma_format;
  info.ulCreationFlags = cudaVideoCreate_PreferCUVID;
  info.bitDepthMinus8 = format.bit_depth_luma_minus8;
  info.OutputFormat =
      format.bit_depth_luma_minus8 > 0 ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12;
  info.DeinterlaceMode = cudaVideoDeinterlaceMode_Weave;
  info.ulTargetWidth = format.coded_width;
  info.ulTargetHeight = format.coded_height;
  info.ulNumOutputSurfaces = options.hold_maps ? 4 : 2;
  info.vidLock = lock;
  CUvideodecoder decoder = nullptr;
  check(g_cuvid->cuvidCreateDecoder(&decoder, &info), "cuvidCreateDecoder");
  return decoder;
}

// Blocks until the picture in `index` has been decoded: mapping waits for its decode.
void wait_for_picture(CUvideodecoder decoder, int index) {
  CUVIDPROCPARAMS params{};
  params.progressive_frame = 1;
  CUdeviceptr surface = 0;
  unsigned int pitch = 0;
  check(g_cuvid->cuvidMapVideoFrame(decoder, index, &surface, &pitch, &params), "cuvidMapVideoFrame");
  check(g_cuvid->cuvidUnmapVideoFrame(decoder, surface), "cuvidUnmapVideoFrame");
}

// One session: a decoder (created outside the timed region), then `repeat` passes over the clip.
class Session {
 public:
  Session(const Clip& clip, const Options& options, CUcontext context)
      : clip_(clip), options_(options), context_(context) {}

  void prepare() {
    if (options_.mode == Mode::kFovea) {
      cudaStream_t stream = nullptr;
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      stream_ = reinterpret_cast<CUstream>(stream);
      open_fovea_decoder();
      // fovea creates the hardware decoder at the first picture; like the other modes' decoders, it
      // is created before timing (the pass below sends this packet again, a keyframe).
      throw_if(fovea::io::send_and_receive(*fovea_decoder_, clip_.packets.front(), [](fovea::Frame&&) {}));
      return;
    }
    check(g_cuvid->cuvidCtxLockCreate(&lock_, context_), "cuvidCtxLockCreate");
    if (!options_.create_in_callback) {
      decoder_ = create_decoder(clip_.format, options_, lock_);
    }
    if (options_.mode == Mode::kParseMap) {
      // fovea's pooled frames have rows of a 256-byte multiple; the plain copy packs them.
      frame_pitch_ = options_.two_copies ? (std::size_t{clip_.format.coded_width} + 255) / 256 * 256
                                         : std::size_t{clip_.format.coded_width};
      const std::size_t bytes = frame_pitch_ * clip_.format.coded_height * 3 / 2;
      frames_d_.resize(static_cast<std::size_t>(options_.pool_blocks));
      for (CUdeviceptr& frame : frames_d_) {
        if (options_.runtime) {
          void* block = nullptr;
          cudaMalloc(&block, bytes);
          frame = reinterpret_cast<CUdeviceptr>(block);
        } else {
          check(g_cu->cuMemAlloc(&frame, bytes), "cuMemAlloc");
        }
      }
      if (options_.runtime) {
        cudaStream_t stream = nullptr;
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
        stream_ = reinterpret_cast<CUstream>(stream);
      } else {
        check(g_cu->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
      }
      for (auto& event : events_) {
        check(g_cu->cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
      }
    }
  }

  void run() {
    if (options_.mode == Mode::kFovea) {
      run_fovea();
      return;
    }
    if (options_.one_parser && options_.mode != Mode::kReplay) {
      parse(options_.repeat);
      return;
    }
    for (int pass = 0; pass < options_.repeat; ++pass) {
      if (options_.mode == Mode::kReplay) {
        replay();
      } else {
        parse(1);
        if (options_.decoder_per_pass) {
          destroy_decoder();  // the next pass's sequence callback creates another
        }
      }
    }
  }

  void release() {
    fovea_decoder_.reset();  // before the stream its copies run on
    destroy_decoder();
    for (CUdeviceptr frame : frames_d_) {
      g_cu->cuMemFree(frame);
    }
    if (stream_ != nullptr) {
      g_cu->cuStreamDestroy(stream_);
    }
    if (lock_ != nullptr) {
      g_cuvid->cuvidCtxLockDestroy(lock_);
    }
  }

  std::int64_t frames() const { return frames_; }

 private:
  void open_fovea_decoder() {
    fovea::io::DecoderOptions decoder_options;
    decoder_options.backend = fovea::io::DecoderBackend::kNvdec;
    decoder_options.stream = reinterpret_cast<cudaStream_t>(stream_);
    auto opened = fovea::io::open_decoder(clip_.info, decoder_options);
    if (!opened.is_ok()) {
      throw std::runtime_error(opened.status().to_string());
    }
    fovea_decoder_ = std::move(opened->decoder);
  }

  void run_fovea() {
    const auto count = [this](fovea::Frame&&) { ++frames_; };
    for (int pass = 0; pass < options_.repeat; ++pass) {
      if (pass > 0 && (options_.decoder_per_pass || options_.restart_per_pass)) {
        // Each pass ends the stream, as a looping source's does; the next one starts afresh.
        throw_if(fovea::io::finish_and_receive(*fovea_decoder_, count));
        if (options_.restart_per_pass) {
          throw_if(fovea_decoder_->restart());
        } else {
          open_fovea_decoder();
        }
      }
      for (const auto& packet : clip_.packets) {
        throw_if(fovea::io::send_and_receive(*fovea_decoder_, packet, count));
      }
    }
    throw_if(fovea::io::finish_and_receive(*fovea_decoder_, count));
    check(g_cu->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

  void destroy_decoder() {
    for (const auto& [surface, event] : held_) {
      g_cu->cuEventSynchronize(event);
      g_cuvid->cuvidUnmapVideoFrame(decoder_, surface);
    }
    held_.clear();
    if (decoder_ != nullptr) {
      g_cuvid->cuvidDestroyDecoder(decoder_);
      decoder_ = nullptr;
    }
  }

  static void throw_if(const fovea::Status& status) {
    if (!status.is_ok()) {
      throw std::runtime_error(status.to_string());
    }
  }

  void replay() {
    for (const auto& picture : clip_.pictures) {
      CUVIDPICPARAMS params = picture.params;
      check(g_cuvid->cuvidDecodePicture(decoder_, &params), "cuvidDecodePicture");
      ++frames_;
    }
    wait_for_picture(decoder_, clip_.pictures.back().params.CurrPicIdx);
  }

  void parse(int passes) {
    CUVIDPARSERPARAMS params{};
    params.pUserData = this;
    params.pfnSequenceCallback = [](void* user, CUVIDEOFORMAT* format) -> int {
      auto* self = static_cast<Session*>(user);
      if (self->decoder_ == nullptr) {
        self->decoder_ = create_decoder(*format, self->options_, self->lock_);
      }
      return surface_count(*format, self->options_);
    };
    params.pfnDecodePicture = [](void* user, CUVIDPICPARAMS* picture) -> int {
      auto* self = static_cast<Session*>(user);
      check(g_cuvid->cuvidDecodePicture(self->decoder_, picture), "cuvidDecodePicture");
      ++self->frames_;
      return 1;
    };
    params.pfnDisplayPicture = [](void* user, CUVIDPARSERDISPINFO* display) -> int {
      auto* self = static_cast<Session*>(user);
      if (display != nullptr && self->options_.mode == Mode::kParseMap) {
        self->copy_out(*display);
      }
      return 1;
    };
    parse_clip(clip_, options_, params, passes);
  }

  void copy_out(const CUVIDPARSERDISPINFO& display) {
    std::optional<fovea::NvtxRange> range;
    if (options_.nvtx) {
      range.emplace("map");
    }
    CUVIDPROCPARAMS params{};
    params.progressive_frame = display.progressive_frame;
    params.output_stream = stream_;
    CUdeviceptr surface = 0;
    unsigned int pitch = 0;
    check(g_cuvid->cuvidMapVideoFrame(decoder_, display.picture_index, &surface, &pitch, &params),
          "cuvidMapVideoFrame");
    const CUdeviceptr d_frame = frames_d_[next_frame_++ % frames_d_.size()];
    if (options_.two_copies) {
      // fovea's way: the visible luma rows, then the chroma plane that follows the coded rows.
      const auto rows =
          static_cast<std::size_t>(clip_.format.display_area.bottom - clip_.format.display_area.top);
      copy_rows(surface, pitch, d_frame, rows);
      copy_rows(surface + std::size_t{pitch} * clip_.format.coded_height, pitch,
                d_frame + frame_pitch_ * rows, rows / 2);
    } else {
      copy_rows(surface, pitch, d_frame, std::size_t{clip_.format.coded_height} * 3 / 2);  // luma and chroma
    }
    if (options_.decode_status) {
      CUVIDGETDECODESTATUS status{};
      g_cuvid->cuvidGetDecodeStatus(decoder_, display.picture_index, &status);
    }
    if (!options_.hold_maps) {
      check(g_cu->cuStreamSynchronize(stream_), "cuStreamSynchronize");
      check(g_cuvid->cuvidUnmapVideoFrame(decoder_, surface), "cuvidUnmapVideoFrame");
      return;
    }
    // fovea's pattern: up to three pictures stay mapped until their copy events complete.
    const CUevent event = events_[next_event_++ % events_.size()];
    check(g_cu->cuEventRecord(event, stream_), "cuEventRecord");
    held_.push_back({surface, event});
    while (held_.size() > events_.size() - 1) {
      check(g_cu->cuEventSynchronize(held_.front().second), "cuEventSynchronize");
      check(g_cuvid->cuvidUnmapVideoFrame(decoder_, held_.front().first), "cuvidUnmapVideoFrame");
      held_.pop_front();
    }
  }

  void copy_rows(CUdeviceptr source, unsigned int pitch, CUdeviceptr destination, std::size_t rows) {
    CUDA_MEMCPY2D copy{};
    copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.srcDevice = source;
    copy.srcPitch = pitch;
    copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = destination;
    copy.dstPitch = frame_pitch_;
    copy.WidthInBytes = clip_.format.coded_width;
    copy.Height = rows;
    check(g_cu->cuMemcpy2DAsync(&copy, stream_), "cuMemcpy2DAsync");
  }

  const Clip& clip_;
  const Options& options_;
  CUcontext context_ = nullptr;
  CUvideoctxlock lock_ = nullptr;
  CUvideodecoder decoder_ = nullptr;
  std::vector<CUdeviceptr> frames_d_;
  std::size_t next_frame_ = 0;
  std::size_t frame_pitch_ = 0;
  CUstream stream_ = nullptr;
  std::array<CUevent, 4> events_{};
  std::size_t next_event_ = 0;
  std::deque<std::pair<CUdeviceptr, CUevent>> held_;
  std::int64_t frames_ = 0;
  std::unique_ptr<fovea::io::Decoder> fovea_decoder_;
};

// Fills `options` from the command line; throws CLI::ParseError (--help included) or
// std::runtime_error for options that do not go together.
void parse_options(CLI::App& app, Options& options, int argc, char** argv) {
  app.description("The raw NVDEC ceiling on a clip (see the comment at the top of bench/nvdec_ceiling.cpp)");
  app.add_option("file", options.file, "Video file")->required();
  app.add_option("--sessions", options.sessions, "Concurrent sessions, one thread each")
      ->check(CLI::PositiveNumber);
  app.add_option("--repeat", options.repeat, "Passes over the clip per session")->check(CLI::PositiveNumber);
  const std::map<std::string, Mode> modes{{"replay", Mode::kReplay},
                                          {"parse", Mode::kParse},
                                          {"parse-map", Mode::kParseMap},
                                          {"fovea", Mode::kFovea}};
  app.add_option("--mode", options.mode, "replay, parse, parse-map or fovea")
      ->transform(CLI::CheckedTransformer(modes));
  const std::map<std::string, bool> contexts{{"shared", false}, {"own", true}};
  app.add_option("--contexts", options.own_contexts, "shared (the primary context) or own (one per session)")
      ->transform(CLI::CheckedTransformer(contexts));
  app.add_option("--display-delay", options.display_delay, "The parser's display delay");
  app.add_option("--surfaces", options.surfaces, "Decode surfaces (0: the stream's minimum)");
  app.add_option("--error-threshold", options.error_threshold, "The parser's error threshold, percent");
  app.add_option("--pool-blocks", options.pool_blocks, "parse-map: destination blocks used in turn")
      ->check(CLI::PositiveNumber);
  struct Flag {
    const char* name;
    bool Options::*member;
    const char* help;
  };
  const Flag flags[] = {
      {"--end-of-picture", &Options::end_of_picture, "Mark every packet CUVID_PKT_ENDOFPICTURE"},
      {"--decode-status", &Options::decode_status, "Ask cuvidGetDecodeStatus about every displayed picture"},
      {"--create-on-main", &Options::create_on_main, "Create every session's decoder on the main thread"},
      {"--runtime", &Options::runtime, "The CUDA runtime's memory and stream"},
      {"--hold-maps", &Options::hold_maps, "Keep pictures mapped until their copy events"},
      {"--push-per-packet", &Options::push_per_packet, "Push and pop the context for every packet"},
      {"--timestamps", &Options::timestamps, "Give the parser packet timestamps"},
      {"--two-copies", &Options::two_copies, "parse-map: luma and chroma copied apart into pitched blocks"},
      {"--one-parser", &Options::one_parser, "One parser for all passes"},
      {"--nvtx", &Options::nvtx, "fovea's NVTX ranges around parsing and mapping"},
      {"--create-in-callback", &Options::create_in_callback,
       "parse, parse-map: create the decoder in the sequence callback, once timing has started"},
      {"--decoder-per-pass", &Options::decoder_per_pass, "A new decoder for each pass"},
      {"--restart-per-pass", &Options::restart_per_pass,
       "fovea: end the stream and restart the decoder each pass"},
  };
  for (const Flag& flag : flags) {
    app.add_flag(flag.name, options.*flag.member, flag.help);
  }
  app.parse(argc, argv);
  if (options.create_in_callback && options.mode != Mode::kParse && options.mode != Mode::kParseMap) {
    throw std::runtime_error("--create-in-callback needs --mode parse or parse-map");
  }
  const bool per_pass_decoder_ok =
      options.mode == Mode::kFovea || (options.create_in_callback && !options.one_parser);
  if (options.decoder_per_pass && !per_pass_decoder_ok) {
    throw std::runtime_error(
        "--decoder-per-pass needs --mode fovea, or --create-in-callback and one parser per pass");
  }
  if (options.restart_per_pass && options.mode != Mode::kFovea) {
    throw std::runtime_error("--restart-per-pass needs --mode fovea");
  }
}

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kReplay: return "replay";
    case Mode::kParse: return "parse";
    case Mode::kParseMap: return "parse-map";
    case Mode::kFovea: return "fovea";
  }
  return "?";
}

void run(const Options& options) {
  if (cuda_load_functions(&g_cu, nullptr) != 0 || cuvid_load_functions(&g_cuvid, nullptr) != 0) {
    throw std::runtime_error("cannot load libcuda / libnvcuvid");
  }
  check(g_cu->cuInit(0), "cuInit");
  if (options.runtime) {
    cudaSetDevice(0);
    cudaFree(nullptr);
  }
  CUdevice device = 0;
  check(g_cu->cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext primary = nullptr;
  check(g_cu->cuDevicePrimaryCtxRetain(&primary, device), "cuDevicePrimaryCtxRetain");
  check(g_cu->cuCtxPushCurrent(primary), "cuCtxPushCurrent");

  Clip clip = read_clip(options.file);
  record_pictures(clip, options);
  if (clip.pictures.empty()) {
    throw std::runtime_error(options.file + ": the parser found no pictures");
  }

  std::vector<CUcontext> contexts(static_cast<std::size_t>(options.sessions), primary);
  if (options.own_contexts) {
    for (auto& context : contexts) {
      check(g_cu->cuCtxCreate(&context, 0, device), "cuCtxCreate");
      CUcontext popped = nullptr;
      g_cu->cuCtxPopCurrent(&popped);
    }
  }
  std::vector<std::unique_ptr<Session>> sessions;
  for (CUcontext context : contexts) {
    sessions.push_back(std::make_unique<Session>(clip, options, context));
  }
  // Each session's first submission and last decoded picture; decoders are created before the
  // start and destroyed after the end, outside the timed region.
  std::vector<Clock::time_point> begins(sessions.size());
  std::vector<Clock::time_point> ends(sessions.size());
  std::barrier start(static_cast<std::ptrdiff_t>(sessions.size()));
  std::vector<std::thread> threads;
  if (options.create_on_main) {
    for (std::size_t i = 0; i < sessions.size(); ++i) {
      check(g_cu->cuCtxPushCurrent(contexts[i]), "cuCtxPushCurrent");
      sessions[i]->prepare();
      CUcontext popped = nullptr;
      g_cu->cuCtxPopCurrent(&popped);
    }
  }
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    threads.emplace_back([&, i] {
      check(g_cu->cuCtxPushCurrent(contexts[i]), "cuCtxPushCurrent");
      if (!options.create_on_main) {
        sessions[i]->prepare();
      }
      start.arrive_and_wait();
      begins[i] = Clock::now();
      sessions[i]->run();
      ends[i] = Clock::now();
      sessions[i]->release();
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  std::int64_t frames = 0;
  for (const auto& session : sessions) {
    frames += session->frames();
  }
  const double wall = std::chrono::duration<double>(*std::max_element(ends.begin(), ends.end()) -
                                                    *std::min_element(begins.begin(), begins.end()))
                          .count();
  std::printf(
      "{\"mode\": \"%s\", \"contexts\": \"%s\", \"sessions\": %d, \"frames\": %lld, \"seconds\": %.3f, "
      "\"aggregate_fps\": %.1f, \"per_session_fps\": %.1f, \"display_delay\": %d, \"surfaces\": %d, "
      "\"end_of_picture\": %d, \"decode_status\": %d}\n",
      mode_name(options.mode), options.own_contexts ? "own" : "shared", options.sessions,
      static_cast<long long>(frames), wall, static_cast<double>(frames) / wall,
      static_cast<double>(frames) / wall / options.sessions, options.display_delay,
      surface_count(clip.format, options), options.end_of_picture ? 1 : 0, options.decode_status ? 1 : 0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app;
  Options options;
  try {
    parse_options(app, options, argc, argv);
    run(options);
    return 0;
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "nvdec_ceiling: %s\n", error.what());
    return 1;
  }
}
