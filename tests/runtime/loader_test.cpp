// The loader on good models and on every kind of bad one the issue lists: each error names the
// model, and the node and reason where there is one.
#include <fstream>

#include <gtest/gtest.h>

#include "onnx.pb.h"
#include "runtime/model_builder.h"
#include "runtime/onnx_loader.h"
#include "support/test_media.h"

namespace fovea::runtime::testing {
namespace {

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::path(fovea::testing::test_temp_dir()) / name;
}

// x[N,4] -> Relu -> Add(bias) -> y
ModelBuilder& relu_add_model(ModelBuilder& m) {
  m.input("x", DataType::kFloat32, {-1, 4}).output("y", DataType::kFloat32, {-1, 4});
  m.initializer("bias", Tensor::from_vector<float>(DataType::kFloat32, {4}, {1, 2, 3, 4}));
  m.node("Relu", {"x"}, {"r"}, "relu");
  m.node("Add", {"r", "bias"}, {"y"}, "add");
  return m;
}

void expect_error(const Result<Model>& result, StatusCode code, const std::vector<std::string>& fragments) {
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), code) << result.status().to_string();
  for (const std::string& fragment : fragments) {
    EXPECT_NE(result.status().message().find(fragment), std::string::npos)
        << "'" << fragment << "' missing from: " << result.status().message();
  }
}

TEST(Loader, LoadsAModelWithSymbolicDims) {
  ModelBuilder m;
  const auto path = relu_add_model(m).write(temp_path("relu_add.onnx"));
  auto model = load_onnx(path);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const Graph& g = model->graph;
  ASSERT_EQ(g.inputs.size(), 1u);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(dims_string(*g.value(g.outputs[0]).type.dims), "[N, 4]");
  EXPECT_EQ(model->default_opset, 17);
}

TEST(Loader, MissingFile) {
  expect_error(load_onnx(temp_path("does_not_exist.onnx")), StatusCode::kNotFound, {"does_not_exist.onnx"});
}

TEST(Loader, EmptyAndNonOnnxFiles) {
  const auto empty = temp_path("empty.onnx");
  std::ofstream(empty).close();
  expect_error(load_onnx(empty), StatusCode::kCorruptData, {"empty.onnx", "empty"});
  const auto text = temp_path("text.onnx");
  std::ofstream(text) << "this is not a protobuf at all, just text\n";
  expect_error(load_onnx(text), StatusCode::kCorruptData, {"text.onnx", "not an ONNX model"});
}

TEST(Loader, TruncatedFile) {
  ModelBuilder m;
  relu_add_model(m);
  const std::string bytes = m.serialize();
  const auto path = temp_path("truncated.onnx");
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  auto result = load_onnx(path);
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("truncated.onnx"), std::string::npos) << result.status().message();
}

TEST(Loader, UnsupportedOp) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {2}).output("y", DataType::kFloat32, {2});
  m.node("FancyNewOp", {"x"}, {"y"}, "fancy");
  expect_error(parse_onnx(m.serialize(), "m.onnx", "."), StatusCode::kUnsupported,
               {"m.onnx", "node 'fancy'", "FancyNewOp", "unsupported op"});
}

TEST(Loader, UnsupportedOpsetAndIrVersion) {
  ModelBuilder future_opset(22);
  relu_add_model(future_opset);
  expect_error(parse_onnx(future_opset.serialize(), "m.onnx", "."), StatusCode::kUnsupported,
               {"opset 22", "1-21"});
  ModelBuilder new_ir(17, 11);
  relu_add_model(new_ir);
  expect_error(parse_onnx(new_ir.serialize(), "m.onnx", "."), StatusCode::kUnsupported, {"IR version 11"});
}

TEST(Loader, UnsupportedAttributeValue) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {1, 1, 4, 4}).output("y", DataType::kFloat32, {1, 1, 4, 4});
  m.initializer("w", Tensor::allocate(DataType::kFloat32, {1, 1, 3, 3}));
  auto& conv = m.node("Conv", {"x", "w"}, {"y"}, "conv1");
  m.attr(conv, "auto_pad", std::string("SOMETIMES"));
  expect_error(parse_onnx(m.serialize(), "m.onnx", "."), StatusCode::kInvalidArgument,
               {"node 'conv1'", "SOMETIMES"});
}

