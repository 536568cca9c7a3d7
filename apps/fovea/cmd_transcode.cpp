// fovea transcode IN OUT [--decoder cpu|nvdec|auto] [--codec h264|hevc] [--preset P] [--crf N]
//                        [--threads N]
//
// Demux, decode and re-encode one video stream, frame by frame. Timestamps pass through: the
// encoder works in the source stream's time base. Packets the decoder refuses as damaged are
// counted and skipped. Ctrl-C stops reading, drains what the decoder holds and finalizes the
// output, which stays a playable file (exit 130). The encoder is finalized on errors as well.
// The output keeps the source's size and bit depth (10/12-bit sources are written in 10 bits by
// libx264/libx265): when the resolution changes mid-stream (a concatenated MPEG-TS, a re-streamer),
// the frames after the change are scaled to the first size (even-sized sources; an odd-sized one
// is cropped to even and cannot change size).
// The output may not be the input (refused before anything runs, exit 2), and it takes its name
// only once finalized (core/output_file.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "commands.h"
#include "core/log.h"
#include "core/output_file.h"
#include "io/decoder.h"
#include "io/demuxer.h"
#include "io/encoder.h"
#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_raii.h"
#endif

namespace fovea::app {
namespace {

using Clock = std::chrono::steady_clock;

// The progress line is redrawn at most this often: readable, and its cost stays negligible.
constexpr auto kProgressInterval = std::chrono::seconds(1);

struct TranscodeArgs {
  std::string input;
  std::string output;
  std::string decoder = "auto";
  std::string codec = "h264";
  std::string preset = "medium";
  int crf = 23;
  int threads = 0;
};

struct TranscodeCounts {
  std::int64_t frames_decoded = 0;
  std::int64_t packets_skipped = 0;  // send() reported the packet as damaged
};

class Transcoder {
 public:
  explicit Transcoder(const TranscodeArgs& args)
      : args_(args), start_(Clock::now()), progress_enabled_(isatty(fileno(stderr)) != 0) {}

  Status open();
  // Reads until the end, Ctrl-C or an error, then drains the decoder (except after a decode or
  // encode error) and finalizes the encoder in every case. Returns the first error.
  Status run();
  bool interrupted() const { return interrupted_; }
  void print_summary() const;

 private:
  Status read_and_decode(Status& read_error);
  Status send_packet(const io::Packet& packet);
  Status receive_frames();
  Status encode(const Frame& frame);
  Status open_encoder(const Frame& first);
  void show_progress(const Frame& frame);

