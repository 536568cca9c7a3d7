// libnvjpeg, loaded once at run time for the decoder (io/nvjpeg_decoder.h) and the encoder
// (io/nvjpeg_encoder.h): the entry points dlsym found, each group with its own status, so a
// library without the encoder still decodes. CUDA builds only; internal to io.
#pragma once

#if defined(FOVEA_HAVE_CUDA)

#include <memory>
#include <string_view>

#include "core/library_error.h"
#include "core/status.h"
#include "io/nvjpeg_abi.h"

namespace fovea::io::detail {

struct NvjpegLibrary {
  nvjpeg_abi::CreateExFn create_ex = nullptr;
  nvjpeg_abi::DestroyFn destroy = nullptr;
  nvjpeg_abi::JpegStateCreateFn jpeg_state_create = nullptr;
  nvjpeg_abi::JpegStateDestroyFn jpeg_state_destroy = nullptr;
  nvjpeg_abi::DecodeFn decode = nullptr;
  nvjpeg_abi::DecodeBatchedInitializeFn decode_batched_initialize = nullptr;
  nvjpeg_abi::DecodeBatchedFn decode_batched = nullptr;
  nvjpeg_abi::GetHardwareDecoderInfoFn get_hardware_decoder_info = nullptr;  // optional: CUDA 11.x lacks it
  // The library and the handle and decoding functions: ok, or kUnsupported saying what is missing.
  Status status;

  nvjpeg_abi::EncoderStateCreateFn encoder_state_create = nullptr;
  nvjpeg_abi::EncoderStateDestroyFn encoder_state_destroy = nullptr;
  nvjpeg_abi::EncoderParamsCreateFn encoder_params_create = nullptr;
  nvjpeg_abi::EncoderParamsDestroyFn encoder_params_destroy = nullptr;
  nvjpeg_abi::EncoderParamsSetQualityFn encoder_params_set_quality = nullptr;
  nvjpeg_abi::EncoderParamsSetSamplingFactorsFn encoder_params_set_sampling_factors = nullptr;
  nvjpeg_abi::EncodeImageFn encode_image = nullptr;
  nvjpeg_abi::EncodeRetrieveBitstreamFn encode_retrieve_bitstream = nullptr;
  // `status`, then the encoding functions.
  Status encoder_status;
};

// Loaded on first use (libnvjpeg.so.13, .so.12, then libnvjpeg.so) and never unloaded: handles
// may outlive main's locals.
const NvjpegLibrary& nvjpeg();

std::string_view nvjpeg_status_name(nvjpeg_abi::Status status);
inline bool nvjpeg_ok(nvjpeg_abi::Status status) {
  return status == nvjpeg_abi::kStatusSuccess;
}

// Makes `device` current for nvJPEG's handles, which belong to the device current when they are
// made: kUnsupported "<what> unavailable: no CUDA device", kNotFound for a device that is not there.
Status use_nvjpeg_device(int device, std::string_view what);

// A library handle, destroyed with nvjpegDestroy.
struct HandleDestroyer {
  void operator()(nvjpeg_abi::Handle handle) const { static_cast<void>(nvjpeg().destroy(handle)); }
};
using HandleOwner = std::unique_ptr<nvjpeg_abi::LibraryHandle, HandleDestroyer>;

}  // namespace fovea::io::detail

#define FOVEA_NVJPEG_TRY(call)                                                                         \
  FOVEA_LIBRARY_TRY(::fovea::StatusCode::kDeviceError, "nvJPEG", call, ::fovea::io::detail::nvjpeg_ok, \
                    ::fovea::io::detail::nvjpeg_status_name)

#endif
