#include <fstream>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "runtime/graph_test_util.h"
#include "runtime/npy.h"
#include "runtime/op_test_util.h"
#include "support/test_media.h"

namespace fovea::runtime::testing {
namespace {

TEST(Planner, AChainReusesTwoBuffers) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {1000}).output("y", DataType::kFloat32, {1000});
  std::string previous = "x";
  for (int i = 0; i < 6; ++i) {
    const std::string next = i == 5 ? std::string("y") : fmt::format("t{}", i);
    m.node(i % 2 ? "Neg" : "Exp", {previous}, {next});
    previous = next;
  }
  const ExecutionPlan plan = plan_for(load_graph(m), {random_tensor(DataType::kFloat32, {1000}, 1)});
  const std::size_t slot = 4096;  // 4000 bytes rounded up to the 256-byte alignment
  EXPECT_EQ(plan.memory.naive_bytes, 5 * slot);
  EXPECT_EQ(plan.memory.arena_bytes, 2 * slot);
}

// Every pair of arena values alive at the same time occupies disjoint bytes.
TEST(Planner, LiveValuesNeverOverlap) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {7, 13}).output("y", DataType::kFloat32, {7, 13});
  m.node("Exp", {"x"}, {"a"});
  m.node("Neg", {"x"}, {"b"});
  m.node("Relu", {"a"}, {"c"});
  m.node("Add", {"b", "c"}, {"d"});
  m.node("Mul", {"d", "a"}, {"e"});
  m.node("Sub", {"e", "b"}, {"y"});
  const Graph graph = load_graph(m);
  const std::vector<Tensor> inputs = {random_tensor(DataType::kFloat32, {7, 13}, 2)};
  const ExecutionPlan plan = plan_for(graph, inputs);
  const Graph& g = plan.graph;
  std::vector<int> first(g.values.size(), -1), last(g.values.size(), -1);
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    for (ValueId out : g.nodes[n].outputs) first[static_cast<std::size_t>(out)] = static_cast<int>(n);
    for (ValueId in : g.nodes[n].inputs) last[static_cast<std::size_t>(in)] = static_cast<int>(n);
  }
  int placed = 0;
  for (std::size_t a = 0; a < g.values.size(); ++a) {
    if (plan.memory.offsets[a] < 0) continue;
    ++placed;
    for (std::size_t b = a + 1; b < g.values.size(); ++b) {
      if (plan.memory.offsets[b] < 0) continue;
      const bool live_together = first[a] <= last[b] && first[b] <= last[a];
      const auto a0 = static_cast<std::size_t>(plan.memory.offsets[a]);
      const auto b0 = static_cast<std::size_t>(plan.memory.offsets[b]);
      const bool overlap = a0 < b0 + plan.memory.bytes[b] && b0 < a0 + plan.memory.bytes[a];
      EXPECT_FALSE(live_together && overlap) << g.values[a].name << " and " << g.values[b].name;
    }
  }
  EXPECT_EQ(placed, 5);
  EXPECT_LT(plan.memory.arena_bytes, plan.memory.naive_bytes);
  CpuExecutor executor(plan);
  auto outputs = executor.run(inputs);
  ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
  EXPECT_TRUE(tensors_near((*outputs)[0], run_unoptimized(graph, inputs)[0]));
  EXPECT_EQ(executor.dynamic_allocations(), 0);
}

TEST(Planner, ShapeThatContradictsTheModelIsAnError) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {-1, 3}).output("y", DataType::kFloat32, {-1, 3});
  m.node("Relu", {"x"}, {"y"});
  auto plan = plan_graph(load_graph(m), InputShapes{{"x", {2, 4}}});
  ASSERT_FALSE(plan.is_ok());
  EXPECT_NE(plan.status().message().find("'x'"), std::string::npos) << plan.status().message();
}

// A shape given for an input (`--shape`) that its declared dims refuse is an error naming the input
// before planning, so the command line's fault is told apart from the model's.
TEST(Planner, GivenShapesAreCheckedAgainstTheDeclaredDims) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {-1, 3, -1}).output("y", DataType::kFloat32, {-1, 3, -1});
  m.node("Relu", {"x"}, {"y"});
  const Graph graph = load_graph(m);
  for (const Shape& wrong : {Shape{2, 3}, Shape{2, 4, 5}, Shape{1, 3, 5, 1}}) {
    const Result<InputShapes> shapes = resolve_input_shapes(graph, InputShapes{{"x", wrong}}, 1);
    ASSERT_FALSE(shapes.is_ok()) << shape_string(wrong);
    EXPECT_EQ(shapes.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(shapes.status().message().find("input 'x' is declared [N, 3, N]"), std::string::npos)
        << shapes.status().message();
  }
  const Result<InputShapes> shapes = resolve_input_shapes(graph, InputShapes{{"x", {2, 3, 5}}}, 1);
  ASSERT_TRUE(shapes.is_ok()) << shapes.status().to_string();
  EXPECT_EQ(shapes->at("x"), (Shape{2, 3, 5}));
}

