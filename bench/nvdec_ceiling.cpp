// The raw NVDEC ceiling on a clip: how fast nvcuvid alone decodes it on this GPU, without fovea's
// decoder, so that `fovea decode-bench --decoder nvdec` can be compared with a ceiling measured in
// the same run on the same file.
//
//   nvdec_ceiling FILE [--sessions N] [--repeat R] [--mode replay|parse|parse-map] [--contexts shared|own]
//
// Modes, from the hardware's own rate to what an application sees:
//   replay     The clip is parsed once before timing and every picture's parameters and slice data
//              are kept; each session then submits them back to back with cuvidDecodePicture and
//              nothing else. This is the decoder engines' rate with no parsing, mapping or copying.
//   parse      Each session runs nvcuvid's parser over the clip, as the Video Codec SDK's samples
//              do, submitting each picture from the parser's decode callback; nothing is mapped.
//   parse-map  As parse, and each displayed picture is mapped, copied into device memory and
//              unmapped inside the display callback (the SDK sample NvDecoder's way).
// Sessions run on their own threads in this process, all started together; --contexts own gives
// each session a CUDA context of its own instead of the device's primary context.
#include <ffnvcodec/dynlink_loader.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

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

enum class Mode { kReplay, kParse, kParseMap };

struct Options {
  std::string file;
  int sessions = 1;
  int repeat = 1;
  Mode mode = Mode::kReplay;
  bool own_contexts = false;
};

// One picture as the parser handed it to the decode callback, with the slice data and offsets the
// parameters point to copied out of the parser's buffers (they are only valid during the callback).
struct RecordedPicture {
  CUVIDPICPARAMS params{};
  std::vector<unsigned char> bitstream;
  std::vector<unsigned int> slice_offsets;
};

