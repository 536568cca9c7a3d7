// The part of nvJPEG's C ABI that fovea calls, declared here because fovea loads libnvjpeg at run
// time (io/nvjpeg_decoder.cpp) and must build where the toolkit has no nvjpeg.h. Written from
// NVIDIA's nvJPEG documentation (docs.nvidia.com/cuda/nvjpeg, "nvJPEG Type Declarations" and "nvJPEG
// API Reference"), every value cross-checked against a second copy of the API (the CUDA 11.6
// nvjpeg.h and the nvjpeg-sys 0.1 bindings). tests/io/nvjpeg_abi_test.cpp compares every name below
// with the real header wherever one is installed: values, struct layout and function types.
//
// Only what fovea uses: the library handle, the decoding state, single and batched decode into
// interleaved RGB, the hardware decoder's engine count, and encoding interleaved RGB into a JPEG
// file (encoder state and parameters: quality and chroma subsampling). Names carry no "nvjpeg" prefix and
// live in their own namespace so the test can see them next to the real ones.
#pragma once

#include <cstddef>

#include "core/cuda_stream.h"

namespace fovea::io::nvjpeg_abi {

// nvjpegStatus_t.
enum Status : int {
  kStatusSuccess = 0,
  kStatusNotInitialized = 1,
  kStatusInvalidParameter = 2,
  kStatusBadJpeg = 3,
  kStatusJpegNotSupported = 4,
  kStatusAllocatorFailure = 5,
  kStatusExecutionFailed = 6,
  kStatusArchMismatch = 7,
  kStatusInternalError = 8,
  kStatusImplementationNotSupported = 9,
  kStatusIncompleteBitstream = 10,
};

// nvjpegBackend_t (the values fovea asks for).
enum Backend : int {
  kBackendDefault = 0,
  kBackendHybrid = 1,     // Huffman decoding on the CPU
  kBackendGpuHybrid = 2,  // Huffman decoding on the GPU
  kBackendHardware = 3,   // the GPU's JPEG engines (A100, H100, H200, ...)
};

// nvjpegOutputFormat_t (the value fovea asks for).
enum OutputFormat : int {
  kOutputRgbi = 5,  // interleaved RGB, written to channel[0] with pitch[0]
};

// nvjpegInputFormat_t (the value fovea encodes from).
enum InputFormat : int {
  kInputRgbi = 5,  // interleaved RGB in channel[0] with pitch[0]
};

// nvjpegChromaSubsampling_t (the values fovea encodes with).
enum ChromaSubsampling : int {
  kCss444 = 0,
  kCss420 = 2,
};

// NVJPEG_MAX_COMPONENT.
inline constexpr int kMaxComponents = 4;

// nvjpegImage_t: where the decoded planes go (device memory).
struct Image {
  unsigned char* channel[kMaxComponents];
  std::size_t pitch[kMaxComponents];
};

// Opaque handles: nvjpegHandle_t, nvjpegJpegState_t; the allocator structs are only passed as null.
struct LibraryHandle;
struct JpegStateHandle;
struct DeviceAllocator;
struct PinnedAllocator;
struct EncoderStateHandle;
struct EncoderParamsHandle;
using Handle = LibraryHandle*;
using JpegState = JpegStateHandle*;
using EncoderState = EncoderStateHandle*;
using EncoderParams = EncoderParamsHandle*;

// The functions, as the pointers dlsym returns are called.
using CreateExFn = Status (*)(Backend backend, DeviceAllocator* dev_allocator,
                              PinnedAllocator* pinned_allocator, unsigned int flags, Handle* handle);
using DestroyFn = Status (*)(Handle handle);
using JpegStateCreateFn = Status (*)(Handle handle, JpegState* state);
using JpegStateDestroyFn = Status (*)(JpegState state);
using DecodeFn = Status (*)(Handle handle, JpegState state, const unsigned char* data, std::size_t length,
                            OutputFormat output_format, Image* destination, cudaStream_t stream);
using DecodeBatchedInitializeFn = Status (*)(Handle handle, JpegState state, int batch_size,
                                             int max_cpu_threads, OutputFormat output_format);
using DecodeBatchedFn = Status (*)(Handle handle, JpegState state, const unsigned char* const* data,
                                   const std::size_t* lengths, Image* destinations, cudaStream_t stream);
using GetHardwareDecoderInfoFn = Status (*)(Handle handle, unsigned int* num_engines,
                                            unsigned int* num_cores_per_engine);
using EncoderStateCreateFn = Status (*)(Handle handle, EncoderState* state, cudaStream_t stream);
using EncoderStateDestroyFn = Status (*)(EncoderState state);
using EncoderParamsCreateFn = Status (*)(Handle handle, EncoderParams* params, cudaStream_t stream);
using EncoderParamsDestroyFn = Status (*)(EncoderParams params);
using EncoderParamsSetQualityFn = Status (*)(EncoderParams params, const int quality, cudaStream_t stream);
using EncoderParamsSetSamplingFactorsFn = Status (*)(EncoderParams params,
                                                     const ChromaSubsampling chroma_subsampling,
                                                     cudaStream_t stream);
using EncodeImageFn = Status (*)(Handle handle, EncoderState state, const EncoderParams params,
                                 const Image* source, InputFormat input_format, int image_width,
                                 int image_height, cudaStream_t stream);
using EncodeRetrieveBitstreamFn = Status (*)(Handle handle, EncoderState state, unsigned char* data,
                                             std::size_t* length, cudaStream_t stream);

}  // namespace fovea::io::nvjpeg_abi
