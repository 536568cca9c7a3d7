// fovea image-bench IN... [--recursive] [--backend cpu|nvjpeg|nvdec|all] [--threads N] [--batch N]
//                         [--sessions N] [--encode png|jpeg] [--seconds S] [--json FILE]
//
// The decode ceiling of each image backend over the listed images (io/image_files.h): images/s and
// MB/s of compressed input. Every file is read into memory first, so the disk is not measured.
// Each file is decoded once untimed; the ones that fail are counted, named and left out, then the
// rest are decoded round and round for at least --seconds.
//   cpu:    every image (JPEG, PNG, BMP, WebP) through io::decode_image on --threads threads.
//   nvjpeg: the JPEG files through io::NvjpegDecoder in batches of --batch on one stream; each file
//           takes its route (hardware engines, GPU hybrid, or libjpeg-turbo and an upload), and
//           the table says how many took which.
//   nvdec:  the JPEG files through NVDEC's JPEG decoder (nvcuvid's parser and decoder: io/decoder.h's
//           nvdec backend, as for MJPEG video), --sessions decoders at once, each on a thread of its
//           own that sends every file as a one-picture packet; pictures come out NV12 (4:2:0) or
//           the file's chroma format in device memory, not converted to RGB. The first file's
//           geometry opens each decoder; a file of another size or sampling makes it a new one, as
//           a resolution change in a video does, so a folder of mixed sizes measures that too.
// --encode: the encode ceiling of the CPU-decoded images (PNG level 6 or JPEG quality 90) on
// --threads threads.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iterator>
#include <thread>

#include "commands.h"
#include "core/gpu.h"
#include "core/log.h"
#include "core/output_file.h"
#include "io/decoder.h"
#include "io/image_codec.h"
#include "io/image_files.h"
#include "io/nvjpeg_decoder.h"
#include "trace/session.h"
#include "trace/tracer.h"
#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_raii.h"
#endif

namespace fovea::app {
namespace {

using Clock = std::chrono::steady_clock;

// Files named in the output when some fail; the count covers them all.
constexpr std::size_t kFailuresNamed = 5;

struct ImageBenchArgs {
  std::vector<std::string> inputs;
  bool recursive = false;
  std::string backend = "all";
  int threads = 0;
  int batch = 32;
  // NVDEC's JPEG rate on 1080p photos peaked at 16 sessions on the H200 (1,156 images/s; 659 at 8,
  // 826-899 at 32-64: docs/perf.md, "The photo flow's last levers").
  int sessions = 16;
  std::string encode;
  double seconds = 5.0;
  std::string json_path;
  std::string trace_dir;  // --trace: the GPU backends' timed runs, for `fovea report`
};

struct LoadedFile {
  std::string name;
  std::vector<std::uint8_t> bytes;
};

struct Failure {
  std::string stage;
  std::string file;
  std::string error;
};

// One timed run: `images` done in `seconds` from a set of `set_size` files.
struct Ceiling {
  std::string name;
  std::size_t set_size = 0;
  std::int64_t images = 0;
  std::int64_t bytes = 0;
  double seconds = 0.0;
  std::string detail;
  double images_per_second() const { return seconds > 0 ? static_cast<double>(images) / seconds : 0.0; }
  double mb_per_second() const { return seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0.0; }
};

bool out_of_time(Clock::time_point deadline) {
  return Clock::now() >= deadline || interrupt_flag().load();
}

// Runs work(i) for i = 0, 1, 2, ... (the caller wraps i around its set) on `threads` threads until
// the deadline; work returns the bytes it handled. Images and bytes done, and the seconds taken.
Ceiling run_threads(int threads, double seconds, const std::function<std::int64_t(std::size_t)>& work) {
  std::atomic<std::size_t> next{0};
  std::atomic<std::int64_t> bytes{0};
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      while (!out_of_time(deadline)) bytes += work(next++);
    });
  }
  for (std::thread& thread : pool) thread.join();
  Ceiling ceiling;
  ceiling.images = static_cast<std::int64_t>(next.load());
  ceiling.bytes = bytes.load();
  ceiling.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return ceiling;
}

