#include "io/io_test_util.h"

namespace fovea::testing {
namespace {

Status drain(io::Decoder& decoder, std::vector<Frame>& frames) {
  while (true) {
    Frame frame;
    FOVEA_ASSIGN_OR_RETURN(io::IoState state, decoder.receive(frame));
    if (state != io::IoState::kOk) {
      return Status::ok();
    }
    frames.push_back(std::move(frame));
  }
}

Status run_protocol(io::Demuxer& demuxer, io::Decoder& decoder, std::vector<Frame>& frames) {
  io::Packet packet;
  while (true) {
    FOVEA_ASSIGN_OR_RETURN(bool got, demuxer.read(packet));
    if (!got) {
      break;
    }
    while (true) {
      FOVEA_ASSIGN_OR_RETURN(io::IoState sent, decoder.send(packet));
      FOVEA_TRY(drain(decoder, frames));
      if (sent == io::IoState::kOk) {
        break;
      }
    }
  }
  FOVEA_TRY(decoder.send_eof());
  return drain(decoder, frames);
}

}  // namespace

DecodeOutcome decode_file(io::Demuxer& demuxer, io::Decoder& decoder) {
  DecodeOutcome outcome;
  outcome.status = run_protocol(demuxer, decoder, outcome.frames);
  outcome.stats = decoder.stats();
  return outcome;
}

Result<DecodeOutcome> decode_with_cpu(const std::string& path, PixelFormat output, int threads) {
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<io::Demuxer> demuxer, io::Demuxer::open(path));
  io::DecoderOptions options;
  options.backend = io::DecoderBackend::kCpu;
  options.cpu_output = output;
  options.threads = threads;
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<io::Decoder> decoder,
                         io::open_cpu_decoder(demuxer->info(), options));
  return decode_file(*demuxer, *decoder);
}

}  // namespace fovea::testing
