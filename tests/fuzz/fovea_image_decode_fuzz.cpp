// libFuzzer target for the image readers (src/io/image_*): arbitrary bytes must decode or give an
// error, never a crash, a leak or undefined behaviour. Each input goes through the format sniffing
// and its decoder (libjpeg-turbo, libpng and libwebp behind fovea's wrappers and their error paths,
// fovea's own BMP decoder and EXIF orientation parser) twice, once with every option the image
// flows may set turned the other way, and through the JPEG header reader that routes a file to
// nvJPEG (read_jpeg_info), which the GPU path trusts to size the frame it decodes into.
//
//   scripts/fuzz.sh [SECONDS] image_decode
#include <cstddef>
#include <cstdint>
#include <span>

#include "io/image_codec.h"
#include "io/nvjpeg_decoder.h"

namespace {

using namespace fovea::io;

// Small limits: a header may claim any size, and the fuzzer looks for bugs, not for the time and
// memory a legitimately large picture takes.
ImageDecodeOptions options(bool flipped) {
  ImageDecodeOptions o;
  o.limits.max_side = 2048;
  o.limits.max_pixels = std::int64_t{1} << 20;
  o.keep_alpha = flipped;
  o.keep_16bit = flipped;
  o.apply_orientation = !flipped;
  o.fancy_upsampling = !flipped;
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  (void)decode_image(bytes, "fuzz", options(false));
  (void)decode_image(bytes, "fuzz", options(true));
  (void)read_jpeg_info(bytes, "fuzz.jpg");
  return 0;
}