  const TranscodeArgs& args_;
  Clock::time_point start_;
  std::unique_ptr<io::Demuxer> demuxer_;
#if defined(FOVEA_HAVE_CUDA)
  CudaStream stream_;  // for nvdec's copies out and the encoder's reads of the same frames
#endif
  io::OpenedDecoder decoder_;
  std::unique_ptr<io::Encoder> encoder_;
  TranscodeCounts counts_;
  bool interrupted_ = false;
  bool progress_enabled_;  // only on a terminal: a log file would fill with redrawn lines
  bool progress_shown_ = false;
  Clock::time_point last_progress_ = start_;
  std::int64_t first_pts_ = 0;
  bool have_first_pts_ = false;
};

Status Transcoder::open() {
  io::DemuxOptions demux_options;
  demux_options.cancel = &interrupt_flag();
  FOVEA_ASSIGN_OR_RETURN(demuxer_, io::Demuxer::open(args_.input, demux_options));

  io::DecoderOptions decoder_options;
  io::parse_decoder_backend(args_.decoder, &decoder_options.backend);
  decoder_options.threads = args_.threads;
  // The decoders scale only frames of another size, so this keeps the first size after a
  // resolution change mid-stream and costs nothing before it. Odd sizes are not a size a 4:2:0
  // decoder output can have; those frames are cropped to even in encode() instead.
  const io::StreamInfo& info = demuxer_->info();
  if (info.width % 2 == 0 && info.height % 2 == 0) {
    decoder_options.output_width = info.width;
    decoder_options.output_height = info.height;
  }
#if defined(FOVEA_HAVE_CUDA)
  // Without a GPU, auto and nvdec fall back to the cpu decoder inside open_decoder, which says why.
  if (decoder_options.backend != io::DecoderBackend::kCpu && cuda_device_count() > 0) {
    FOVEA_ASSIGN_OR_RETURN(stream_, CudaStream::create());
    decoder_options.stream = stream_.get();
  }
#endif
  FOVEA_ASSIGN_OR_RETURN(decoder_, io::open_decoder(demuxer_->info(), decoder_options));
  return Status::ok();
}

Status Transcoder::run() {
  Status read_error = Status::ok();
  Status status = read_and_decode(read_error);
  if (status.is_ok()) {
    // After the end, Ctrl-C or a read error, what the decoder still holds is written too.
    status = decoder_.decoder->send_eof();
    if (status.is_ok()) {
      status = receive_frames();
    }
  }
  if (progress_shown_) {
    std::fputc('\n', stderr);
  }
  if (encoder_) {
    const Status finished = encoder_->finish();
    if (status.is_ok()) {
      status = finished;
    }
  }
  if (status.is_ok()) {
    status = read_error;
  }
  if (status.is_ok() && encoder_ == nullptr && !interrupted_) {
    status = make_error(StatusCode::kCorruptData, args_.input, ": no frame could be decoded, so ",
                        args_.output, " was not written");
  }
  return status;
}

// Returns decode and encode errors; a read error ends the reading and lands in `read_error`.
Status Transcoder::read_and_decode(Status& read_error) {
  while (true) {
    if (interrupt_flag().load()) {
      interrupted_ = true;
      return Status::ok();
    }
    io::Packet packet;
    Result<bool> got = demuxer_->read(packet);
    if (!got.is_ok()) {
      if (got.status().code() == StatusCode::kCancelled) {
        interrupted_ = true;
      } else {
        read_error = got.status();
      }
      return Status::ok();
    }
    if (!got.value()) {
      return Status::ok();
    }
    FOVEA_TRY(send_packet(packet));
  }
}

Status Transcoder::send_packet(const io::Packet& packet) {
  while (true) {
    Result<io::IoState> sent = decoder_.decoder->send(packet);
    if (!sent.is_ok()) {
      if (sent.status().code() != StatusCode::kCorruptData) {
        return sent.status();
      }
      ++counts_.packets_skipped;
      log_debug("{}: skipping a damaged packet (pts {}): {}", args_.input, packet.pts,
                sent.status().message());
      return receive_frames();
    }
    FOVEA_TRY(receive_frames());
    if (sent.value() == io::IoState::kOk) {
      return Status::ok();
    }
    // kAgain: the decoder's output was full; it has been emptied, so the same packet goes again.
  }
}

Status Transcoder::receive_frames() {
  while (true) {
    Frame frame;
    FOVEA_ASSIGN_OR_RETURN(io::IoState state, decoder_.decoder->receive(frame));
    if (state != io::IoState::kOk) {
      return Status::ok();
    }
    ++counts_.frames_decoded;
    FOVEA_TRY(encode(frame));
    show_progress(frame);
  }
}

// 4:2:0 encoders take even sizes only; an odd source loses its last column or row. Narrowing
// the view is enough: the planes and pitches stay as the decoder laid them out.
Frame cropped_to_even(const Frame& frame) {
  Frame even = frame;
  even.image.width &= ~1;
  even.image.height &= ~1;
  return even;
}

Status Transcoder::encode(const Frame& frame) {
  const Frame even = cropped_to_even(frame);
  if (encoder_ == nullptr) {
    FOVEA_TRY(open_encoder(even));
    if (even.image.width != frame.image.width || even.image.height != frame.image.height) {
      log_warn("{}: {}x{} is odd; encoding {}x{} (4:2:0 needs even sizes)", args_.input, frame.image.width,
               frame.image.height, even.image.width, even.image.height);
    }
  }
  return encoder_->encode(even);
}

// Opened on the first frame, whose size is what the decoder really delivers.
Status Transcoder::open_encoder(const Frame& first) {
  const io::StreamInfo& info = demuxer_->info();
  io::EncoderOptions options;
  io::parse_encoder_codec(args_.codec, &options.codec);
  options.width = first.image.width;
  options.height = first.image.height;
  if (first.bit_depth > 8) {
    options.bit_depth = 10;
    log_info("{}: {}-bit source; encoding in 10 bits", args_.input, first.bit_depth);
  }
  // The decoders pass a full-range source's samples through: the output says they are.
  options.full_range = info.full_range && first.bit_depth <= 8;
  options.time_base = info.time_base;
  options.frame_rate = info.frame_rate;
  if (options.frame_rate.num <= 0 || options.frame_rate.den <= 0) {
    // Only the nominal rate written to the container; the timestamps carry the real timing.
    options.frame_rate = Rational{30, 1};
    log_info("{}: the container gives no frame rate; writing a nominal 30 fps", args_.input);
  }
  options.preset = args_.preset;
  options.crf = args_.crf;
  options.threads = args_.threads;
#if defined(FOVEA_HAVE_CUDA)
  options.stream = stream_.get();
#endif
  FOVEA_ASSIGN_OR_RETURN(encoder_, io::Encoder::open(args_.output, options));
  return Status::ok();
}

void Transcoder::show_progress(const Frame& frame) {
  if (!have_first_pts_ && frame.has_pts) {
    first_pts_ = frame.pts;
    have_first_pts_ = true;
  }
  const auto now = Clock::now();
  if (!progress_enabled_ || now - last_progress_ < kProgressInterval) {
    return;
  }
  last_progress_ = now;
  progress_shown_ = true;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double fps = static_cast<double>(counts_.frames_decoded) / elapsed;
  const double duration = demuxer_->info().duration_s;
  std::string percent;
  if (duration > 0 && frame.has_pts && have_first_pts_) {
    const double position = static_cast<double>(frame.pts - first_pts_) * frame.time_base.to_double();
    percent = fmt::format("  {:5.1f}%", 100.0 * position / duration);
  }
  std::fprintf(stderr, "\rtranscode: %lld frames  %.1f fps%s   ",
               static_cast<long long>(counts_.frames_decoded), fps, percent.c_str());
  std::fflush(stderr);
}

std::string with_reason(std::string_view name, const std::string& fallback_reason) {
  return fallback_reason.empty() ? std::string(name)
                                 : fmt::format("{} (fallback: {})", name, fallback_reason);
}

void Transcoder::print_summary() const {
  if (encoder_ == nullptr) {
    return;  // nothing was written; the error line says why
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const io::EncoderStats encoded = encoder_->stats();
  const io::DecoderStats decoded = decoder_.decoder->stats();
  std::error_code error;
  const std::uintmax_t bytes = std::filesystem::file_size(args_.output, error);
  std::printf("%s -> %s%s\n", args_.input.c_str(), args_.output.c_str(),
              interrupted_ ? " (interrupted; output finalized)" : "");
  std::printf("  frames    %lld decoded, %lld encoded\n", static_cast<long long>(counts_.frames_decoded),
              static_cast<long long>(encoded.frames_in));
  std::printf(
      "  damaged   %lld packets skipped, %lld packets rejected by the decoder, %lld frames concealed\n",
      static_cast<long long>(counts_.packets_skipped), static_cast<long long>(decoded.packets_rejected),
      static_cast<long long>(decoded.frames_damaged));
  std::printf(
      "  decoder   %s\n",
      with_reason(io::decoder_backend_name(decoder_.decoder->backend()), decoder_.fallback_reason).c_str());
  std::printf("  encoder   %s\n", with_reason(encoder_->encoder_name(), encoder_->fallback_reason()).c_str());
  std::printf("  output    %.2f MB\n", error ? 0.0 : static_cast<double>(bytes) / 1e6);
  std::printf("  time      %.2f s, %.1f frames/s\n", elapsed,
              elapsed > 0 ? static_cast<double>(encoded.frames_in) / elapsed : 0.0);
}

int run_transcode(const TranscodeArgs& args) {
  Status status = io::check_file_container(args.output);
  if (status.is_ok()) status = check_outputs({{.what = "output", .path = args.output}}, {args.input});
  if (!status.is_ok()) {
    std::fprintf(stderr, "fovea transcode: %s\n", status.to_string().c_str());
    return kExitUsage;
  }
  Transcoder transcoder(args);
  status = transcoder.open();
  if (status.is_ok()) {
    status = transcoder.run();
    transcoder.print_summary();
  }
  if (!status.is_ok()) {
    std::fprintf(stderr, "fovea transcode: %s\n", status.to_string().c_str());
  }
  if (status.code() == StatusCode::kCancelled || (status.is_ok() && transcoder.interrupted())) {
    return kExitInterrupted;
  }
  return status.is_ok() ? kExitOk : kExitFailure;
}

}  // namespace

void add_transcode_command(CLI::App& app, Action* action) {
  auto args = std::make_shared<TranscodeArgs>();
  CLI::App* command = app.add_subcommand("transcode", "Decode a video and encode it again (h264 or hevc)");
  command->add_option("input", args->input, "Video file or URL")->required();
  command
      ->add_option("output", args->output,
                   "Output file; the container follows the extension (.mp4, .mov, "
                   ".mkv, .ts)")
      ->required();
  command->add_option("--decoder", args->decoder, "Decoder backend")
      ->check(CLI::IsMember({"cpu", "nvdec", "auto"}))
      ->capture_default_str();
  command->add_option("--codec", args->codec, "Output codec")
      ->check(CLI::IsMember({"h264", "hevc"}))
      ->capture_default_str();
  command
      ->add_option("--preset", args->preset, "Encoder preset (x264/x265 names; mapped to p1..p7 for NVENC)")
      ->check(encoder_preset())
      ->capture_default_str();
  command->add_option("--crf", args->crf, "Quality: x264/x265 crf, NVENC cq (lower is better)")
      ->check(CLI::Range(0, 51))
      ->capture_default_str();
  command
      ->add_option("--threads", args->threads,
                   "CPU threads for the decoder and for the encoder (0 = one per core)")
      ->check(at_least(0))
      ->capture_default_str();
  command->callback([args, action] { *action = [args] { return run_transcode(*args); }; });
}

}  // namespace fovea::app