TEST(Loader, MissingInitializer) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {4}).output("y", DataType::kFloat32, {4});
  m.node("Add", {"x", "bias"}, {"y"}, "add");
  expect_error(parse_onnx(m.serialize(), "m.onnx", "."), StatusCode::kNotFound, {"node 'add'", "'bias'"});
}

TEST(Loader, TypeMismatch) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {4}).output("y", DataType::kFloat32, {4});
  m.initializer("bias", Tensor::from_vector<std::int64_t>(DataType::kInt64, {4}, {1, 2, 3, 4}));
  m.node("Add", {"x", "bias"}, {"y"}, "add");
  expect_error(parse_onnx(m.serialize(), "m.onnx", "."), StatusCode::kInvalidArgument,
               {"node 'add'", "type mismatch"});
}

TEST(Loader, DeclaredOutputTypeMismatch) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {4}).output("y", DataType::kInt64, {4});
  m.node("Relu", {"x"}, {"y"}, "relu");
  expect_error(parse_onnx(m.serialize(), "m.onnx", "."), StatusCode::kInvalidArgument,
               {"type mismatch", "int64"});
}

TEST(Loader, Cycle) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {4}).output("y", DataType::kFloat32, {4});
  m.node("Add", {"x", "b"}, {"a"}, "first");
  m.node("Relu", {"a"}, {"b"}, "second");
  m.node("Relu", {"a"}, {"y"}, "third");
  expect_error(parse_onnx(m.serialize(), "m.onnx", "."), StatusCode::kCorruptData, {"cycle"});
}

TEST(Loader, DimensionOver2To31) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {4}).output("y", DataType::kFloat32, {4});
  m.external_initializer("huge", DataType::kFloat32, {std::int64_t{1} << 32}, "weights.bin", 0);
  m.node("Relu", {"x"}, {"y"});
  expect_error(parse_onnx(m.serialize(), "m.onnx", "."), StatusCode::kUnsupported, {"'huge'", "over 2^31"});
}

TEST(Loader, TotalTensorBytesOverTheLimit) {
  ModelBuilder m;
  relu_add_model(m);
  LoadOptions options;
  options.max_total_tensor_bytes = 8;  // the bias alone is 16 bytes
  expect_error(parse_onnx(m.serialize(), "m.onnx", ".", options), StatusCode::kResourceExhausted,
               {"'bias'", "limit"});
}

TEST(Loader, ExternalData) {
  const auto dir = std::filesystem::path(fovea::testing::test_temp_dir()) / "external";
  std::filesystem::create_directories(dir);
  const std::vector<float> values = {0.5f, -1.5f, 2.5f, 4.0f};
  {
    std::ofstream data(dir / "weights.bin", std::ios::binary);
    data << "padding!";  // the tensor starts at offset 8
    data.write(reinterpret_cast<const char*>(values.data()), sizeof(float) * values.size());
  }
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {4}).output("y", DataType::kFloat32, {4});
  m.external_initializer("bias", DataType::kFloat32, {4}, "weights.bin", 8);
  m.node("Add", {"x", "bias"}, {"y"});
  auto model = load_onnx(m.write(dir / "model.onnx"));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const Tensor& bias = *model->graph.value(model->graph.find_value("bias")).constant;
  EXPECT_EQ(bias.data<float>()[1], -1.5f);
  EXPECT_EQ(bias.data<float>()[3], 4.0f);
}

TEST(Loader, ExternalDataMustStayInTheModelFolder) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {4}).output("y", DataType::kFloat32, {4});
  m.external_initializer("bias", DataType::kFloat32, {4}, "../../etc/passwd", 0);
  m.node("Add", {"x", "bias"}, {"y"});
  expect_error(parse_onnx(m.serialize(), "m.onnx", "."), StatusCode::kCorruptData,
               {"'bias'", "inside the model"});
}