std::span<const std::uint8_t> span_of(const LoadedFile& file) {
  return file.bytes;
}

// What --encode keeps of the decoded pictures at most: a sample, so that memory does not grow with
// the folder (a few hundred 1080p pictures, or one 16k x 16k).
constexpr std::size_t kEncodeSampleBytes = std::size_t{1} << 30;

// The CPU ceiling over every image; the decoded images are kept when `keep` (for --encode), up to
// kEncodeSampleBytes of them.
Ceiling cpu_ceiling(const ImageBenchArgs& args, const std::vector<LoadedFile>& files,
                    std::vector<Failure>* failures, std::vector<io::HostImage>* keep) {
  std::vector<const LoadedFile*> good;
  std::size_t kept_bytes = 0;
  for (const LoadedFile& file : files) {
    Result<io::DecodedImage> decoded = io::decode_image(span_of(file), file.name);
    if (!decoded.is_ok()) {
      failures->push_back({"cpu", file.name, decoded.status().to_string()});
      continue;
    }
    good.push_back(&file);
    const std::size_t bytes = decoded->image.size_bytes();
    if (keep != nullptr && (keep->empty() || kept_bytes + bytes <= kEncodeSampleBytes)) {
      kept_bytes += bytes;
      keep->push_back(std::move(decoded->image));
    }
  }
  Ceiling ceiling;
  if (!good.empty()) {
    ceiling = run_threads(args.threads, args.seconds, [&good](std::size_t i) -> std::int64_t {
      const LoadedFile& file = *good[i % good.size()];
      return io::decode_image(span_of(file), file.name).is_ok() ? static_cast<std::int64_t>(file.bytes.size())
                                                                : 0;
    });
  }
  ceiling.name = "cpu";
  ceiling.set_size = good.size();
  ceiling.detail = fmt::format("{} threads, libjpeg-turbo/libpng/libwebp", args.threads);
  return ceiling;
}

Ceiling encode_ceiling(const ImageBenchArgs& args, const std::vector<io::HostImage>& images) {
  io::ImageEncodeOptions options;
  options.format = args.encode == "jpeg" ? io::ImageFileFormat::kJpeg : io::ImageFileFormat::kPng;
  Ceiling ceiling;
  if (!images.empty()) {
    ceiling = run_threads(args.threads, args.seconds, [&](std::size_t i) -> std::int64_t {
      const Result<std::string> encoded = io::encode_image(images[i % images.size()].view(), options);
      return encoded.is_ok() ? static_cast<std::int64_t>(encoded->size()) : 0;
    });
  }
  ceiling.name = "encode-" + args.encode;
  ceiling.set_size = images.size();
  ceiling.detail = fmt::format("{} threads, {}; MB/s of output", args.threads,
                               args.encode == "jpeg" ? "quality 90" : "level 6");
  return ceiling;
}

#if defined(FOVEA_HAVE_CUDA)

// Device outputs for one batch: `count` slots, each as large as the largest image.
struct BatchOutputs {
  std::vector<DeviceMemory> slots;
  std::size_t slot_bytes = 0;
};

