// The indexing ops on CUDA (cuda/ops/indexing.cu) and CastLike against the CPU reference: random
// data of odd sizes, random indices (negative ones included) on every axis, each reduction, float32
// and float16 plans and the other dtypes the kernels move by size.
#include "runtime/cuda/ops/elementwise_cuda_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kOtherTypes[] = {DataType::kFloat64, DataType::kInt64, DataType::kInt32, DataType::kInt8,
                                    DataType::kUInt8};

Tensor data_of(DataType dtype, const Shape& shape, std::uint32_t seed) {
  return dtype == DataType::kUInt8 ? random_tensor(dtype, shape, seed, 0, 250)
                                   : random_tensor(dtype, shape, seed, -100, 100);
}

// Indices in [-dim, dim) of `dtype` (int64 or int32).
Tensor indices_of(DataType dtype, const Shape& shape, std::int64_t dim, std::uint32_t seed) {
  return random_tensor(dtype, shape, seed, static_cast<double>(-dim), static_cast<double>(dim));
}

// `inputs` with float32 data (input 0, and `updates` when >= 0) in both precisions, then the
// other dtypes in float32 plans. `constants` are plan-time constant inputs. Scatter reductions are
// kAccumulating: CUDA stores each partial result of a float16 plan in float16.
void expect_data_types(const Node& node, std::vector<Tensor> inputs, int updates = -1,
                       const std::vector<int>& constants = {}, Accuracy accuracy = Accuracy::kPointwise) {
  for (Precision p : kPrecisions) {
    EXPECT_TRUE(
        cuda_matches_cpu(node, inputs, {.precision = p, .constant_inputs = constants, .accuracy = accuracy}))
        << node.op_type << " as " << precision_name(p);
  }
  for (DataType dtype : kOtherTypes) {
    inputs[0] = data_of(dtype, inputs[0].shape(), 5);
    if (updates >= 0) inputs[updates] = data_of(dtype, inputs[updates].shape(), 6);
    EXPECT_TRUE(cuda_matches_cpu(node, inputs, {.constant_inputs = constants}))
        << node.op_type << ", " << data_type_name(dtype);
  }
}

// ---- GatherElements, ScatterElements, Scatter ----

struct AxisCase {
  Shape data;
  Shape indices;
  int axis;
};
const AxisCase kAxisCases[] = {
    {{5, 3, 13, 17}, {5, 3, 13, 17}, 1},  // the whole tensor, along channels
    {{1, 3, 13, 17}, {1, 2, 7, 17}, -1},  // smaller indices, innermost axis
    {{7, 9}, {11, 9}, 0},                 // more indices than the axis has
    {{9}, {4}, 0},
};

TEST(CudaGatherElements, MatchesCpuOnEveryAxis) {
  FOVEA_REQUIRE_GPU();
  for (const AxisCase& c : kAxisCases) {
    const auto dim = c.data[static_cast<std::size_t>(c.axis < 0 ? c.axis + std::ssize(c.data) : c.axis)];
    for (DataType index_type : {DataType::kInt64, DataType::kInt32}) {
      expect_data_types(NodeBuilder("GatherElements").inputs(2).attr("axis", c.axis).build(),
                        {data_of(DataType::kFloat32, c.data, 1), indices_of(index_type, c.indices, dim, 2)});
    }
  }
}

void expect_scatter_elements(const std::string& op_type, int opset, const std::string& reduction) {
  for (const AxisCase& c : kAxisCases) {
    const auto dim = c.data[static_cast<std::size_t>(c.axis < 0 ? c.axis + std::ssize(c.data) : c.axis)];
    NodeBuilder builder(op_type, opset);
    builder.inputs(3).attr("axis", c.axis);
    if (!reduction.empty()) builder.attr("reduction", reduction);
    expect_data_types(
        builder.build(),
        {data_of(DataType::kFloat32, c.data, 1), indices_of(DataType::kInt64, c.indices, dim, 2),
         random_tensor(DataType::kFloat32, c.indices, 3, -2, 2)},
        2, {}, Accuracy::kAccumulating);
  }
}

TEST(CudaScatterElements, MatchesCpuWithEveryReduction) {
  FOVEA_REQUIRE_GPU();
  // Repeated indices: with none the last update wins on both sides, as lines apply them in order.
  for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
    expect_scatter_elements("ScatterElements", 18, reduction);
  }
}

TEST(CudaScatter, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_scatter_elements("Scatter", 10, "");
}

// ---- GatherND, ScatterND ----

