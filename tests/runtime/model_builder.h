// Writes small ONNX models for the runtime's tests, through the same onnx.proto the loader reads.
// Tests generate their models; none is stored in the repository.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace onnx {
class ModelProto;
class NodeProto;
}  // namespace onnx

namespace fovea::runtime::testing {

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 17, int ir_version = 8);
  ~ModelBuilder();
  ModelBuilder(const ModelBuilder&) = delete;
  ModelBuilder& operator=(const ModelBuilder&) = delete;

  // Dims < 0 are symbolic ("N").
  ModelBuilder& input(const std::string& name, DataType dtype, const std::vector<std::int64_t>& dims);
  ModelBuilder& output(const std::string& name, DataType dtype, const std::vector<std::int64_t>& dims);
  ModelBuilder& initializer(const std::string& name, const Tensor& value);
  // An initializer whose bytes live in `file` (relative to the model) at `offset`.
  ModelBuilder& external_initializer(const std::string& name, DataType dtype,
                                     const std::vector<std::int64_t>& dims, const std::string& file,
                                     std::uint64_t offset);
  onnx::NodeProto& node(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = {});
  ModelBuilder& attr(onnx::NodeProto& node, const std::string& key, std::int64_t value);
  ModelBuilder& attr(onnx::NodeProto& node, const std::string& key, float value);
  ModelBuilder& attr(onnx::NodeProto& node, const std::string& key, const std::vector<std::int64_t>& values);
  ModelBuilder& attr(onnx::NodeProto& node, const std::string& key, const std::vector<float>& values);
  ModelBuilder& attr(onnx::NodeProto& node, const std::string& key, const std::string& value);

  std::string serialize() const;
  std::filesystem::path write(const std::filesystem::path& path) const;

 private:
  std::unique_ptr<onnx::ModelProto> model_;
};

}  // namespace fovea::runtime::testing