Result<Ceiling> nvjpeg_ceiling(const ImageBenchArgs& args, const std::vector<LoadedFile>& files,
                               std::vector<Failure>* failures) {
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<io::NvjpegDecoder> decoder,
                         io::NvjpegDecoder::create(io::NvjpegBackend::kAuto));
  FOVEA_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create());
  struct Job {
    const LoadedFile* file;
    io::JpegInfo info;  // probed before the timing, as a flow probes when it reads the file
    ImageView view;
  };
  std::vector<Job> jobs;
  std::size_t largest = 0;
  for (const LoadedFile& file : files) {
    if (io::sniff_image_format(span_of(file)) != io::ImageFileFormat::kJpeg) continue;
    Result<io::JpegInfo> info = decoder->probe(span_of(file), file.name);
    if (!info.is_ok()) {
      failures->push_back({"nvjpeg", file.name, info.status().to_string()});
      continue;
    }
    ImageView view;
    view.format = PixelFormat::kRGB8;
    view.width = info->width;
    view.height = info->height;
    view.memory = MemoryKind::kDevice;
    view.num_planes = 1;
    view.planes[0].pitch = static_cast<std::size_t>(info->width) * 3;
    largest = std::max(largest, view.planes[0].pitch * static_cast<std::size_t>(info->height));
    jobs.push_back({&file, std::move(info).value(), view});
  }
  const std::size_t batch =
      std::min<std::size_t>(static_cast<std::size_t>(args.batch), std::max<std::size_t>(jobs.size(), 1));
  BatchOutputs outputs;
  for (std::size_t s = 0; s < batch && !jobs.empty(); ++s) {
    FOVEA_ASSIGN_OR_RETURN(DeviceMemory slot, DeviceMemory::allocate(largest));
    outputs.slots.push_back(std::move(slot));
  }
  // Decodes jobs[first + k] for k < count (wrapping around) into the slots; the bytes decoded.
  const auto decode = [&](std::size_t first, std::size_t count) -> Result<std::int64_t> {
    std::vector<std::span<const std::uint8_t>> jpegs;
    std::vector<std::string_view> names;
    std::vector<ImageView> views;
    std::vector<io::JpegInfo> infos;
    std::int64_t bytes = 0;
    for (std::size_t k = 0; k < count; ++k) {
      Job& job = jobs[(first + k) % jobs.size()];
      job.view.planes[0].data = outputs.slots[k].get();
      jpegs.push_back(span_of(*job.file));
      names.push_back(job.file->name);
      views.push_back(job.view);
      infos.push_back(job.info);
      bytes += static_cast<std::int64_t>(job.file->bytes.size());
    }
    FOVEA_TRY(decoder->decode_batch(stream.get(), jpegs, names, views, infos));
    return bytes;
  };
  // Untimed: each file alone, so a failure names its file and the file leaves the set.
  std::vector<Job> good;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Result<std::int64_t> decoded = decode(i, 1);
    const Status status = decoded.is_ok() ? stream.synchronize() : decoded.status();
    if (!status.is_ok()) {
      failures->push_back({"nvjpeg", jobs[i].file->name, status.to_string()});
    } else {
      good.push_back(jobs[i]);
    }
  }
  jobs = std::move(good);
  Ceiling ceiling;
  ceiling.name = "nvjpeg";
  ceiling.set_size = jobs.size();
  const io::NvjpegStats before = decoder->stats();
  if (!jobs.empty()) {
    const std::size_t per_call = std::min(batch, jobs.size());
    const auto start = Clock::now();
    const auto deadline =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(args.seconds));
    std::size_t next = 0;
    while (!out_of_time(deadline)) {
      FOVEA_TRACE_RANGE("jpeg decode");  // the flow's name for its nvJPEG calls, so traces compare
      FOVEA_ASSIGN_OR_RETURN(const std::int64_t bytes, decode(next, per_call));
      ceiling.images += static_cast<std::int64_t>(per_call);
      ceiling.bytes += bytes;
      next = (next + per_call) % jobs.size();
    }
    FOVEA_TRY(stream.synchronize());
    ceiling.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  const io::NvjpegStats after = decoder->stats();
  ceiling.detail = fmt::format(
      "{} backend{}, batch {}; routes: hardware {}, gpu {}, cpu {}",
      io::nvjpeg_backend_name(decoder->backend()),
      decoder->hardware_engines() > 0 ? fmt::format(" ({} engines)", decoder->hardware_engines()) : "",
      std::min(batch, std::max<std::size_t>(jobs.size(), 1)), after.hardware_images - before.hardware_images,
      after.gpu_images - before.gpu_images, after.cpu_images - before.cpu_images);
  return ceiling;
}