// Checked after symbolic links are resolved: a link inside the folder must not reach a file outside
// it. A path that only passes through a subfolder and back stays inside and is read.
TEST(Loader, ExternalDataThroughALinkOutOfTheFolderIsRefused) {
  const auto root = std::filesystem::path(fovea::testing::test_temp_dir()) / "linked";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "model" / "sub");
  const float values[4] = {1, 2, 3, 4};
  std::ofstream(root / "outside.bin", std::ios::binary).write(reinterpret_cast<const char*>(values), 16);
  std::ofstream(root / "model" / "w.bin", std::ios::binary).write(reinterpret_cast<const char*>(values), 16);
  std::filesystem::create_symlink(root / "outside.bin", root / "model" / "link.bin");
  for (const auto& [location, inside] : {std::pair{"link.bin", false}, std::pair{"sub/../w.bin", true}}) {
    ModelBuilder m;
    m.input("x", DataType::kFloat32, {4}).output("y", DataType::kFloat32, {4});
    m.external_initializer("bias", DataType::kFloat32, {4}, location, 0);
    m.node("Add", {"x", "bias"}, {"y"});
    const auto model = load_onnx(m.write(root / "model" / "model.onnx"));
    if (inside) {
      EXPECT_TRUE(model.is_ok()) << location << ": " << model.status().to_string();
    } else {
      expect_error(model, StatusCode::kCorruptData, {"'bias'", "inside the model's folder"});
    }
  }
}

TEST(Loader, ExternalDataFileTooShort) {
  const auto dir = std::filesystem::path(fovea::testing::test_temp_dir()) / "short";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "w.bin", std::ios::binary) << "tiny";
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {4}).output("y", DataType::kFloat32, {4});
  m.external_initializer("bias", DataType::kFloat32, {4}, "w.bin", 0);
  m.node("Add", {"x", "bias"}, {"y"});
  expect_error(load_onnx(m.write(dir / "model.onnx")), StatusCode::kCorruptData, {"'bias'", "too short"});
}

TEST(Loader, RawDataSizeMismatch) {
  ModelBuilder m;
  relu_add_model(m);
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(m.serialize()));
  proto.mutable_graph()->mutable_initializer(0)->mutable_raw_data()->resize(3);
  expect_error(parse_onnx(proto.SerializeAsString(), "m.onnx", "."), StatusCode::kCorruptData,
               {"'bias'", "raw_data"});
}

// TensorProto's typed fields (no raw_data), as older exporters and the ONNX test data write them.
onnx::TensorProto typed_tensor(onnx::TensorProto_DataType type, std::int64_t count) {
  onnx::TensorProto proto;
  proto.set_name("t");
  proto.set_data_type(type);
  proto.add_dims(count);
  return proto;
}

Result<Tensor> parse_typed(const onnx::TensorProto& proto) {
  return parse_onnx_tensor(proto.SerializeAsString(), "t.pb");
}

TEST(Loader, TypedFieldsDecodeIntoTheirElementTypes) {
  auto floats = typed_tensor(onnx::TensorProto_DataType_FLOAT, 2);
  floats.add_float_data(1.5f);
  floats.add_float_data(-2.0f);
  auto f = parse_typed(floats);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->data<float>()[1], -2.0f);

  auto int8s = typed_tensor(onnx::TensorProto_DataType_INT8, 2);
  int8s.add_int32_data(-128);
  int8s.add_int32_data(127);
  auto i8 = parse_typed(int8s);
  ASSERT_TRUE(i8.is_ok()) << i8.status().to_string();
  EXPECT_EQ(i8->data<std::int8_t>()[0], -128);

  auto halves = typed_tensor(onnx::TensorProto_DataType_FLOAT16, 1);
  halves.add_int32_data(0x3c00);  // 1.0
  auto h = parse_typed(halves);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(half_to_float(h->data<Half>()[0]), 1.0f);
}

TEST(Loader, TypedFieldOfTheWrongKindIsRefused) {
  // Found by the fuzzer: float_data on an int8 tensor used to be cast, out of range, to int8.
  auto proto = typed_tensor(onnx::TensorProto_DataType_INT8, 1);
  proto.add_float_data(-27058.2f);
  auto result = parse_typed(proto);
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), StatusCode::kCorruptData);
  EXPECT_NE(result.status().message().find("float_data cannot hold int8"), std::string::npos)
      << result.status().message();
}

TEST(Loader, TypedValueOutOfRangeIsRefused) {
  auto uint8s = typed_tensor(onnx::TensorProto_DataType_UINT8, 2);
  uint8s.add_int32_data(7);
  uint8s.add_int32_data(300);
  auto result = parse_typed(uint8s);
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("value 300 at index 1 does not fit uint8"), std::string::npos)
      << result.status().message();

  auto bools = typed_tensor(onnx::TensorProto_DataType_BOOL, 1);
  bools.add_int32_data(2);
  EXPECT_FALSE(parse_typed(bools).is_ok());
}

}  // namespace
}  // namespace fovea::runtime::testing
