// JPEG encoding on the GPU through nvJPEG (libnvjpeg loaded at run time, io/nvjpeg_library.h), for
// pictures that are already in device memory: the image sink's JPEG files when the flow runs on
// the GPU. Baseline JPEG, 4:2:0 chroma and libjpeg's quality scale, as the CPU encoder
// (io::encode_image with libjpeg-turbo) writes them, so the two give files of the same kind; the
// pixels differ within the codec's loss (tests/io/nvjpeg_encoder_test.cpp bounds both against the
// original).
//
// The images of a batch are encoded on one stream, each with its own encoder state, and the
// stream is waited on once for the whole batch before the files' bytes are read back.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/cuda_stream.h"
#include "core/image.h"
#include "core/status.h"

namespace fovea::io {

class NvjpegEncoder {
 public:
  // Whether libnvjpeg loads with its encoder (and this build has CUDA). Says nothing of the GPU.
  static bool available();
  // kUnsupported naming what is missing (no CUDA in this build, no libnvjpeg, no encoder entry
  // points, no GPU); kInvalidArgument for a quality outside 1..100.
  static Result<std::unique_ptr<NvjpegEncoder>> create(int quality, int device = 0);

  ~NvjpegEncoder();
  NvjpegEncoder(const NvjpegEncoder&) = delete;
  NvjpegEncoder& operator=(const NvjpegEncoder&) = delete;

  // The JPEG files of `images` (kRGB8, device memory, any size), encoded on `stream`; returns
  // once they are read back. Errors name the image by its index and say why (a host image, a
  // format other than rgb8, nvJPEG's status).
  Result<std::vector<std::string>> encode_batch(cudaStream_t stream, std::span<const ImageView> images);

 private:
  struct Impl;
  explicit NvjpegEncoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fovea::io