// NVDEC's chroma format code for a JPEG sampling (io::StreamInfo::chroma_format); -1 where it has none.
int nvdec_chroma_format(io::JpegSampling sampling) {
  switch (sampling) {
    case io::JpegSampling::kGray: return 0;
    case io::JpegSampling::k420: return 1;
    case io::JpegSampling::k422: return 2;
    case io::JpegSampling::k444: return 3;
    default: return -1;
  }
}

// The JPEG files NVDEC is given, each as a one-picture packet; the stream the first one opens.
struct NvdecJobs {
  io::StreamInfo stream;
  std::vector<io::Packet> packets;
  std::vector<const LoadedFile*> files;
};

NvdecJobs nvdec_jobs(const std::vector<LoadedFile>& files, std::vector<Failure>* failures) {
  NvdecJobs jobs;
  for (const LoadedFile& file : files) {
    if (io::sniff_image_format(span_of(file)) != io::ImageFileFormat::kJpeg) continue;
    Result<io::JpegInfo> info = io::read_jpeg_info(span_of(file), file.name);
    if (info.is_ok() && info->ends_without_eoi) {
      // NVDEC would decode a file cut inside its data without a word: libjpeg's route tells.
      info = make_error(StatusCode::kCorruptData, file.name,
                        ": the data ends without an EOI marker (truncated?); NVDEC is not given it");
    } else if (info.is_ok() && nvdec_chroma_format(info->sampling) < 0) {
      info = make_error(StatusCode::kUnsupported, file.name, ": ", io::jpeg_sampling_name(info->sampling),
                        " sampling has no NVDEC chroma format");
    }
    if (!info.is_ok()) {
      failures->push_back({"nvdec", file.name, info.status().to_string()});
      continue;
    }
    if (jobs.packets.empty()) {
      jobs.stream.url = file.name;
      jobs.stream.codec = io::VideoCodec::kMjpeg;
      jobs.stream.codec_name = "mjpeg";
      jobs.stream.width = info->width;
      jobs.stream.height = info->height;
      jobs.stream.bit_depth = info->precision;
      jobs.stream.chroma_format = nvdec_chroma_format(info->sampling);
    }
    io::Packet packet;
    packet.data = file.bytes;
    packet.pts = static_cast<std::int64_t>(jobs.packets.size());
    packet.has_pts = true;
    packet.keyframe = true;
    jobs.packets.push_back(std::move(packet));
    jobs.files.push_back(&file);
  }
  return jobs;
}

// One NVDEC session of the bench: its decoder and the stream its pictures are copied out on.
struct NvdecSession {
  CudaStream stream;
  std::unique_ptr<io::Decoder> decoder;
};

Result<NvdecSession> open_nvdec_session(const io::StreamInfo& stream) {
  NvdecSession session;
  FOVEA_ASSIGN_OR_RETURN(session.stream, CudaStream::create());
  io::DecoderOptions options;
  options.backend = io::DecoderBackend::kNvdec;
  options.stream = session.stream.get();
  FOVEA_ASSIGN_OR_RETURN(session.decoder, io::open_nvdec_decoder(stream, options));
  return session;
}

// One file through the session, untimed: the picture, or why there is none.
Status decode_alone(NvdecSession& session, const io::Packet& packet, const std::string& name) {
  int pictures = 0;
  bool damaged = false;
  const auto on_frame = [&](Frame&& frame) {
    ++pictures;
    damaged = damaged || frame.damaged;
  };
  Status status = io::send_and_receive(*session.decoder, packet, on_frame);
  if (status.is_ok()) status = io::finish_and_receive(*session.decoder, on_frame);
  if (status.is_ok()) status = session.stream.synchronize();
  if (status.is_ok() && (pictures != 1 || damaged)) {
    status = make_error(StatusCode::kCorruptData, name, ": NVDEC gave ", std::to_string(pictures),
                        damaged ? " damaged picture(s)" : " pictures, not one");
  }
  const Status restarted = session.decoder->restart();
  return status.is_ok() ? restarted : status;
}

