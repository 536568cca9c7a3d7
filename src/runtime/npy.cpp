#include "runtime/npy.h"

#include <cstring>
#include <fstream>
#include <string_view>

#include <fmt/format.h>

#include "core/input_file.h"
#include "core/output_file.h"

namespace fovea::runtime {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLength = 6;

struct Descr {
  const char* code;
  DataType dtype;
};
// '<' little-endian, '|' byte-sized (no byte order); fovea runs on little-endian hosts only.
constexpr Descr kDescrs[] = {{"<f4", DataType::kFloat32}, {"<f8", DataType::kFloat64},
                             {"<f2", DataType::kFloat16}, {"<i8", DataType::kInt64},
                             {"<i4", DataType::kInt32},   {"|i1", DataType::kInt8},
                             {"|u1", DataType::kUInt8},   {"|b1", DataType::kBool}};

Result<DataType> dtype_of(const std::string& descr, const std::string& where) {
  for (const Descr& d : kDescrs) {
    if (descr == d.code) return d.dtype;
  }
  return make_error(StatusCode::kUnsupported, where, ": unsupported dtype '", descr,
                    "' (fovea reads little-endian float16/32/64, int8/32/64, uint8 and bool)");
}

// The text after `'key':` in the header dict, with leading spaces skipped; empty when absent.
std::string_view header_value(std::string_view header, std::string_view key) {
  std::string quoted(1, '\'');
  quoted.append(key).append("':");
  const auto at = header.find(quoted);
  if (at == std::string_view::npos) return {};
  std::string_view rest = header.substr(at + quoted.size());
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest;
}

Result<Shape> parse_shape(std::string_view text, const std::string& where) {
  // "(1, 3, 224, 224), }" -> the digits between the parentheses
  if (text.empty() || text.front() != '(' || text.find(')') == std::string_view::npos) {
    return make_error(StatusCode::kCorruptData, where, ": header has no 'shape' tuple");
  }
  Shape shape;
  std::string digits;
  for (char c : text.substr(1, text.find(')') - 1)) {
    if (c >= '0' && c <= '9') {
      digits.push_back(c);
      continue;
    }
    if (c != ',' && c != ' ' && c != 'L') {
      return make_error(StatusCode::kCorruptData, where, ": unexpected '", std::string(1, c),
                        "' in the shape");
    }
    if (!digits.empty()) {
      if (digits.size() > 12) {
        return make_error(StatusCode::kCorruptData, where, ": dimension ", digits, " is implausibly large");
      }
      shape.push_back(std::stoll(digits));
      digits.clear();
    }
  }
  if (!digits.empty()) {
    if (digits.size() > 12) {
      return make_error(StatusCode::kCorruptData, where, ": dimension ", digits, " is implausibly large");
    }
    shape.push_back(std::stoll(digits));
  }
  return shape;
}

// The array's bytes, or an error when the dimensions' product overflows (a crafted header can
// claim 2^64 elements whose byte count wraps to the few bytes the file has).
Result<std::uintmax_t> data_bytes(const Shape& shape, DataType dtype, const std::string& where) {
  std::uint64_t bytes = data_type_size(dtype);
  for (const std::int64_t dim : shape) {
    if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(dim), &bytes)) {
      return make_error(StatusCode::kCorruptData, where, ": the shape ", shape_string(shape),
                        " has more elements than any file can hold");
    }
  }
  return bytes;
}

}  // namespace

