// The error macro family: one shape for every C library fovea calls (CUDA runtime and driver,
// NVDEC, cuDNN, cuBLAS, FFmpeg). Each library gets a thin macro next to the code that links it,
// built on FOVEA_LIBRARY_TRY, so the resulting Status always carries the library's name, the
// call's text, file:line and the library's own message.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace fovea {

// "CUDA runtime: cudaMalloc(&p, n) failed at src/core/pool.cpp:42: out of memory (code 2)"
Status library_error(StatusCode code, std::string_view library, std::string_view call, const char* file,
                     int line, std::string_view library_message, long long library_code);

}  // namespace fovea

// `call` is evaluated once; `is_ok(result)` tells success and `describe(result)` gives the
// library's message as something convertible to std::string_view.
#define FOVEA_LIBRARY_TRY(code, library, call, is_ok, describe)                                              \
  do {                                                                                                       \
    const auto fovea_lib_result_ = (call);                                                                   \
    if (!(is_ok(fovea_lib_result_))) {                                                                       \
      return ::fovea::library_error((code), (library), #call, __FILE__, __LINE__,                            \
                                    describe(fovea_lib_result_), static_cast<long long>(fovea_lib_result_)); \
    }                                                                                                        \
  } while (0)