TEST(CudaGatherND, MatchesCpuForTupleSizesAndBatchDims) {
  FOVEA_REQUIRE_GPU();
  const Shape data = {3, 5, 7, 9};
  struct Case {
    Shape indices;
    int batch_dims;
    std::vector<std::int64_t> dims;  // the dims the tuple indexes
  };
  const Case cases[] = {
      {{11, 1}, 0, {3}},      {{4, 5, 2}, 0, {3, 5}}, {{13, 4}, 0, {3, 5, 7, 9}},
      {{3, 6, 2}, 1, {5, 7}}, {{3, 5, 3, 1}, 2, {7}},
  };
  for (const Case& c : cases) {
    // Each tuple element within its own dim: build column by column.
    Tensor indices = Tensor::allocate(DataType::kInt64, c.indices);
    const auto k = static_cast<std::int64_t>(c.dims.size());
    for (std::int64_t i = 0; i < indices.numel(); ++i) {
      const std::int64_t dim = c.dims[static_cast<std::size_t>(i % k)];
      indices.data<std::int64_t>()[i] =
          integer_at(indices_of(DataType::kInt64, {1}, dim, static_cast<std::uint32_t>(i)), 0);
    }
    expect_data_types(NodeBuilder("GatherND").inputs(2).attr("batch_dims", c.batch_dims).build(),
                      {data_of(DataType::kFloat32, data, 1), indices});
  }
}

TEST(CudaScatterND, MatchesCpuWithEveryReduction) {
  FOVEA_REQUIRE_GPU();
  const Shape data = {5, 7, 9};
  // Tuples of one index into [5]: 13 of them repeat rows, which the reductions combine in order.
  const Tensor rows = indices_of(DataType::kInt64, {13, 1}, 5, 2);
  const Tensor row_updates = random_tensor(DataType::kFloat32, {13, 7, 9}, 3, -2, 2);
  for (const char* reduction : {"add", "mul", "max", "min"}) {
    expect_data_types(NodeBuilder("ScatterND", 18).inputs(3).attr("reduction", reduction).build(),
                      {data_of(DataType::kFloat32, data, 1), rows, row_updates}, 2, {},
                      Accuracy::kAccumulating);
  }
  // Reduction none needs distinct tuples: a permutation of every (i, j) pair.
  Tensor pairs = Tensor::allocate(DataType::kInt64, {35, 2});
  for (std::int64_t t = 0; t < 35; ++t) {
    const std::int64_t shuffled = (t * 12) % 35;                              // 12 is coprime with 35
    pairs.data<std::int64_t>()[2 * t] = shuffled / 7 - (t % 2 == 0 ? 0 : 5);  // some negative
    pairs.data<std::int64_t>()[2 * t + 1] = shuffled % 7;
  }
  expect_data_types(
      NodeBuilder("ScatterND").inputs(3).build(),
      {data_of(DataType::kFloat32, data, 1), pairs, random_tensor(DataType::kFloat32, {35, 9}, 4)}, 2);
}

// ---- CumSum ----

TEST(CudaCumSum, MatchesCpuOnEveryAxisAndMode) {
  FOVEA_REQUIRE_GPU();
  const Shape shape = {3, 5, 13, 17};
  for (std::int64_t axis : {0, 1, 2, -1}) {
    for (int exclusive : {0, 1}) {
      for (int reverse : {0, 1}) {
        const Node node =
            NodeBuilder("CumSum").inputs(2).attr("exclusive", exclusive).attr("reverse", reverse).build();
        const Tensor axis_input = int64_tensor({}, {axis});
        for (Precision p : kPrecisions) {
          EXPECT_TRUE(
              cuda_matches_cpu(node, {random_tensor(DataType::kFloat32, shape, 1), axis_input},
                               {.precision = p, .constant_inputs = {1}, .accuracy = Accuracy::kAccumulating}))
              << "axis " << axis << " exclusive " << exclusive << " reverse " << reverse;
        }
        for (DataType dtype : {DataType::kFloat64, DataType::kInt64, DataType::kInt32}) {
          EXPECT_TRUE(cuda_matches_cpu(node, {data_of(dtype, shape, 2), axis_input},
                                       {.constant_inputs = {1}, .accuracy = Accuracy::kAccumulating}))
              << data_type_name(dtype);
        }
      }
    }
  }
}

TEST(CudaCumSum, RefusesAnAxisKnownOnlyAtRunTime) {
  FOVEA_REQUIRE_GPU();
  EXPECT_FALSE(run_cuda_node_status(NodeBuilder("CumSum").inputs(2).build(),
                                    {random_tensor(DataType::kFloat32, {3, 4}, 1), int64_tensor({}, {1})})
                   .is_ok());
}

// ---- DepthToSpace, SpaceToDepth ----

TEST(CudaDepthToSpace, MatchesCpuInBothModes) {
  FOVEA_REQUIRE_GPU();
  for (const char* mode : {"DCR", "CRD"}) {
    expect_data_types(NodeBuilder("DepthToSpace").attr("blocksize", 3).attr("mode", mode).build(),
                      {data_of(DataType::kFloat32, {2, 27, 5, 7}, 1)});
    expect_data_types(NodeBuilder("DepthToSpace").attr("blocksize", 2).attr("mode", mode).build(),
                      {data_of(DataType::kFloat32, {1, 12, 13, 17}, 1)});
  }
}

