#include "io/video_codec.h"

namespace fovea::io {

std::string_view video_codec_name(VideoCodec codec) {
  switch (codec) {
    case VideoCodec::kH264: return "h264";
    case VideoCodec::kHevc: return "hevc";
    case VideoCodec::kVp9: return "vp9";
    case VideoCodec::kAv1: return "av1";
    case VideoCodec::kMpeg4: return "mpeg4";
    case VideoCodec::kMjpeg: return "mjpeg";
    case VideoCodec::kOther: return "other";
  }
  return "other";
}

}  // namespace fovea::io
