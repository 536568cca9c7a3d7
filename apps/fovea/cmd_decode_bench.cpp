// fovea decode-bench FILE... --decoder cpu|nvdec --sessions N [--repeat R]
//
// Decode throughput, per session and aggregate (all frames over the time from the common start to
// the last session's last frame). Each file is demuxed once into memory before timing, so the
// figure is the decoder's (demuxing an mp4 costs well under 1% of decoding).
// Sessions take the files round robin and run on their own threads, all started together.
// With nvdec, frames land in pooled device memory and are never copied to the host.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <thread>

#include "commands.h"
#include "core/gpu.h"
#include "core/log.h"
#include "core/output_file.h"
#include "io/decoder.h"
#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_raii.h"
#endif

namespace fovea::app {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
  std::vector<std::string> inputs;
  std::string decoder = "nvdec";
  int sessions = 1;
  int repeat = 1;
  int threads = 0;
  int display_delay = io::DecoderOptions{}.display_delay;
  int decode_surfaces = 0;
  std::string json_path;
};

struct DemuxedFile {
  io::StreamInfo info;
  std::vector<io::Packet> packets;
};

struct SessionResult {
  std::string input;
  std::string backend;
  std::string fallback_reason;
  std::int64_t frames = 0;
  std::int64_t expected_frames = 0;
  io::DecoderStats stats;
  double seconds = 0.0;
  Status status;
};

Result<DemuxedFile> demux_whole_file(const std::string& input) {
  io::DemuxOptions options;
  options.cancel = &interrupt_flag();
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<io::Demuxer> demuxer, io::Demuxer::open(input, options));
  DemuxedFile file;
  file.info = demuxer->info();
  while (true) {
    io::Packet packet;
    FOVEA_ASSIGN_OR_RETURN(bool got, demuxer->read(packet));
    if (!got) {
      break;
    }
    file.packets.push_back(std::move(packet));
  }
  if (file.packets.empty()) {
    return make_error(StatusCode::kCorruptData, input, ": no video packets");
  }
  return file;
}

// Each frame is dropped as soon as it arrives, so its pool block returns at once.
auto frame_counter(std::int64_t& frames) {
  return [&frames](Frame&&) { ++frames; };
}

// Decodes the file `repeat` times, except its first `already_sent` packets the first time.
Status decode_all(io::Decoder& decoder, const DemuxedFile& file, int repeat, std::size_t already_sent,
                  std::int64_t& frames) {
  const auto count = frame_counter(frames);
  for (int r = 0; r < repeat && !interrupt_flag().load(); ++r) {
    // Each repetition restarts at the first packet, a keyframe, so no flush is needed between them.
    for (std::size_t i = r == 0 ? already_sent : 0; i < file.packets.size(); ++i) {
      FOVEA_TRY(io::send_and_receive(decoder, file.packets[i], count));
    }
  }
  return io::finish_and_receive(decoder, count);
}

class Session {
 public:
  Session(const DemuxedFile& file, const BenchArgs& args) : file_(file), args_(args) {}

  // Everything before the timed region: stream and decoder creation. The nvdec backend creates its
  // hardware decoder when the parser meets the first picture, so the first packet is sent here too,
  // as bench/nvdec_ceiling creates its decoders before timing. (A decoder created while other
  // sessions decode also slows them, a few percent; docs/perf.md, "Run E".)
  Status prepare() {
    result_.input = file_.info.url;
    io::DecoderOptions options;
    io::parse_decoder_backend(args_.decoder, &options.backend);
    // auto is NVDEC when there is a GPU; without one, the CPU at once rather than a fallback per session.
    if (options.backend == io::DecoderBackend::kAuto && !gpu_available())
      options.backend = io::DecoderBackend::kCpu;
    options.threads = args_.threads;
    options.display_delay = args_.display_delay;
    options.decode_surfaces = args_.decode_surfaces;
#if defined(FOVEA_HAVE_CUDA)
    if (options.backend != io::DecoderBackend::kCpu) {
      FOVEA_ASSIGN_OR_RETURN(stream_, CudaStream::create());
      options.stream = stream_.get();
    }
#endif
    FOVEA_ASSIGN_OR_RETURN(io::OpenedDecoder opened, io::open_decoder(file_.info, options));
    decoder_ = std::move(opened.decoder);
    result_.backend = std::string(io::decoder_backend_name(decoder_->backend()));
    result_.fallback_reason = opened.fallback_reason;
    result_.expected_frames = static_cast<std::int64_t>(file_.packets.size()) * args_.repeat;
    // A decoder that fails on the first packet fails its session, not the others: run() reports it.
    result_.status = io::send_and_receive(*decoder_, file_.packets.front(), frame_counter(result_.frames));
    return Status::ok();
  }

