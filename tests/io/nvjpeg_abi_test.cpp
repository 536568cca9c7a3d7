// io/nvjpeg_abi.h against NVIDIA's nvjpeg.h, wherever the toolkit has it (the GPU machine's does):
// every enum value, the output struct's layout and every function type. A wrong value would be a
// silent bug there, so the build fails instead. Without the header the test says it is skipped.
#include <gtest/gtest.h>

#include <cstddef>
#include <type_traits>

#include "io/nvjpeg_abi.h"

#if defined(FOVEA_HAVE_CUDA) && __has_include(<nvjpeg.h>)
#include <nvjpeg.h>
#define FOVEA_HAVE_NVJPEG_HEADER 1
#endif

namespace fovea::io::nvjpeg_abi {
namespace {

#if defined(FOVEA_HAVE_NVJPEG_HEADER)

// Each of fovea's ABI types, mapped to nvjpeg.h's: a function type whose parameters are rewritten
// this way must be the real function's type exactly.
template <typename T>
struct Real {
  using type = T;
};
template <>
struct Real<Status> {
  using type = nvjpegStatus_t;
};
template <>
struct Real<Backend> {
  using type = nvjpegBackend_t;
};
template <>
struct Real<OutputFormat> {
  using type = nvjpegOutputFormat_t;
};
template <>
struct Real<InputFormat> {
  using type = nvjpegInputFormat_t;
};
template <>
struct Real<ChromaSubsampling> {
  using type = nvjpegChromaSubsampling_t;
};
template <>
struct Real<EncoderState> {
  using type = nvjpegEncoderState_t;
};
template <>
struct Real<EncoderParams> {
  using type = nvjpegEncoderParams_t;
};
template <>
struct Real<Image> {
  using type = nvjpegImage_t;
};
template <>
struct Real<Handle> {
  using type = nvjpegHandle_t;
};
template <>
struct Real<JpegState> {
  using type = nvjpegJpegState_t;
};
template <>
struct Real<DeviceAllocator> {
  using type = nvjpegDevAllocator_t;
};
template <>
struct Real<PinnedAllocator> {
  using type = nvjpegPinnedAllocator_t;
};
template <typename T>
struct Real<T*> {
  using type = typename Real<T>::type*;
};
template <typename T>
struct Real<const T> {
  using type = const typename Real<T>::type;
};
template <typename R, typename... Args>
struct Real<R (*)(Args...)> {
  using type = typename Real<R>::type (*)(typename Real<Args>::type...);
};
template <typename T>
using RealT = typename Real<T>::type;

// Two enumerators of different enum types (ours and NVIDIA's) compared by value: GCC's
// -Wenum-compare rejects comparing them directly.
template <typename A, typename B>
constexpr bool same_value(A ours, B theirs) {
  return static_cast<long long>(ours) == static_cast<long long>(theirs);
}

static_assert(same_value(kStatusSuccess, NVJPEG_STATUS_SUCCESS));
static_assert(same_value(kStatusNotInitialized, NVJPEG_STATUS_NOT_INITIALIZED));
static_assert(same_value(kStatusInvalidParameter, NVJPEG_STATUS_INVALID_PARAMETER));
static_assert(same_value(kStatusBadJpeg, NVJPEG_STATUS_BAD_JPEG));
static_assert(same_value(kStatusJpegNotSupported, NVJPEG_STATUS_JPEG_NOT_SUPPORTED));
static_assert(same_value(kStatusAllocatorFailure, NVJPEG_STATUS_ALLOCATOR_FAILURE));
static_assert(same_value(kStatusExecutionFailed, NVJPEG_STATUS_EXECUTION_FAILED));
static_assert(same_value(kStatusArchMismatch, NVJPEG_STATUS_ARCH_MISMATCH));
static_assert(same_value(kStatusInternalError, NVJPEG_STATUS_INTERNAL_ERROR));
static_assert(same_value(kStatusImplementationNotSupported, NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED));
static_assert(same_value(kStatusIncompleteBitstream, NVJPEG_STATUS_INCOMPLETE_BITSTREAM));
static_assert(sizeof(Status) == sizeof(nvjpegStatus_t));

static_assert(same_value(kBackendDefault, NVJPEG_BACKEND_DEFAULT));
static_assert(same_value(kBackendHybrid, NVJPEG_BACKEND_HYBRID));
static_assert(same_value(kBackendGpuHybrid, NVJPEG_BACKEND_GPU_HYBRID));
static_assert(same_value(kBackendHardware, NVJPEG_BACKEND_HARDWARE));
static_assert(sizeof(Backend) == sizeof(nvjpegBackend_t));

static_assert(same_value(kOutputRgbi, NVJPEG_OUTPUT_RGBI));
static_assert(sizeof(OutputFormat) == sizeof(nvjpegOutputFormat_t));

static_assert(same_value(kInputRgbi, NVJPEG_INPUT_RGBI));
static_assert(sizeof(InputFormat) == sizeof(nvjpegInputFormat_t));
static_assert(same_value(kCss444, NVJPEG_CSS_444));
static_assert(same_value(kCss420, NVJPEG_CSS_420));
static_assert(sizeof(ChromaSubsampling) == sizeof(nvjpegChromaSubsampling_t));

static_assert(same_value(kMaxComponents, NVJPEG_MAX_COMPONENT));
static_assert(sizeof(Image) == sizeof(nvjpegImage_t));
static_assert(offsetof(Image, channel) == offsetof(nvjpegImage_t, channel));
static_assert(offsetof(Image, pitch) == offsetof(nvjpegImage_t, pitch));

static_assert(std::is_same_v<RealT<CreateExFn>, decltype(&nvjpegCreateEx)>);
static_assert(std::is_same_v<RealT<DestroyFn>, decltype(&nvjpegDestroy)>);
static_assert(std::is_same_v<RealT<JpegStateCreateFn>, decltype(&nvjpegJpegStateCreate)>);
static_assert(std::is_same_v<RealT<JpegStateDestroyFn>, decltype(&nvjpegJpegStateDestroy)>);
static_assert(std::is_same_v<RealT<DecodeFn>, decltype(&nvjpegDecode)>);
static_assert(std::is_same_v<RealT<DecodeBatchedInitializeFn>, decltype(&nvjpegDecodeBatchedInitialize)>);
static_assert(std::is_same_v<RealT<DecodeBatchedFn>, decltype(&nvjpegDecodeBatched)>);
static_assert(std::is_same_v<RealT<GetHardwareDecoderInfoFn>, decltype(&nvjpegGetHardwareDecoderInfo)>);
static_assert(std::is_same_v<RealT<EncoderStateCreateFn>, decltype(&nvjpegEncoderStateCreate)>);
static_assert(std::is_same_v<RealT<EncoderStateDestroyFn>, decltype(&nvjpegEncoderStateDestroy)>);
static_assert(std::is_same_v<RealT<EncoderParamsCreateFn>, decltype(&nvjpegEncoderParamsCreate)>);
static_assert(std::is_same_v<RealT<EncoderParamsDestroyFn>, decltype(&nvjpegEncoderParamsDestroy)>);
static_assert(std::is_same_v<RealT<EncoderParamsSetQualityFn>, decltype(&nvjpegEncoderParamsSetQuality)>);
static_assert(std::is_same_v<RealT<EncoderParamsSetSamplingFactorsFn>,
                             decltype(&nvjpegEncoderParamsSetSamplingFactors)>);
static_assert(std::is_same_v<RealT<EncodeImageFn>, decltype(&nvjpegEncodeImage)>);
static_assert(std::is_same_v<RealT<EncodeRetrieveBitstreamFn>, decltype(&nvjpegEncodeRetrieveBitstream)>);

TEST(NvjpegAbi, MatchesTheInstalledHeader) {
  // The checks are the static_asserts above: this build compiled them against nvjpeg.h.
  SUCCEED() << "checked against nvjpeg.h " << NVJPEG_VER_MAJOR << "." << NVJPEG_VER_MINOR;
}

#else

TEST(NvjpegAbi, MatchesTheInstalledHeader) {
  GTEST_SKIP() << "no nvjpeg.h in this build's CUDA toolkit (or no CUDA): nothing to compare the ABI with";
}

#endif

}  // namespace
}  // namespace fovea::io::nvjpeg_abi
