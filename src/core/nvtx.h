// NVTX ranges in domain "fovea", visible in Nsight Systems and to fovea's own tracer.
// Compiles to nothing without CUDA.
//
//   FOVEA_NVTX_RANGE("decode");   // the range lasts until the end of the enclosing scope
#pragma once

#if defined(FOVEA_HAVE_CUDA)
#include <nvtx3/nvToolsExt.h>

namespace fovea {

struct NvtxDomainTag {
  static constexpr const char* name = "fovea";
};

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name;
    nvtxDomainRangePushEx(domain(), &attributes);
  }
  ~NvtxRange() { nvtxDomainRangePop(domain()); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  static nvtxDomainHandle_t domain() {
    static nvtxDomainHandle_t handle = nvtxDomainCreateA(NvtxDomainTag::name);
    return handle;
  }
};

}  // namespace fovea

#define FOVEA_NVTX_RANGE(name) ::fovea::NvtxRange FOVEA_CONCAT(fovea_nvtx_, __LINE__)(name)
#else
#define FOVEA_NVTX_RANGE(name) static_cast<void>(0)
#endif