struct Clip {
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

// Runs nvcuvid's parser over the clip; the callbacks are the caller's.
void parse_clip(const Clip& clip, CUVIDPARSERPARAMS params) {
  CUvideoparser parser = nullptr;
  params.CodecType = clip.codec;
  params.ulMaxNumDecodeSurfaces = 1;  // raised by the sequence callback's answer
  params.ulMaxDisplayDelay = 1;       // the SDK sample's default
  check(g_cuvid->cuvidCreateVideoParser(&parser, &params), "cuvidCreateVideoParser");
  auto feed = [&](const std::uint8_t* data, std::size_t size, unsigned long flags) {
    CUVIDSOURCEDATAPACKET packet{};
    packet.payload = data;
    packet.payload_size = static_cast<unsigned long>(size);
    packet.flags = flags;
    check(g_cuvid->cuvidParseVideoData(parser, &packet), "cuvidParseVideoData");
  };
  if (!clip.extradata.empty()) {
    feed(clip.extradata.data(), clip.extradata.size(), 0);
  }
  for (const auto& packet : clip.packets) {
    feed(packet.data.data(), packet.data.size(), 0);
  }
  feed(nullptr, 0, CUVID_PKT_ENDOFSTREAM);
  g_cuvid->cuvidDestroyVideoParser(parser);
}

void record_pictures(Clip& clip) {
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
  parse_clip(clip, params);
  for (auto& picture : clip.pictures) {
    picture.params.pBitstreamData = picture.bitstream.data();
    picture.params.pSliceDataOffsets = picture.slice_offsets.data();
  }
}

CUvideodecoder create_decoder(const CUVIDEOFORMAT& format, CUvideoctxlock lock) {
  CUVIDDECODECREATEINFO info{};
  info.ulWidth = format.coded_width;
  info.ulHeight = format.coded_height;
  info.ulNumDecodeSurfaces = std::max<unsigned long>(format.min_num_decode_surfaces, 1);
  info.CodecType = format.codec;
  info.ChromaFormat = format.chroma_format;
  info.ulCreationFlags = cudaVideoCreate_PreferCUVID;
  info.bitDepthMinus8 = format.bit_depth_luma_minus8;
  info.OutputFormat =
      format.bit_depth_luma_minus8 > 0 ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12;
  info.DeinterlaceMode = cudaVideoDeinterlaceMode_Weave;
  info.ulTargetWidth = format.coded_width;
  info.ulTargetHeight = format.coded_height;
  info.ulNumOutputSurfaces = 2;
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
    check(g_cuvid->cuvidCtxLockCreate(&lock_, context_), "cuvidCtxLockCreate");
    decoder_ = create_decoder(clip_.format, lock_);
    if (options_.mode == Mode::kParseMap) {
      const std::size_t bytes = std::size_t{clip_.format.coded_width} * clip_.format.coded_height * 3 / 2;
      check(g_cu->cuMemAlloc(&d_frame_, bytes), "cuMemAlloc");
      check(g_cu->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    }
  }

  void run() {
    for (int pass = 0; pass < options_.repeat; ++pass) {
      if (options_.mode == Mode::kReplay) {
        replay();
      } else {
        parse();
      }
    }
  }

  void release() {
    if (d_frame_ != 0) {
      g_cu->cuMemFree(d_frame_);
      g_cu->cuStreamDestroy(stream_);
    }
    g_cuvid->cuvidDestroyDecoder(decoder_);
    g_cuvid->cuvidCtxLockDestroy(lock_);
  }

  std::int64_t frames() const { return frames_; }

 private:
  void replay() {
    for (const auto& picture : clip_.pictures) {
      CUVIDPICPARAMS params = picture.params;
      check(g_cuvid->cuvidDecodePicture(decoder_, &params), "cuvidDecodePicture");
      ++frames_;
    }
    wait_for_picture(decoder_, clip_.pictures.back().params.CurrPicIdx);
  }

  void parse() {
    CUVIDPARSERPARAMS params{};
    params.pUserData = this;
    params.pfnSequenceCallback = [](void*, CUVIDEOFORMAT* format) -> int {
      return std::max<int>(format->min_num_decode_surfaces, 1);
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
    parse_clip(clip_, params);
  }

  void copy_out(const CUVIDPARSERDISPINFO& display) {
    CUVIDPROCPARAMS params{};
    params.progressive_frame = display.progressive_frame;
    params.output_stream = stream_;
    CUdeviceptr surface = 0;
    unsigned int pitch = 0;
    check(g_cuvid->cuvidMapVideoFrame(decoder_, display.picture_index, &surface, &pitch, &params),
          "cuvidMapVideoFrame");
    CUDA_MEMCPY2D copy{};
    copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.srcDevice = surface;
    copy.srcPitch = pitch;
    copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = d_frame_;
    copy.dstPitch = clip_.format.coded_width;
    copy.WidthInBytes = clip_.format.coded_width;
    copy.Height = std::size_t{clip_.format.coded_height} * 3 / 2;  // luma and chroma are contiguous
    check(g_cu->cuMemcpy2DAsync(&copy, stream_), "cuMemcpy2DAsync");
    check(g_cu->cuStreamSynchronize(stream_), "cuStreamSynchronize");
    check(g_cuvid->cuvidUnmapVideoFrame(decoder_, surface), "cuvidUnmapVideoFrame");
  }

  const Clip& clip_;
  const Options& options_;
  CUcontext context_ = nullptr;
  CUvideoctxlock lock_ = nullptr;
  CUvideodecoder decoder_ = nullptr;
  CUdeviceptr d_frame_ = 0;
  CUstream stream_ = nullptr;
  std::int64_t frames_ = 0;
};

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        throw std::runtime_error(std::string(arg) + " needs a value");
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::puts(
          "usage: nvdec_ceiling FILE [--sessions N] [--repeat R] [--mode replay|parse|parse-map] "
          "[--contexts shared|own]\n(see the comment at the top of bench/nvdec_ceiling.cpp)");
      std::exit(0);
    } else if (arg == "--sessions") {
      options.sessions = std::stoi(value());
    } else if (arg == "--repeat") {
      options.repeat = std::stoi(value());
    } else if (arg == "--mode") {
      const std::string mode = value();
      if (mode == "replay") {
        options.mode = Mode::kReplay;
      } else if (mode == "parse") {
        options.mode = Mode::kParse;
      } else if (mode == "parse-map") {
        options.mode = Mode::kParseMap;
      } else {
        throw std::runtime_error("--mode is replay, parse or parse-map, not " + mode);
      }
    } else if (arg == "--contexts") {
      const std::string contexts = value();
      if (contexts != "shared" && contexts != "own") {
        throw std::runtime_error("--contexts is shared or own, not " + contexts);
      }
      options.own_contexts = contexts == "own";
    } else if (options.file.empty() && !arg.starts_with("--")) {
      options.file = arg;
    } else {
      throw std::runtime_error("unknown argument " + std::string(arg));
    }
  }
  if (options.file.empty() || options.sessions < 1 || options.repeat < 1) {
    throw std::runtime_error("give a FILE, --sessions >= 1 and --repeat >= 1 (--help)");
  }
  return options;
}

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kReplay: return "replay";
    case Mode::kParse: return "parse";
    case Mode::kParseMap: return "parse-map";
  }
  return "?";
}

void run(const Options& options) {
  if (cuda_load_functions(&g_cu, nullptr) != 0 || cuvid_load_functions(&g_cuvid, nullptr) != 0) {
    throw std::runtime_error("cannot load libcuda / libnvcuvid");
  }
  check(g_cu->cuInit(0), "cuInit");
  CUdevice device = 0;
  check(g_cu->cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext primary = nullptr;
  check(g_cu->cuDevicePrimaryCtxRetain(&primary, device), "cuDevicePrimaryCtxRetain");
  check(g_cu->cuCtxPushCurrent(primary), "cuCtxPushCurrent");

  Clip clip = read_clip(options.file);
  record_pictures(clip);
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
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    threads.emplace_back([&, i] {
      check(g_cu->cuCtxPushCurrent(contexts[i]), "cuCtxPushCurrent");
      sessions[i]->prepare();
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
      "\"aggregate_fps\": %.1f, \"per_session_fps\": %.1f}\n",
      mode_name(options.mode), options.own_contexts ? "own" : "shared", options.sessions,
      static_cast<long long>(frames), wall, static_cast<double>(frames) / wall,
      static_cast<double>(frames) / wall / options.sessions);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    run(parse_options(argc, argv));
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "nvdec_ceiling: %s\n", error.what());
    return 1;
  }
}
