// RAII owners for FFmpeg's objects, one deleter for them all: AvPtr<AVPacket> and so on.
// Input format contexts close with avformat_close_input (InputFormatPtr); an output context
// needs its file closed as well and keeps its own owner next to the muxing code.
#pragma once

#include <memory>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>
}

namespace fovea::io {

struct AvDeleter {
  void operator()(AVCodecContext* context) const { avcodec_free_context(&context); }
  void operator()(AVCodecParameters* parameters) const { avcodec_parameters_free(&parameters); }
  void operator()(AVFrame* frame) const { av_frame_free(&frame); }
  void operator()(AVPacket* packet) const { av_packet_free(&packet); }
  void operator()(AVBufferRef* buffer) const { av_buffer_unref(&buffer); }
  void operator()(AVBSFContext* filter) const { av_bsf_free(&filter); }
  void operator()(AVDictionary* dictionary) const { av_dict_free(&dictionary); }
  void operator()(SwsContext* scaler) const { sws_freeContext(scaler); }
};
template <typename T>
using AvPtr = std::unique_ptr<T, AvDeleter>;

struct InputFormatCloser {
  void operator()(AVFormatContext* context) const { avformat_close_input(&context); }
};
using InputFormatPtr = std::unique_ptr<AVFormatContext, InputFormatCloser>;

}  // namespace fovea::io
