// Status and Result<T>: how fovea reports failures whose cause lies outside the program (files,
// models, configs, devices, memory). Broken invariants use FOVEA_CHECK instead (core/check.h).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace fovea {

enum class StatusCode {
  kOk,
  kInvalidArgument,    // the caller or the user asked for something malformed
  kNotFound,           // a file, stream, key or device does not exist
  kAlreadyExists,      // a name that must be unique is taken (a source id)
  kUnsupported,        // well-formed, but fovea (or the hardware) cannot do it
  kCorruptData,        // the input is damaged or is not what it claims to be
  kResourceExhausted,  // memory, pool capacity or a configured limit
  kTimeout,            // a deadline passed (network sources, queues)
  kCancelled,          // the user asked to stop (Ctrl-C)
  kDeviceError,        // CUDA, NVDEC, cuDNN, cuBLAS reported a failure
  kIoError,            // reading or writing failed for a reason other than the above
  kInternal,           // a library returned something fovea does not understand
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prepends context ("file.mp4: ") so the outermost caller can name what failed.
  Status with_context(std::string_view context) const;
  // "kind: message", for logs and the CLI.
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename... Parts>
Status make_error(StatusCode code, Parts&&... parts) {
  std::string message;
  (message.append(std::forward<Parts>(parts)), ...);
  return Status(code, std::move(message));
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : storage_(std::move(value)) {}
  Result(Status status) : storage_(std::move(status)) {}

  bool is_ok() const { return std::holds_alternative<T>(storage_); }
  const Status& status() const;
  T& value() & { return std::get<T>(storage_); }
  const T& value() const& { return std::get<T>(storage_); }
  T&& value() && { return std::get<T>(std::move(storage_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::variant<T, Status> storage_;
};

template <typename T>
const Status& Result<T>::status() const {
  static const Status kOkStatus;
  return is_ok() ? kOkStatus : std::get<Status>(storage_);
}

}  // namespace fovea

#define FOVEA_CONCAT_INNER(a, b) a##b
#define FOVEA_CONCAT(a, b) FOVEA_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` (a Status) is not ok.
#define FOVEA_TRY(expr)                         \
  do {                                          \
    ::fovea::Status fovea_try_status_ = (expr); \
    if (!fovea_try_status_.is_ok()) {           \
      return fovea_try_status_;                 \
    }                                           \
  } while (0)

// `FOVEA_ASSIGN_OR_RETURN(auto x, make_x());` declares x from a Result or returns its Status.
#define FOVEA_ASSIGN_OR_RETURN(lhs, expr) \
  FOVEA_ASSIGN_OR_RETURN_IMPL(FOVEA_CONCAT(fovea_result_, __LINE__), lhs, expr)
#define FOVEA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.is_ok()) {                               \
    return tmp.status();                            \
  }                                                 \
  lhs = std::move(tmp).value()
