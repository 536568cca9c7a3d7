// MatMul and Gemm on cuBLASLt against the CPU reference, in float32 and float16.
#include <optional>
#include <tuple>

#include "runtime/cuda/conv_algorithm_cache.h"
#include "runtime/cuda/cuda_op_test_util.h"
#include "runtime/cuda/lt_matmul.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;

TEST(CudaMatMul, ShapesAndBroadcasting) {
  FOVEA_REQUIRE_GPU();
  const std::pair<Shape, Shape> cases[] = {
      {{7, 13}, {13, 5}},            // plain
      {{1, 300}, {300, 1000}},       // a classifier head, batch 1
      {{3, 9, 17}, {17, 11}},        // one B for every batch entry: folded into one product
      {{4, 9, 17}, {4, 17, 6}},      // equal batches: strided
      {{9, 17}, {5, 17, 6}},         // one A for every batch entry: stride 0
      {{2, 1, 5, 7}, {1, 3, 7, 4}},  // uneven broadcasting: one product per output matrix
      {{13}, {13, 6}},               // 1-D operands are promoted
      {{4, 5, 13}, {13}},
  };
  std::uint32_t seed = 1;
  for (const auto& [a, b] : cases) {
    const Tensor ta = random_tensor(kF32, a, seed++);
    const Tensor tb = random_tensor(kF32, b, seed++);
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("MatMul").inputs(2).build(), {ta, tb}, accumulating(p)))
          << shape_string(a) << " x " << shape_string(b);
    }
  }
}

TEST(CudaGemm, TransposesScalesAndBroadcastC) {
  FOVEA_REQUIRE_GPU();
  const Tensor a = random_tensor(kF32, {11, 7}, 1);   // [M, K]
  const Tensor at = random_tensor(kF32, {7, 11}, 2);  // [K, M]
  const Tensor b = random_tensor(kF32, {7, 5}, 3);    // [K, N]
  const Tensor bt = random_tensor(kF32, {5, 7}, 4);   // [N, K]
  for (Precision p : kPrecisions) {
    for (const Shape& c : {Shape{5}, Shape{1, 5}, Shape{11, 5}, Shape{11, 1}, Shape{}}) {
      const Tensor tc = random_tensor(kF32, c, 5);
      EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Gemm").inputs(3).attr("beta", 0.5f).build(), {a, b, tc},
                                   accumulating(p)))
          << shape_string(c);
    }
    EXPECT_TRUE(cuda_matches_cpu(
        NodeBuilder("Gemm").inputs(3).attr("transA", 1).attr("transB", 1).attr("alpha", 2.0f).build(),
        {at, bt, random_tensor(kF32, {5}, 6)}, accumulating(p)));
    EXPECT_TRUE(
        cuda_matches_cpu(NodeBuilder("Gemm").inputs(2).attr("transB", 1).build(), {a, bt}, accumulating(p)));
  }
}

// The plan times cuBLASLt's first picks and keeps the fastest; every pick it could keep computes the
// same product. Each rank is put in the algorithm cache in turn (a linear layer: bias in the
// epilogue), and the plan takes it from there.
TEST(CudaGemm, EachPickOfTheHeuristicMatchesTheReference) {
  FOVEA_REQUIRE_GPU();
  constexpr std::int64_t kM = 197, kK = 96, kN = 72;
  const Tensor a = random_tensor(kF32, {kM, kK}, 1);
  const Tensor b = random_tensor(kF32, {kK, kN}, 2);
  const Tensor c = random_tensor(kF32, {kN}, 3);
  const Node gemm = NodeBuilder("Gemm").inputs(3).build();
  const CudaCheck check = accumulating(Precision::kFloat16);
  ASSERT_TRUE(cuda_matches_cpu(gemm, {a, b, c}, check));  // loads cuBLASLt, which the key names
  const std::string key = cuda::lt_problem_key(DataType::kFloat16, {.m = kM, .n = kN, .k = kK},
                                               CUBLASLT_EPILOGUE_BIAS, /*reads_c=*/false);
  // The plan reads this very key: a rank past the heuristic's list is searched again and replaced.
  cuda::ConvAlgorithmCache& cache = cuda::ConvAlgorithmCache::instance();
  cache.insert(key, {.algo = 1000, .gemm = true});
  ASSERT_TRUE(cuda_matches_cpu(gemm, {a, b, c}, check));
  const std::optional<cuda::ConvAlgorithm> searched = cache.find(key);
  ASSERT_TRUE(searched.has_value());
  EXPECT_LT(searched->algo, cuda::kLtCandidates) << key;
  for (int rank = 0; rank < cuda::kLtCandidates; ++rank) {
    cache.insert(key, {.algo = rank, .gemm = true});
    EXPECT_TRUE(cuda_matches_cpu(gemm, {a, b, c}, check)) << "cuBLASLt pick " << rank;
  }
}