// Untimed: each file alone, so a file NVDEC refuses or conceals is named and leaves the set.
Status keep_decodable(NvdecSession& session, NvdecJobs& jobs, std::vector<Failure>* failures) {
  NvdecJobs good{jobs.stream, {}, {}};
  for (std::size_t i = 0; i < jobs.packets.size(); ++i) {
    const Status status = decode_alone(session, jobs.packets[i], jobs.files[i]->name);
    if (status.is_ok()) {
      good.packets.push_back(std::move(jobs.packets[i]));
      good.files.push_back(jobs.files[i]);
    } else if (status.code() == StatusCode::kCorruptData || status.code() == StatusCode::kUnsupported) {
      failures->push_back({"nvdec", jobs.files[i]->name, status.to_string()});
    } else {
      return status;  // the decoder or the device, not the file
    }
  }
  jobs = std::move(good);
  return Status::ok();
}

Result<Ceiling> nvdec_ceiling(const ImageBenchArgs& args, const std::vector<LoadedFile>& files,
                              std::vector<Failure>* failures) {
  if (!gpu_available()) return make_error(StatusCode::kUnsupported, "NVDEC unavailable: no CUDA device");
  NvdecJobs jobs = nvdec_jobs(files, failures);
  Ceiling ceiling;
  ceiling.name = "nvdec";
  ceiling.detail = fmt::format("{} sessions, one picture per packet, NV12 in device memory", args.sessions);
  if (jobs.packets.empty()) return ceiling;
  std::vector<NvdecSession> sessions;
  for (int s = 0; s < args.sessions; ++s) {
    FOVEA_ASSIGN_OR_RETURN(NvdecSession session, open_nvdec_session(jobs.stream));
    sessions.push_back(std::move(session));
  }
  FOVEA_TRY(keep_decodable(sessions.front(), jobs, failures));
  ceiling.set_size = jobs.packets.size();
  if (jobs.packets.empty()) return ceiling;
  // The hardware decoder is made at a session's first picture: not while the others are timed.
  for (NvdecSession& session : sessions)
    FOVEA_TRY(decode_alone(session, jobs.packets.front(), jobs.files.front()->name));
  std::atomic<std::int64_t> pictures{0};
  std::atomic<std::int64_t> bytes{0};
  std::vector<Status> results(sessions.size());
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(args.seconds));
  std::vector<std::thread> threads;
  for (std::size_t s = 0; s < sessions.size(); ++s) {
    threads.emplace_back([&, s] {
      NvdecSession& session = sessions[s];
      const auto on_frame = [&](Frame&&) { ++pictures; };
      Status status;
      // Each session starts at its own place in the set, so the sessions do not decode in step.
      for (std::size_t i = s * jobs.packets.size() / sessions.size();
           status.is_ok() && !out_of_time(deadline); ++i) {
        const io::Packet& packet = jobs.packets[i % jobs.packets.size()];
        status = io::send_and_receive(*session.decoder, packet, on_frame);
        bytes += static_cast<std::int64_t>(packet.data.size());
      }
      if (status.is_ok()) status = io::finish_and_receive(*session.decoder, on_frame);
      if (status.is_ok()) status = session.stream.synchronize();
      results[s] = status;
    });
  }
  for (std::thread& thread : threads) thread.join();
  ceiling.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const Status& status : results) FOVEA_TRY(status);
  ceiling.images = pictures.load();
  ceiling.bytes = bytes.load();
  return ceiling;
}

#else

Result<Ceiling> nvjpeg_ceiling(const ImageBenchArgs&, const std::vector<LoadedFile>&, std::vector<Failure>*) {
  return io::NvjpegDecoder::create(io::NvjpegBackend::kAuto).status();
}

Result<Ceiling> nvdec_ceiling(const ImageBenchArgs&, const std::vector<LoadedFile>&, std::vector<Failure>*) {
  return make_error(StatusCode::kUnsupported, "NVDEC unavailable: this build of fovea has no CUDA");
}

#endif

