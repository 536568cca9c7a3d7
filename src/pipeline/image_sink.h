// ImageSink (sinks.images): the image2image stage's pictures as image files, one per frame, at
// <output_dir>/<the input's path below its folder> with the format's extension (PNG or JPEG), so
// the output tree mirrors the input tree. A segmentation flow's frames give label images instead:
// 8-bit single-channel PNGs of class indices at each image's own size (post/class_mask.h), made
// from the class map by the writer threads (nearest, a gather as cheap as the copy it replaces).
//
// Encoding is the slow part of an image flow (a 256x256 PNG costs more than its inference), so a
// pool of writer threads encodes and writes while the flow goes on; the batch's pictures are copied
// out of the slot first, so the slot goes back at once. With sinks.images.encoder: nvjpeg, JPEG
// pictures of a flow on the GPU are encoded there instead (io/nvjpeg_encoder.h): the sink's thread
// encodes the batch's device pictures on a stream of its own and hands the files' bytes to the
// writers (not the default: slower than the writers on the GPU machine, docs/perf.md). The queue in
// front of the writers is bounded (back-pressure up to the sources). Each file is written under a temporary
// name and renamed into place (core/output_file.h) and never over its input (io::write_image_file checks it;
// the flow refuses such an output before anything runs). A file that cannot be written is reported by name
// and reason, the others go on.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/image_files.h"
#include "pipeline/config.h"
#include "pipeline/sinks.h"

namespace fovea::pipeline {

// Where the sink writes the picture of the input at `relative` (below its input's folder).
std::filesystem::path image_output_path(const ImageSinkConfig& config, const std::filesystem::path& relative);

class ImageSink final : public Sink {
 public:
  // `images`: the flow's inputs (each output is checked against its own input); `gpu`: the flow
  // runs on the GPU (its pictures are in device memory too); `threads` writers (0: one per core).
  ImageSink(ImageSinkConfig config, const std::vector<io::ListedImage>& images, bool gpu, int threads = 0);
  ~ImageSink() override;  // finish()
  ImageSink(const ImageSink&) = delete;
  ImageSink& operator=(const ImageSink&) = delete;

  Status start(std::span<const Rational> source_frame_rates) override;
  Status write(const std::shared_ptr<const FrameBatch>& batch) override;
  Status finish() override;
  // One report for the folder (the pictures written; the first failure), one per failed file.
  std::vector<SinkReport> reports() const override;

 private:
  struct Writers;  // the queue and the writer threads (image_sink.cpp)
  struct GpuJpeg;  // the nvJPEG encoder and its stream (image_sink.cpp)
  // Start: the GPU encoder when sinks.images.encoder is nvjpeg; an error when it cannot be had.
  Status start_gpu_jpeg();
  // The batch's pictures encoded on the GPU, queued for the writers.
  Status write_gpu_jpeg(const FrameBatch& batch);
  ImageSinkConfig config_;
  bool gpu_;
  std::unordered_map<std::string, std::string> input_of_;  // relative name -> the input file
  int threads_;
  std::unique_ptr<Writers> writers_;
  std::unique_ptr<GpuJpeg> gpu_jpeg_;  // null: every picture is encoded by the writers
};

}  // namespace fovea::pipeline