  void run() {
    const auto start = Clock::now();
    if (result_.status.is_ok()) {
      result_.status = decode_all(*decoder_, file_, args_.repeat, 1, result_.frames);
    }
#if defined(FOVEA_HAVE_CUDA)
    if (result_.status.is_ok() && stream_.get()) {
      result_.status = stream_.synchronize();
    }
#endif
    finished_ = Clock::now();
    result_.seconds = std::chrono::duration<double>(finished_ - start).count();
    result_.stats = decoder_->stats();
    // Teardown is not decoding, and is left out of the timing: destroying an NVDEC decoder and
    // freeing its pool took ~0.03 s for one session and ~0.3 s for eight at once (H200, 2026-11-21).
    decoder_.reset();
  }

  // When the last frame had been decoded and copied.
  Clock::time_point finished() const {
    return finished_;
  }

  SessionResult& result() {
    return result_;
  }

 private:
  const DemuxedFile& file_;
  const BenchArgs& args_;
#if defined(FOVEA_HAVE_CUDA)
  CudaStream stream_;
#endif
  std::unique_ptr<io::Decoder> decoder_;
  SessionResult result_;
  Clock::time_point finished_;
};

void print_table(const std::vector<SessionResult>& results, double wall_seconds, std::int64_t total_frames) {
  std::printf("\n%-8s %-8s %10s %10s %9s %8s %8s  %s\n", "session", "backend", "frames", "fps", "seconds",
              "damaged", "dropped", "input");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const SessionResult& r = results[i];
    const std::int64_t dropped = r.expected_frames - r.frames;
    std::printf("%-8zu %-8s %10lld %10.1f %9.3f %8lld %8lld  %s%s\n", i, r.backend.c_str(),
                static_cast<long long>(r.frames),
                r.seconds > 0 ? static_cast<double>(r.frames) / r.seconds : 0.0, r.seconds,
                static_cast<long long>(r.stats.frames_damaged), static_cast<long long>(dropped),
                r.input.c_str(), r.status.is_ok() ? "" : ("  FAILED: " + r.status.to_string()).c_str());
  }
  std::printf("aggregate: %lld frames in %.3f s = %.1f frames/s over %zu sessions\n",
              static_cast<long long>(total_frames), wall_seconds,
              wall_seconds > 0 ? static_cast<double>(total_frames) / wall_seconds : 0.0, results.size());
}

Status write_json(const std::string& path, const BenchArgs& args, const std::vector<SessionResult>& results,
                  double wall_seconds, std::int64_t total_frames) {
  nlohmann::json sessions = nlohmann::json::array();
  for (const SessionResult& r : results) {
    sessions.push_back({{"input", r.input},
                        {"backend", r.backend},
                        {"fallback_reason", r.fallback_reason},
                        {"frames", r.frames},
                        {"expected_frames", r.expected_frames},
                        {"frames_damaged", r.stats.frames_damaged},
                        {"packets_rejected", r.stats.packets_rejected},
                        {"seconds", r.seconds},
                        {"fps", r.seconds > 0 ? static_cast<double>(r.frames) / r.seconds : 0.0},
                        {"status", r.status.is_ok() ? "ok" : r.status.to_string()}});
  }
  nlohmann::json report = {
      {"decoder", args.decoder},
      {"sessions", args.sessions},
      {"repeat", args.repeat},
      {"wall_seconds", wall_seconds},
      {"total_frames", total_frames},
      {"aggregate_fps", wall_seconds > 0 ? static_cast<double>(total_frames) / wall_seconds : 0.0},
      {"per_session", sessions}};
  return write_file_atomically(path, report.dump(2) + "\n", "--json");
}