void print_table(const std::vector<Ceiling>& ceilings, const std::vector<Failure>& failures) {
  std::printf("\nFiles were read into memory before timing: the disk is not measured.\n");
  std::printf("%-12s %8s %10s %9s %10s %9s  %s\n", "backend", "files", "images", "seconds", "images/s",
              "MB/s", "how");
  for (const Ceiling& c : ceilings) {
    std::printf("%-12s %8zu %10lld %9.3f %10.1f %9.1f  %s\n", c.name.c_str(), c.set_size,
                static_cast<long long>(c.images), c.seconds, c.images_per_second(), c.mb_per_second(),
                c.detail.c_str());
  }
  if (failures.empty()) return;
  std::printf("failed: %zu\n", failures.size());
  for (std::size_t i = 0; i < std::min(failures.size(), kFailuresNamed); ++i) {
    std::printf("  %s: %s\n", failures[i].stage.c_str(), failures[i].error.c_str());
  }
  if (failures.size() > kFailuresNamed) std::printf("  ... and %zu more\n", failures.size() - kFailuresNamed);
}

Status write_json(const ImageBenchArgs& args, std::size_t files, const std::vector<Ceiling>& ceilings,
                  const std::vector<Failure>& failures) {
  nlohmann::json rows = nlohmann::json::array();
  for (const Ceiling& c : ceilings) {
    rows.push_back({{"backend", c.name},
                    {"files", c.set_size},
                    {"images", c.images},
                    {"bytes", c.bytes},
                    {"seconds", c.seconds},
                    {"images_per_second", c.images_per_second()},
                    {"mb_per_second", c.mb_per_second()},
                    {"detail", c.detail}});
  }
  nlohmann::json failed = nlohmann::json::array();
  for (const Failure& f : failures)
    failed.push_back({{"stage", f.stage}, {"file", f.file}, {"error", f.error}});
  const nlohmann::json report = {{"files", files},
                                 {"threads", args.threads},
                                 {"batch", args.batch},
                                 {"seconds_per_backend", args.seconds},
                                 {"note", "files read into memory before timing; the disk is not measured"},
                                 {"backends", rows},
                                 {"failures", failed}};
  return write_file_atomically(args.json_path, report.dump(2) + "\n", "--json");
}

int fail(const Status& status) {
  log_error("image-bench: {}", status.to_string());
  return kExitFailure;
}

