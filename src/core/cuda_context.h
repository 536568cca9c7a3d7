// A CUDA context of fovea's own on a device, beside the runtime's primary context that every other
// fovea GPU object lives in. Only with FOVEA_HAVE_CUDA.
//
// What it buys: a call that synchronizes a whole context (cuMemFree, which nvJPEG's hardware
// decoder makes about once per 40 pictures) waits only for the work of its own context, not for
// the inference queued in the primary one. What it costs: memory of one context is not addressable
// by kernels of the other (copy_to_primary moves it), and the two contexts' kernels never run at
// the same time (the GPU time-slices between contexts, as between processes).
//
// The driver's entry points are found through the runtime (cudaGetDriverEntryPointByVersion), so
// fovea keeps no link-time dependency on libcuda.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <utility>

#include "core/status.h"

struct CUctx_st;

namespace fovea {

class SeparateContext {
 public:
  // The device's separate context, made on first use and shared by every caller of the process
  // until the last owner lets go (a context per caller would only add time slices). kUnsupported
  // naming the driver call that failed.
  static Result<std::shared_ptr<SeparateContext>> shared(int device);

  ~SeparateContext();
  SeparateContext(const SeparateContext&) = delete;
  SeparateContext& operator=(const SeparateContext&) = delete;

  // While a Scope lives, the context is current on the thread that entered it: runtime API calls
  // (cudaMalloc, streams, events, and libraries built on the runtime) then work in it. Leaving
  // restores whatever was current before.
  class Scope {
   public:
    Scope(Scope&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)) {}
    Scope& operator=(Scope&&) = delete;
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope();

   private:
    friend class SeparateContext;
    explicit Scope(const SeparateContext* owner) : owner_(owner) {}
    const SeparateContext* owner_;
  };
  Result<Scope> enter() const;

  // Queues a copy of `height` rows of `row_bytes` from `src` (device memory of this context) to
  // `dst` (device memory of the device's primary context) on `stream`, a primary-context stream.
  // Call it with the primary context current (outside any Scope).
  Status copy_to_primary(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
                         std::size_t row_bytes, std::size_t height, cudaStream_t stream) const;

  int device() const { return device_; }

 private:
  SeparateContext(int device, CUctx_st* context, CUctx_st* primary)
      : device_(device), context_(context), primary_(primary) {}
  int device_;
  CUctx_st* context_;
  CUctx_st* primary_;  // the runtime's, which it keeps alive for the process
};

}  // namespace fovea
