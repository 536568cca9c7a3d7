#include "core/status.h"

namespace fovea {

std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kAlreadyExists: return "already exists";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kCorruptData: return "corrupt data";
    case StatusCode::kResourceExhausted: return "resource exhausted";
    case StatusCode::kTimeout: return "timeout";
    case StatusCode::kCancelled: return "cancelled";
    case StatusCode::kDeviceError: return "device error";
    case StatusCode::kIoError: return "I/O error";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

Status Status::with_context(std::string_view context) const {
  if (is_ok()) {
    return *this;
  }
  std::string message(context);
  message.append(": ").append(message_);
  return Status(code_, std::move(message));
}

std::string Status::to_string() const {
  if (is_ok()) {
    return "ok";
  }
  std::string text(status_code_name(code_));
  text.append(": ").append(message_);
  return text;
}

}  // namespace fovea