// A bias row with beta 1 is added in cuBLASLt's epilogue (a linear layer after fuse_matmul_bias:
// many rows, odd widths); the other Cs above take the broadcast pass.
TEST(CudaGemm, ARowOfBiasAddsInTheEpilogue) {
  FOVEA_REQUIRE_GPU();
  for (Precision p : kPrecisions) {
    for (const auto& [m, k, n] :
         {std::tuple{394, 64, 96}, std::tuple{37, 29, 95}, std::tuple{1, 768, 1000}}) {
      const Tensor a = random_tensor(kF32, {m, k}, 1);
      const Tensor b = random_tensor(kF32, {k, n}, 2);
      for (const Shape& c : {Shape{n}, Shape{1, n}}) {
        EXPECT_TRUE(cuda_matches_cpu(
            NodeBuilder("Gemm").inputs(3).build(), {a, b, random_tensor(kF32, c, 3)},
            {.precision = p, .constant_inputs = {1, 2}, .accuracy = Accuracy::kAccumulating}))
            << m << "x" << k << "x" << n << ", C " << shape_string(c) << ", " << precision_name(p);
      }
    }
  }
}

// fovea.Gemm's residual: cuBLASLt's C beside the bias epilogue (a bias row), added after a C
// broadcast into Y first (a column, beta 0.5), or alone; float32 and float16, odd sizes.
TEST(Cudafovea_Gemm, TheResidualIsAddedInsideTheProduct) {
  FOVEA_REQUIRE_GPU();
  const std::int64_t m = 37, k = 29, n = 95;
  const Tensor a = random_tensor(kF32, {m, k}, 1);
  const Tensor b = random_tensor(kF32, {k, n}, 2);
  const Tensor r = random_tensor(kF32, {m, n}, 3);
  for (Precision p : kPrecisions) {
    const CudaCheck check{.precision = p, .constant_inputs = {1, 2}, .accuracy = Accuracy::kAccumulating};
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Gemm").domain("fovea").inputs(4).build(),
                                 {a, b, random_tensor(kF32, {n}, 4), r}, check))
        << precision_name(p);
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Gemm").domain("fovea").inputs(4).attr("beta", 0.5f).build(),
                                 {a, b, random_tensor(kF32, {m, 1}, 5), r}, accumulating(p)))
        << precision_name(p);
    EXPECT_TRUE(cuda_matches_cpu(NodeBuilder("Gemm").domain("fovea").inputs(4).omit_input(2).build(),
                                 {a, b, Tensor(), r}, accumulating(p)))
        << precision_name(p);
  }
}

// fovea.Gemm's GELU (fuse_gemm_gelu): cuBLASLt's GELU epilogue with the bias row (a linear layer,
// odd sizes), after a C broadcast into Y first (a column, beta 0.5) and without C; float64, where
// cuBLASLt may have no GELU epilogue, through the pass after the product. Against the CPU's tanh form.
TEST(Cudafovea_Gemm, TheGeluRunsInTheEpilogue) {
  FOVEA_REQUIRE_GPU();
  const std::int64_t m = 37, k = 29, n = 95;
  const auto gemm = [](int inputs, float beta) {
    return NodeBuilder("Gemm")
        .domain("fovea")
        .inputs(inputs)
        .attr("beta", beta)
        .attr("activation", "gelu_tanh");
  };
  for (const DataType dtype : {kF32, DataType::kFloat64}) {
    // Products of about unit size, so that the GELU's negative tail is exercised.
    const Tensor a = random_tensor(dtype, {m, k}, 1);
    const Tensor b = random_tensor(dtype, {k, n}, 2);
    for (Precision p : kPrecisions) {
      if (dtype == DataType::kFloat64 && p != Precision::kFloat32) continue;
      const CudaCheck check{.precision = p, .constant_inputs = {1, 2}, .accuracy = Accuracy::kAccumulating};
      EXPECT_TRUE(cuda_matches_cpu(gemm(3, 1.0f).build(), {a, b, random_tensor(dtype, {n}, 4)}, check))
          << precision_name(p) << " " << data_type_name(dtype);
      EXPECT_TRUE(
          cuda_matches_cpu(gemm(3, 0.5f).build(), {a, b, random_tensor(dtype, {m, 1}, 5)}, accumulating(p)))
          << precision_name(p) << " " << data_type_name(dtype);
      EXPECT_TRUE(cuda_matches_cpu(gemm(2, 1.0f).build(), {a, b}, accumulating(p)))
          << precision_name(p) << " " << data_type_name(dtype);
    }
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