int run_image_bench(ImageBenchArgs args) {
  if (args.threads == 0) args.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (args.backend == "nvjpeg" && !io::NvjpegDecoder::available()) {
    return fail(io::NvjpegDecoder::create(io::NvjpegBackend::kAuto).status());
  }
  Result<io::ImageList> list = io::list_images(args.inputs, {.recursive = args.recursive});
  // An input that is not there, or a folder without images, is a mistake in what was asked.
  if (!list.is_ok())
    return list.status().code() == StatusCode::kNotFound ? (fail(list.status()), kExitUsage)
                                                         : fail(list.status());
  std::vector<std::string> input_paths = args.inputs;
  for (const io::ListedImage& image : list->images) input_paths.push_back(image.path.string());
  std::vector<PlannedOutput> outputs;
  if (!args.json_path.empty()) outputs.push_back({.what = "--json", .path = args.json_path});
  if (!args.trace_dir.empty())
    outputs.push_back({.what = "--trace", .path = args.trace_dir, .is_folder = true});
  if (Status status = check_outputs(outputs, input_paths); !status.is_ok()) {
    fail(status);
    return kExitUsage;
  }
  std::vector<Failure> failures;
  std::vector<LoadedFile> files;
  for (const io::ListedImage& image : list->images) {
    // The image flow's limits (io::ImageLimits): a file over 1 GiB is refused, not read.
    Result<std::vector<std::uint8_t>> bytes = io::read_image_bytes(image.path);
    if (!bytes.is_ok()) {
      failures.push_back({"read", image.path.string(), bytes.status().to_string()});
      continue;
    }
    files.push_back({image.path.string(), std::move(bytes).value()});
  }
  std::vector<Ceiling> ceilings;
  std::vector<io::HostImage> decoded;
  if (args.backend == "cpu" || args.backend == "all") {
    ceilings.push_back(cpu_ceiling(args, files, &failures, args.encode.empty() ? nullptr : &decoded));
  }
  // The GPU backends traced (the CPU threads have no GPU work to show); written when it goes.
  Result<std::optional<trace::Session>> trace_session =
      trace::start_session_if_requested({.dir = args.trace_dir});
  if (!trace_session.is_ok()) return fail(trace_session.status());
  using GpuCeiling =
      Result<Ceiling> (*)(const ImageBenchArgs&, const std::vector<LoadedFile>&, std::vector<Failure>*);
  for (const auto& [name, measure] : {std::pair<std::string, GpuCeiling>{"nvjpeg", nvjpeg_ceiling},
                                      std::pair<std::string, GpuCeiling>{"nvdec", nvdec_ceiling}}) {
    if ((args.backend != name && args.backend != "all") || interrupt_flag().load()) continue;
    Result<Ceiling> gpu = measure(args, files, &failures);
    if (gpu.is_ok()) {
      ceilings.push_back(std::move(gpu).value());
    } else if (args.backend == name) {
      return fail(gpu.status());  // the backend asked for by name
    } else {
      std::printf("%s: skipped: %s\n", name.c_str(), gpu.status().message().c_str());
    }
  }
  if (!args.encode.empty() && !interrupt_flag().load()) ceilings.push_back(encode_ceiling(args, decoded));
  print_table(ceilings, failures);
  if (!args.json_path.empty()) {
    if (Status written = write_json(args, list->images.size(), ceilings, failures); !written.is_ok()) {
      return fail(written);
    }
  }
  if (interrupt_flag().load()) return kExitInterrupted;
  const bool decoded_any =
      std::any_of(ceilings.begin(), ceilings.end(), [](const Ceiling& c) { return c.set_size > 0; });
  if (!decoded_any) return kExitFailure;
  return failures.empty() ? kExitOk : kExitPartial;
}

}  // namespace

void add_image_bench_command(CLI::App& app, Action* action) {
  auto args = std::make_shared<ImageBenchArgs>();
  CLI::App* command = app.add_subcommand(
      "image-bench", "Measure the image decode (and encode) ceiling of each backend, in images/s and MB/s");
  command->add_option("inputs", args->inputs, "Image files, folders, globs or list files")->required();
  command->add_flag("--recursive", args->recursive, "Also list the images in subfolders");
  command
      ->add_option(
          "--backend", args->backend,
          "cpu, nvjpeg (fails without libnvjpeg), nvdec (NVDEC's JPEG decoder; fails without a GPU), "
          "or all (the GPU ones where they load)")
      ->check(CLI::IsMember({"cpu", "nvjpeg", "nvdec", "all"}))
      ->capture_default_str();
  command->add_option("--threads", args->threads, "CPU decode/encode threads (0 = one per core)")
      ->check(whole_number_in(0, 1024))
      ->capture_default_str();
  command->add_option("--batch", args->batch, "nvjpeg: images per decode call")
      ->check(whole_number_in(1, 1024))
      ->capture_default_str();
  command->add_option("--sessions", args->sessions, "nvdec: decoders running at once, a thread each")
      ->check(whole_number_in(1, 256))
      ->capture_default_str();
  command->add_option("--encode", args->encode, "Also measure encoding the decoded images: png or jpeg")
      ->check(CLI::IsMember({"png", "jpeg"}));
  command->add_option("--seconds", args->seconds, "Seconds each backend decodes for (at least)")
      ->check(number_in(0.01, 3600))
      ->capture_default_str();
  command->add_option("--json", args->json_path, "Also write the results as JSON to this file");
  command->add_option("--trace", args->trace_dir,
                      "Trace the GPU backends' timed runs into this folder (trace.json, report.json; "
                      "fovea report), each nvJPEG call a 'jpeg decode' range as in the image flow");
  command->callback([args, action] { *action = [args] { return run_image_bench(*args); }; });
}

}  // namespace fovea::app
