// Helpers shared by the io tests: demux + decode a whole file and keep what came out.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/decoder.h"
#include "io/demuxer.h"

namespace fovea::testing {

struct DecodeOutcome {
  std::vector<Frame> frames;
  io::DecoderStats stats;
  Status status;  // the first error, if decoding stopped on one
};

// Demuxes and decodes the whole stream, handing every frame to `on_frame` as it comes.
Status for_each_frame(io::Demuxer& demuxer, io::Decoder& decoder,
                      const std::function<void(Frame&&)>& on_frame);

// Runs the full send/receive protocol until the end of the stream (or the first error).
DecodeOutcome decode_file(io::Demuxer& demuxer, io::Decoder& decoder);

// Opens `path`, a cpu decoder with `output`, and decodes everything.
Result<DecodeOutcome> decode_with_cpu(const std::string& path, PixelFormat output = PixelFormat::kYUV420P,
                                      int threads = 0);

}  // namespace fovea::testing
