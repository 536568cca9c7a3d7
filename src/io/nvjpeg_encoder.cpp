#include "io/nvjpeg_encoder.h"

#include <fmt/format.h>

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#include "io/nvjpeg_library.h"
#endif

namespace fovea::io {
namespace {

// Every build: a bad quality is the caller's mistake whether or not nvJPEG is there.
Status check_quality(int quality) {
  if (quality >= 1 && quality <= 100) return Status::ok();
  return make_error(StatusCode::kInvalidArgument,
                    fmt::format("JPEG quality {}: must be within 1..100", quality));
}

}  // namespace

#if defined(FOVEA_HAVE_CUDA)

namespace {

namespace abi = nvjpeg_abi;
using detail::nvjpeg;

struct ParamsDestroyer {
  void operator()(abi::EncoderParams params) const {
    static_cast<void>(nvjpeg().encoder_params_destroy(params));
  }
};
struct StateDestroyer {
  void operator()(abi::EncoderState state) const { static_cast<void>(nvjpeg().encoder_state_destroy(state)); }
};
using ParamsOwner = std::unique_ptr<abi::EncoderParamsHandle, ParamsDestroyer>;
using StateOwner = std::unique_ptr<abi::EncoderStateHandle, StateDestroyer>;

Status check_image(const ImageView& image, std::size_t index) {
  if (image.format != PixelFormat::kRGB8 || image.memory != MemoryKind::kDevice ||
      image.planes[0].data == nullptr || image.width <= 0 || image.height <= 0) {
    return make_error(StatusCode::kInvalidArgument,
                      fmt::format("JPEG encode, image {}: nvJPEG encodes rgb8 device images, not a {}x{} {} "
                                  "image in {} memory",
                                  index, image.width, image.height, pixel_format_name(image.format),
                                  memory_kind_name(image.memory)));
  }
  return Status::ok();
}

}  // namespace

// The handle and parameters, and one encoder state per image of the largest batch so far. The
// states are declared after the handle so that they are destroyed first.
struct NvjpegEncoder::Impl {
  int device = 0;
  detail::HandleOwner handle;
  ParamsOwner params;
  std::vector<StateOwner> states;

  Status grow_states(std::size_t count, cudaStream_t stream) {
    while (states.size() < count) {
      abi::EncoderState state = nullptr;
      FOVEA_NVJPEG_TRY(nvjpeg().encoder_state_create(handle.get(), &state, stream));
      states.emplace_back(state);
    }
    return Status::ok();
  }
};

NvjpegEncoder::NvjpegEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NvjpegEncoder::~NvjpegEncoder() = default;

bool NvjpegEncoder::available() {
  return nvjpeg().encoder_status.is_ok();
}

Result<std::unique_ptr<NvjpegEncoder>> NvjpegEncoder::create(int quality, int device) {
  FOVEA_TRY(check_quality(quality));
  FOVEA_TRY(nvjpeg().encoder_status);
  FOVEA_TRY(detail::use_nvjpeg_device(device, "nvJPEG encoder"));
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  abi::Handle handle = nullptr;
  FOVEA_NVJPEG_TRY(nvjpeg().create_ex(abi::kBackendDefault, nullptr, nullptr, 0, &handle));
  impl->handle.reset(handle);
  abi::EncoderParams params = nullptr;
  FOVEA_NVJPEG_TRY(nvjpeg().encoder_params_create(handle, &params, nullptr));
  impl->params.reset(params);
  FOVEA_NVJPEG_TRY(nvjpeg().encoder_params_set_quality(params, quality, nullptr));
  FOVEA_NVJPEG_TRY(nvjpeg().encoder_params_set_sampling_factors(params, abi::kCss420, nullptr));
  return std::unique_ptr<NvjpegEncoder>(new NvjpegEncoder(std::move(impl)));
}

Result<std::vector<std::string>> NvjpegEncoder::encode_batch(cudaStream_t stream,
                                                             std::span<const ImageView> images) {
  for (std::size_t i = 0; i < images.size(); ++i) FOVEA_TRY(check_image(images[i], i));
  FOVEA_CUDA_TRY(cudaSetDevice(impl_->device));
  FOVEA_TRY(impl_->grow_states(images.size(), stream));
  for (std::size_t i = 0; i < images.size(); ++i) {
    abi::Image source{};
    source.channel[0] = static_cast<unsigned char*>(images[i].planes[0].data);
    source.pitch[0] = images[i].planes[0].pitch;
    FOVEA_NVJPEG_TRY(nvjpeg().encode_image(impl_->handle.get(), impl_->states[i].get(), impl_->params.get(),
                                           &source, abi::kInputRgbi, images[i].width, images[i].height,
                                           stream));
  }
  // The sizes are known once the entropy coding is done: one wait for the batch.
  FOVEA_CUDA_TRY(cudaStreamSynchronize(stream));
  std::vector<std::string> files(images.size());
  for (std::size_t i = 0; i < images.size(); ++i) {
    std::size_t length = 0;
    FOVEA_NVJPEG_TRY(nvjpeg().encode_retrieve_bitstream(impl_->handle.get(), impl_->states[i].get(), nullptr,
                                                        &length, stream));
    files[i].resize(length);
    FOVEA_NVJPEG_TRY(nvjpeg().encode_retrieve_bitstream(impl_->handle.get(), impl_->states[i].get(),
                                                        reinterpret_cast<unsigned char*>(files[i].data()),
                                                        &length, stream));
    files[i].resize(length);
  }
  FOVEA_CUDA_TRY(cudaStreamSynchronize(stream));
  return files;
}

#else  // CPU-only build: create() never succeeds, so no encoder exists to encode with.

struct NvjpegEncoder::Impl {};
NvjpegEncoder::NvjpegEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NvjpegEncoder::~NvjpegEncoder() = default;

bool NvjpegEncoder::available() {
  return false;
}

Result<std::unique_ptr<NvjpegEncoder>> NvjpegEncoder::create(int quality, int) {
  FOVEA_TRY(check_quality(quality));
  return make_error(StatusCode::kUnsupported,
                    "nvJPEG encoder unavailable: this fovea was built without CUDA");
}

Result<std::vector<std::string>> NvjpegEncoder::encode_batch(cudaStream_t, std::span<const ImageView>) {
  return make_error(StatusCode::kUnsupported,
                    "nvJPEG encoder unavailable: this fovea was built without CUDA");
}

#endif

}  // namespace fovea::io