// Found by the loader's fuzzer: folding a Shape (or Size) of a float16 input read the elements of
// the data-less tensor folding gives it, as if widening them to float32.
TEST(Planner, FoldsTheShapeAndSizeOfAFloat16Input) {
  ModelBuilder m;
  m.input("x", DataType::kFloat16, {-1, 3, 64, 64}).output("shape", DataType::kInt64, {4});
  m.output("size", DataType::kInt64, {});
  m.node("Shape", {"x"}, {"shape"});
  m.node("Size", {"x"}, {"size"});
  const Graph graph = load_graph(m);
  auto plan = plan_graph(graph, InputShapes{{"x", {2, 3, 64, 64}}});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(count_ops(plan->graph, "Shape") + count_ops(plan->graph, "Size"), 0) << "both are folded";
}

TEST(Executor, RejectsInputsThatDoNotMatchThePlan) {
  ModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3}).output("y", DataType::kFloat32, {2, 3});
  m.node("Relu", {"x"}, {"y"});
  CpuExecutor executor(plan_for(load_graph(m), {random_tensor(DataType::kFloat32, {2, 3}, 1)}));
  auto result = executor.run({random_tensor(DataType::kFloat32, {3, 2}, 1)});
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("'x'"), std::string::npos);
}

TEST(Npy, RoundTripsEveryDtype) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kInt64,
                         DataType::kInt32, DataType::kInt8, DataType::kUInt8, DataType::kBool}) {
    const Tensor t = random_tensor(dtype, {3, 1, 5}, 4, -50, 50);
    const auto path = std::filesystem::path(fovea::testing::test_temp_dir()) / "t.npy";
    ASSERT_TRUE(write_npy(path, t).is_ok());
    auto back = read_npy(path);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_TRUE(tensors_near(*back, t, 0, 0)) << data_type_name(dtype);
  }
}

TEST(Npy, RejectsBadFiles) {
  const auto path = std::filesystem::path(fovea::testing::test_temp_dir()) / "bad.npy";
  std::ofstream(path) << "not numpy";
  auto result = read_npy(path);
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("bad.npy"), std::string::npos);
  const Tensor t = random_tensor(DataType::kFloat32, {4, 4}, 1);
  ASSERT_TRUE(write_npy(path, t).is_ok());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 5);
  result = read_npy(path);
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), StatusCode::kCorruptData);
}

// A version 1.0 .npy file with `dict` as its header and no data after it.
std::filesystem::path npy_with_header(const std::string& name, std::string dict) {
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  const auto path = std::filesystem::path(fovea::testing::test_temp_dir()) / name;
  std::ofstream file(path, std::ios::binary);
  file << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(dict.size() & 0xff)
       << static_cast<char>(dict.size() >> 8) << dict;
  return path;
}

void expect_npy_refused(const std::filesystem::path& path, StatusCode code, const std::string& needle) {
  const Result<Tensor> result = read_npy(path);
  ASSERT_FALSE(result.is_ok()) << path;
  EXPECT_EQ(result.status().code(), code) << result.status().to_string();
  EXPECT_NE(result.status().message().find(needle), std::string::npos) << result.status().message();
}

TEST(Npy, RefusesCraftedHeaders) {
  // 2^32 * 2^32 float32 elements: the byte count wraps to 0, which is what the file holds.
  expect_npy_refused(
      npy_with_header("wrap.npy",
                      "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 1), }"),
      StatusCode::kCorruptData, "more elements than any file can hold");
  expect_npy_refused(
      npy_with_header("maybe.npy", "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (0,), }"),
      StatusCode::kCorruptData, "neither True nor False");
  expect_npy_refused(
      npy_with_header("record.npy",
                      "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (2,), }"),
      StatusCode::kUnsupported, "structured dtype");
}

}  // namespace
}  // namespace fovea::runtime::testing
