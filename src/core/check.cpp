#include "core/check.h"

#include <cstdio>
#include <cstdlib>

#include "core/library_error.h"

namespace fovea {
namespace detail {

void check_failed(const char* condition, const char* file, int line, const char* message) {
  std::fprintf(stderr, "fovea: internal check failed: %s at %s:%d%s%s\n", condition, file, line,
               message ? ": " : "", message ? message : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace detail

Status library_error(StatusCode code, std::string_view library, std::string_view call, const char* file,
                     int line, std::string_view library_message, long long library_code) {
  std::string text(library);
  text.append(": ").append(call).append(" failed at ").append(file).append(":");
  text.append(std::to_string(line)).append(": ").append(library_message);
  text.append(" (code ").append(std::to_string(library_code)).append(")");
  return Status(code, std::move(text));
}

}  // namespace fovea