TEST(CudaSpaceToDepth, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  expect_data_types(NodeBuilder("SpaceToDepth").attr("blocksize", 3).build(),
                    {data_of(DataType::kFloat32, {2, 5, 9, 21}, 1)});
  expect_data_types(NodeBuilder("SpaceToDepth").attr("blocksize", 2).build(),
                    {data_of(DataType::kFloat32, {1, 3, 14, 18}, 1)});
}

// ---- Trilu ----

TEST(CudaTrilu, MatchesCpuForBothTrianglesAndOffsets) {
  FOVEA_REQUIRE_GPU();
  for (int upper : {0, 1}) {
    expect_data_types(NodeBuilder("Trilu").attr("upper", upper).build(),
                      {data_of(DataType::kFloat32, {3, 13, 17}, 1)});
    for (std::int64_t k : {-20, -3, 0, 5, 20}) {
      expect_data_types(NodeBuilder("Trilu").inputs(2).attr("upper", upper).build(),
                        {data_of(DataType::kFloat32, {2, 3, 17, 13}, 1), int64_tensor({}, {k})}, -1, {1});
    }
  }
}

// ---- OneHot ----

TEST(CudaOneHot, MatchesCpuOnEveryAxisAndIndexType) {
  FOVEA_REQUIRE_GPU();
  const Shape shape = {3, 5, 7};
  for (std::int64_t axis : {-1, 0, 2, -4}) {
    const Node node = NodeBuilder("OneHot").inputs(3).attr("axis", axis).build();
    const Tensor depth = int64_tensor({}, {11});
    // Out of range on both sides too ([-13, 13) against depth 11).
    for (DataType index_type : {DataType::kInt64, DataType::kInt32, DataType::kFloat32}) {
      const Tensor indices = random_tensor(index_type, shape, 2, -13, 13);
      for (Precision p : kPrecisions) {
        EXPECT_TRUE(cuda_matches_cpu(node, {indices, depth, float_tensor({2}, {-0.5f, 3})},
                                     {.precision = p, .constant_inputs = {1}}))
            << "axis " << axis << ", " << data_type_name(index_type);
      }
    }
    EXPECT_TRUE(
        cuda_matches_cpu(node, {indices_of(DataType::kInt64, shape, 11, 3), depth, int64_tensor({2}, {0, 9})},
                         {.constant_inputs = {1}}));
  }
}

// ---- EyeLike ----

TEST(CudaEyeLike, MatchesCpuForOffsetsAndDtypes) {
  FOVEA_REQUIRE_GPU();
  for (std::int64_t k : {-4, 0, 3, 30}) {
    expect_data_types(NodeBuilder("EyeLike").attr("k", k).build(),
                      {data_of(DataType::kFloat32, {13, 17}, 1)});
  }
  for (std::int64_t dtype : {1, 7, 9, 10}) {  // float32, int64, bool, float16
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("EyeLike").attr("dtype", dtype).attr("k", 1).build(),
                                 {random_tensor(DataType::kFloat32, {9, 5}, 1)}))
        << "dtype " << dtype;
  }
}

// ---- Hardmax ----

TEST(CudaHardmax, MatchesCpuOnEveryAxis) {
  FOVEA_REQUIRE_GPU();
  const Shape shape = {3, 5, 13, 17};
  for (std::int64_t axis : {0, 1, 2, -1}) {
    const Node node = NodeBuilder("Hardmax").attr("axis", axis).build();
    // Few distinct values, so lines hold ties and the first maximum must win.
    const Tensor ties = small_integers(DataType::kFloat32, shape, 1);
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(node, {ties}, {.precision = p})) << "axis " << axis;
      EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(DataType::kFloat32, shape, 2)}, {.precision = p}));
    }
    EXPECT_TRUE(cuda_matches_cpu(node, {random_tensor(DataType::kFloat64, shape, 3)}));
  }
  EXPECT_TRUE(
      cuda_matches_cpu(NodeBuilder("Hardmax", 11).build(), {random_tensor(DataType::kFloat32, shape, 4)}));
}

// ---- CastLike ----

TEST(CudaCastLike, MatchesCpuBetweenDtypes) {
  FOVEA_REQUIRE_GPU();
  const DataType types[] = {DataType::kFloat32, DataType::kFloat64, DataType::kInt64,
                            DataType::kInt32,   DataType::kUInt8,   DataType::kBool};
  const Node node = NodeBuilder("CastLike").inputs(2).build();
  for (DataType from : types) {
    for (DataType to : types) {
      EXPECT_TRUE(cuda_matches_cpu(
          node, {random_tensor(from, {5, 3, 13, 17}, 1, -3, 300), Tensor::allocate(to, {1})}))
          << data_type_name(from) << " to " << data_type_name(to);
    }
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
