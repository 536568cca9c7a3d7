#include "io/nvjpeg_library.h"

#if defined(FOVEA_HAVE_CUDA)

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <array>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"

namespace fovea::io::detail {
namespace {

namespace abi = nvjpeg_abi;

// Tried in this order: the CUDA 13 toolkit's, CUDA 12's, then whatever the unversioned name finds.
constexpr std::array<const char*, 3> kLibraryNames = {"libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so"};

// dlsym's object pointer into a function pointer type; memcpy, as ISO C++ has no cast between them.
template <typename Fn>
Fn symbol(void* library, const char* name) {
  void* address = dlsym(library, name);
  Fn function = nullptr;
  static_assert(sizeof(function) == sizeof(address));
  std::memcpy(&function, &address, sizeof(function));
  return function;
}

void* open_library(std::string* tried) {
  for (const char* name : kLibraryNames) {
    if (void* library = dlopen(name, RTLD_NOW | RTLD_LOCAL); library != nullptr) return library;
    const char* error = dlerror();
    tried->append(tried->empty() ? "" : "; ").append(error != nullptr ? error : name);
  }
  return nullptr;
}

// Binds entry points by name, collecting the names that are missing.
class Binder {
 public:
  explicit Binder(void* library) : library_(library) {}
  template <typename Fn>
  void operator()(Fn* function, const char* name) {
    *function = symbol<Fn>(library_, name);
    if (*function == nullptr) missing_.append(missing_.empty() ? "" : ", ").append(name);
  }
  // ok, or kUnsupported: "<what> unavailable: the loaded libnvjpeg lacks <names>"; starts over.
  Status take_status(std::string_view what) {
    const std::string missing = std::exchange(missing_, {});
    if (missing.empty()) return Status::ok();
    return make_error(StatusCode::kUnsupported, what, " unavailable: the loaded libnvjpeg lacks ", missing);
  }

 private:
  void* library_;
  std::string missing_;
};

NvjpegLibrary load_nvjpeg_library() {
  NvjpegLibrary lib;
  std::string tried;
  void* library = open_library(&tried);
  if (library == nullptr) {
    lib.status = make_error(StatusCode::kUnsupported, "nvJPEG unavailable: ", tried);
    lib.encoder_status = lib.status;
    return lib;
  }
  Binder bind(library);
  bind(&lib.create_ex, "nvjpegCreateEx");
  bind(&lib.destroy, "nvjpegDestroy");
  bind(&lib.jpeg_state_create, "nvjpegJpegStateCreate");
  bind(&lib.jpeg_state_destroy, "nvjpegJpegStateDestroy");
  bind(&lib.decode, "nvjpegDecode");
  bind(&lib.decode_batched_initialize, "nvjpegDecodeBatchedInitialize");
  bind(&lib.decode_batched, "nvjpegDecodeBatched");
  lib.status = bind.take_status("nvJPEG");
  lib.get_hardware_decoder_info =
      symbol<abi::GetHardwareDecoderInfoFn>(library, "nvjpegGetHardwareDecoderInfo");
  bind(&lib.encoder_state_create, "nvjpegEncoderStateCreate");
  bind(&lib.encoder_state_destroy, "nvjpegEncoderStateDestroy");
  bind(&lib.encoder_params_create, "nvjpegEncoderParamsCreate");
  bind(&lib.encoder_params_destroy, "nvjpegEncoderParamsDestroy");
  bind(&lib.encoder_params_set_quality, "nvjpegEncoderParamsSetQuality");
  bind(&lib.encoder_params_set_sampling_factors, "nvjpegEncoderParamsSetSamplingFactors");
  bind(&lib.encode_image, "nvjpegEncodeImage");
  bind(&lib.encode_retrieve_bitstream, "nvjpegEncodeRetrieveBitstream");
  lib.encoder_status = lib.status.is_ok() ? bind.take_status("nvJPEG encoder") : lib.status;
  return lib;
}

}  // namespace

const NvjpegLibrary& nvjpeg() {
  static const NvjpegLibrary library = load_nvjpeg_library();
  return library;
}

Status use_nvjpeg_device(int device, std::string_view what) {
  const int devices = cuda_device_count();
  if (devices == 0) return make_error(StatusCode::kUnsupported, what, " unavailable: no CUDA device");
  if (device < 0 || device >= devices) {
    return make_error(StatusCode::kNotFound,
                      fmt::format("CUDA device {} does not exist ({} present)", device, devices));
  }
  FOVEA_CUDA_TRY(cudaSetDevice(device));
  return Status::ok();
}

std::string_view nvjpeg_status_name(abi::Status status) {
  switch (status) {
    case abi::kStatusSuccess: return "NVJPEG_STATUS_SUCCESS";
    case abi::kStatusNotInitialized: return "NVJPEG_STATUS_NOT_INITIALIZED";
    case abi::kStatusInvalidParameter: return "NVJPEG_STATUS_INVALID_PARAMETER";
    case abi::kStatusBadJpeg: return "NVJPEG_STATUS_BAD_JPEG";
    case abi::kStatusJpegNotSupported: return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case abi::kStatusAllocatorFailure: return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case abi::kStatusExecutionFailed: return "NVJPEG_STATUS_EXECUTION_FAILED";
    case abi::kStatusArchMismatch: return "NVJPEG_STATUS_ARCH_MISMATCH";
    case abi::kStatusInternalError: return "NVJPEG_STATUS_INTERNAL_ERROR";
    case abi::kStatusImplementationNotSupported: return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case abi::kStatusIncompleteBitstream: return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
  }
  return "unknown nvJPEG status";
}

}  // namespace fovea::io::detail

#endif
