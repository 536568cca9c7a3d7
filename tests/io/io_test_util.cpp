#include "io/io_test_util.h"

namespace fovea::testing {
Status for_each_frame(io::Demuxer& demuxer, io::Decoder& decoder,
                      const std::function<void(Frame&&)>& on_frame) {
  io::Packet packet;
  while (true) {
    FOVEA_ASSIGN_OR_RETURN(bool got, demuxer.read(packet));
    if (!got) {
      return io::finish_and_receive(decoder, on_frame);
    }
    FOVEA_TRY(io::send_and_receive(decoder, packet, on_frame));
  }
}

DecodeOutcome decode_file(io::Demuxer& demuxer, io::Decoder& decoder) {
  DecodeOutcome outcome;
  outcome.status = for_each_frame(demuxer, decoder,
                                  [&outcome](Frame&& frame) { outcome.frames.push_back(std::move(frame)); });
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
