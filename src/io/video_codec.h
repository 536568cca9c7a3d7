// The codecs fovea knows by name. Everything FFmpeg can demux still opens; a codec outside this
// list is reported as kOther with FFmpeg's name in StreamInfo::codec_name.
#pragma once

#include <string_view>

namespace fovea::io {

enum class VideoCodec { kH264, kHevc, kVp9, kAv1, kMpeg4, kMjpeg, kOther };

std::string_view video_codec_name(VideoCodec codec);

}  // namespace fovea::io