Result<Tensor> read_npy(const std::filesystem::path& path) {
  const std::string where = path.string();
  // Not a FIFO or a device, which would block or stream without end.
  FOVEA_TRY(regular_file_size(path, ".npy file").status());
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return make_error(StatusCode::kNotFound, where, ": cannot open");
  }
  char preamble[10] = {};
  file.read(preamble, 8);
  if (!file || std::memcmp(preamble, kMagic, kMagicLength) != 0) {
    return make_error(StatusCode::kCorruptData, where, ": not a .npy file (bad magic)");
  }
  const int major = static_cast<unsigned char>(preamble[6]);
  std::uint32_t header_length = 0;
  if (major == 1) {
    unsigned char len[2];
    file.read(reinterpret_cast<char*>(len), 2);
    header_length = len[0] | (len[1] << 8u);
  } else if (major == 2 || major == 3) {
    unsigned char len[4];
    file.read(reinterpret_cast<char*>(len), 4);
    header_length = len[0] | (len[1] << 8u) | (len[2] << 16u) | (static_cast<std::uint32_t>(len[3]) << 24u);
  } else {
    return make_error(StatusCode::kUnsupported, where, ": .npy format version ", std::to_string(major));
  }
  if (!file || header_length > (1u << 20)) {
    return make_error(StatusCode::kCorruptData, where, ": truncated or oversized header");
  }
  std::string header(header_length, '\0');
  file.read(header.data(), header_length);
  if (!file) return make_error(StatusCode::kCorruptData, where, ": the header is cut short");
  const std::string_view descr = header_value(header, "descr");
  if (descr.starts_with("[")) {
    return make_error(StatusCode::kUnsupported, where,
                      ": a structured dtype (a record of fields) is not supported; save a plain array");
  }
  if (descr.size() < 2 || descr.front() != '\'' || descr.find('\'', 1) == std::string_view::npos) {
    return make_error(StatusCode::kCorruptData, where, ": header has no 'descr'");
  }
  FOVEA_ASSIGN_OR_RETURN(DataType dtype,
                         dtype_of(std::string(descr.substr(1, descr.find('\'', 1) - 1)), where));
  const std::string_view fortran_order = header_value(header, "fortran_order");
  if (fortran_order.starts_with("True")) {
    return make_error(StatusCode::kUnsupported, where,
                      ": Fortran-ordered arrays are not supported (save C order)");
  }
  if (!fortran_order.starts_with("False")) {
    return make_error(StatusCode::kCorruptData, where,
                      ": header's 'fortran_order' is neither True nor False");
  }
  FOVEA_ASSIGN_OR_RETURN(Shape shape, parse_shape(header_value(header, "shape"), where));
  std::error_code ec;
  const auto file_size = std::filesystem::file_size(path, ec);
  const auto data_start = static_cast<std::uintmax_t>(file.tellg());
  FOVEA_ASSIGN_OR_RETURN(const std::uintmax_t expected, data_bytes(shape, dtype, where));
  if (ec || file_size < data_start || file_size - data_start != expected) {
    return make_error(StatusCode::kCorruptData, where, ": holds ", std::to_string(file_size - data_start),
                      " data bytes, expected ", std::to_string(expected), " for ", shape_string(shape));
  }
  Tensor tensor = Tensor::allocate(dtype, std::move(shape));
  file.read(static_cast<char*>(tensor.raw()), static_cast<std::streamsize>(tensor.bytes()));
  if (!file && tensor.bytes() > 0) {
    return make_error(StatusCode::kIoError, where, ": read failed");
  }
  return tensor;
}

Status write_npy(const std::filesystem::path& path, const Tensor& tensor) {
  const char* code = nullptr;
  for (const Descr& d : kDescrs) {
    if (d.dtype == tensor.dtype()) code = d.code;
  }
  FOVEA_CHECK(code != nullptr);
  std::string shape = fmt::format("{}", fmt::join(tensor.shape(), ", "));
  if (tensor.rank() == 1) shape += ",";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", code, shape);
  // Version 1.0: magic, version, 2-byte length; the data starts at a multiple of 64 bytes.
  const std::size_t unpadded = kMagicLength + 2 + 2 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  // Streamed (tensors can be large) into a temporary file, renamed into place when complete.
  PendingFile pending(path);
  std::ofstream file(pending.partial(), std::ios::binary | std::ios::trunc);
  if (!file) {
    return make_error(StatusCode::kIoError, path.string(), ": cannot create");
  }
  file.write(kMagic, kMagicLength);
  const char version[2] = {1, 0};
  file.write(version, 2);
  const char length[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  file.write(length, 2);
  file.write(header.data(), static_cast<std::streamsize>(header.size()));
  file.write(static_cast<const char*>(tensor.raw()), static_cast<std::streamsize>(tensor.bytes()));
  file.close();
  if (!file) {
    return make_error(StatusCode::kIoError, path.string(), ": write failed");
  }
  return pending.commit();
}

}  // namespace fovea::runtime