int run_decode_bench(const BenchArgs& args) {
  // nvdec is the default: without a GPU, say what to do instead of failing on a CUDA call.
  if (args.decoder == "nvdec" && !gpu_available()) {
    log_error("decode-bench: no GPU{}: use --decoder cpu (or auto)",
#if defined(FOVEA_HAVE_CUDA)
              ""
#else
              " (this fovea was built without CUDA)"
#endif
    );
    return kExitFailure;
  }
  if (!args.json_path.empty()) {
    if (Status status = check_outputs({{.what = "--json", .path = args.json_path}}, args.inputs);
        !status.is_ok()) {
      std::fprintf(stderr, "fovea decode-bench: %s\n", status.to_string().c_str());
      return kExitUsage;
    }
  }
  std::vector<DemuxedFile> files;
  for (const std::string& input : args.inputs) {
    Result<DemuxedFile> file = demux_whole_file(input);
    if (!file.is_ok()) {
      std::fprintf(stderr, "fovea decode-bench: %s\n", file.status().to_string().c_str());
      return kExitFailure;
    }
    files.push_back(std::move(file).value());
  }
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < args.sessions; ++i) {
    sessions.push_back(std::make_unique<Session>(files[static_cast<std::size_t>(i) % files.size()], args));
    if (Status prepared = sessions.back()->prepare(); !prepared.is_ok()) {
      std::fprintf(stderr, "fovea decode-bench: session %d: %s\n", i, prepared.to_string().c_str());
      return kExitFailure;
    }
  }
  std::barrier start_line(static_cast<std::ptrdiff_t>(sessions.size()) + 1);
  std::vector<std::thread> threads;
  for (auto& session : sessions) {
    threads.emplace_back([&start_line, &session] {
      start_line.arrive_and_wait();
      session->run();
    });
  }
  start_line.arrive_and_wait();
  const auto start = Clock::now();
  for (std::thread& thread : threads) {
    thread.join();
  }
  // From the common start to the last session's last frame.
  auto end = start;
  for (const auto& session : sessions) {
    end = std::max(end, session->finished());
  }
  const double wall_seconds = std::chrono::duration<double>(end - start).count();

  std::vector<SessionResult> results;
  std::int64_t total_frames = 0;
  int failures = 0;
  for (auto& session : sessions) {
    results.push_back(std::move(session->result()));
    total_frames += results.back().frames;
    failures += results.back().status.is_ok() ? 0 : 1;
  }
  print_table(results, wall_seconds, total_frames);
  if (!args.json_path.empty()) {
    if (Status written = write_json(args.json_path, args, results, wall_seconds, total_frames);
        !written.is_ok()) {
      std::fprintf(stderr, "fovea decode-bench: %s\n", written.to_string().c_str());
      return kExitFailure;
    }
  }
  if (interrupt_flag().load()) {
    return kExitInterrupted;
  }
  if (failures == 0) {
    return kExitOk;
  }
  return failures == static_cast<int>(results.size()) ? kExitFailure : kExitPartial;
}

}  // namespace

void add_decode_bench_command(CLI::App& app, Action* action) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* command =
      app.add_subcommand("decode-bench", "Measure decode throughput over concurrent sessions");
  command->add_option("inputs", args->inputs, "Video files (sessions take them round robin)")->required();
  command
      ->add_option("--decoder", args->decoder,
                   "nvdec (needs a GPU), cpu, or auto (nvdec when there is a GPU)")
      ->check(CLI::IsMember({"cpu", "nvdec", "auto"}))
      ->capture_default_str();
  command->add_option("--sessions", args->sessions, "Concurrent decoder sessions, one thread each")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command->add_option("--repeat", args->repeat, "Times each session decodes its file")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  command->add_option("--threads", args->threads, "cpu decoder threads per session (0 = one per core)")
      ->check(at_least(0))
      ->capture_default_str();
  command
      ->add_option("--display-delay", args->display_delay,
                   "nvdec: pictures decoded ahead of the one delivered (0 = lowest latency)")
      ->check(CLI::Range(0, 4))
      ->capture_default_str();
  command
      ->add_option("--decode-surfaces", args->decode_surfaces,
                   "nvdec: decode surfaces per session (0 = the stream's minimum plus headroom)")
      ->check(CLI::Range(0, 32))
      ->capture_default_str();
  command->add_option("--json", args->json_path, "Also write the results as JSON to this file");
  command->callback([args, action] { *action = [args] { return run_decode_bench(*args); }; });
}

}  // namespace fovea::app
