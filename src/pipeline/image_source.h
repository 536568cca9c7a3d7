// An image collection as a flow's source: files (io/image_files.h lists them) decoded on a pool of
// CPU threads (io/image_codec.h: JPEG, PNG, BMP, WebP into RGB8), uploaded to the GPU on the GPU
// path, and pushed into the mux in list order as one mux source, so batches and the metadata come
// out the same on every run.
//
// Each frame is the image at its own size (kRGB8, packed rows; the preprocess resizes it into the
// model's input, image/preprocess.h), or its A or B half with `split` (pix2pix's "AB" pairs), and
// is named by its path below its input (SourceFrame::name, MuxFrame::index its position in the
// list): that is what the metadata calls the source and what the image sink mirrors.
//
// A file that cannot be read or decoded is skipped, logged by name and reason and counted in the
// source's report (failed_items); the others go on. Memory is bounded whatever the collection's
// size: decoders run at most a window of images ahead of the next one the mux takes, and frames
// held downstream (the mux queue, the batches in flight) are bounded in count and bytes
// (ImageSourceOptions). The image the mux needs next always proceeds, so one image larger than the
// byte budget waits for the others to drain instead of deadlocking.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/image_files.h"
#include "pipeline/config.h"
#include "pipeline/stream_mux.h"
#include "pipeline/video_source.h"

namespace fovea::pipeline {

struct ImageSourceOptions {
  bool gpu = false;  // device frames with ready events (needs CUDA and a GPU)
  int device = 0;
  int threads = 0;  // decode threads; 0: one per core
  AbSplit split = AbSplit::kNone;
  // GPU path: JPEG files through nvJPEG (io/nvjpeg_decoder.h) with `auto` where it loads, always
  // with `nvjpeg` (the source fails without it); the other formats and the JPEGs nvJPEG does not
  // take (CMYK, arithmetic coding, an EXIF rotation) on the CPU threads.
  JpegCodec decoder = JpegCodec::kAuto;
  // Threads that call nvJPEG, and the JPEGs each hands it per call (images.jpeg_threads and
  // images.jpeg_batch; docs/config.md says how they were chosen).
  int jpeg_threads = 2;
  int jpeg_batch = 32;
  // Frames held downstream at once (mux queue plus the batches in flight), and their bytes; the
  // flow sizes the count as it does for a video source's pool.
  int max_frames_in_flight = 16;
  std::int64_t max_bytes_in_flight = std::int64_t{2} << 30;
  // How long the image the pusher needs next waits for frames downstream to be released before it
  // passes over the budget anyway. A flow's stages release their frames without waiting for more, so
  // this only bounds the wait of a consumer that holds frames while it asks for more: the source
  // never stops for good.
  std::chrono::milliseconds next_image_patience{1000};
};

// The image source's name in the stats and the report.
inline constexpr const char* kImagesSourceName = "images";

// The report's uri for a list of inputs: the first, "+ N more" when there are several.
std::string image_inputs_label(const std::vector<std::string>& inputs);

class ImageSources final : public FrameSources {
 public:
  // `list.images` in the order they go to the mux, into mux slot 0 (named `name`); the entries the
  // listing could not read (`list.skipped`) are reported with the files that fail to decode.
  ImageSources(io::ImageList list, std::string name, std::string uri, ImageSourceOptions options,
               StreamMux<SourceFrame>& mux);
  ~ImageSources() override;  // stops and joins
  ImageSources(const ImageSources&) = delete;
  ImageSources& operator=(const ImageSources&) = delete;

  void start() override;
  void request_stop() override;
  void join() override;
  std::vector<std::optional<SourceReport>> reports() const override;

 private:
  struct State;  // the decode pool, the reorder window and the counters (image_source.cpp)
  std::unique_ptr<State> state_;
};

}  // namespace fovea::pipeline
