#include <array>
#include <cstdint>
#include <vector>

#include "runtime/op_test_util.h"
#include "runtime/ops/gemm_kernel.h"

namespace fovea::runtime::testing {
namespace {

// Dot products of up to a few hundred terms summed in another order than the reference: 1e-4.
constexpr double kTolerance = 1e-4;

// C[b] = A[b] (m x k, element (i, p) at a[b * a_batch + i * a_row + p * a_col]) * B[b] (k x n, likewise),
// accumulated in double.
struct Operand {
  const Tensor* tensor;
  std::int64_t batch_stride;
  std::int64_t row_stride;
  std::int64_t col_stride;
  double at(std::int64_t b, std::int64_t r, std::int64_t c) const {
    return tensor->data<float>()[b * batch_stride + r * row_stride + c * col_stride];
  }
};

Tensor reference_product(const Operand& a, const Operand& b, Shape out_shape, std::int64_t batches,
                         std::int64_t m, std::int64_t n, std::int64_t k) {
  Tensor y = Tensor::allocate(DataType::kFloat32, std::move(out_shape));
  for (std::int64_t t = 0; t < batches; ++t) {
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (std::int64_t p = 0; p < k; ++p) sum += a.at(t, i, p) * b.at(t, p, j);
        y.data<float>()[(t * m + i) * n + j] = static_cast<float>(sum);
      }
    }
  }
  return y;
}

// The CPU's matrix products on the AVX2/FMA micro-kernel where the machine has it (wide) and on the
// baseline SSE2 one; a test runs once per kernel.
const bool kWideKernel[] = {true, false};

class GemmKernelChoice {
 public:
  explicit GemmKernelChoice(bool wide) : previous_(ops::allow_wide_gemm_kernel(wide)) {}
  ~GemmKernelChoice() { ops::allow_wide_gemm_kernel(previous_); }
  GemmKernelChoice(const GemmKernelChoice&) = delete;
  GemmKernelChoice& operator=(const GemmKernelChoice&) = delete;

 private:
  bool previous_;
};

// Sizes around both kernels' tiles (12 or 4 rows, 8 columns) and the 256-deep K blocks (600: a
// product accumulated over three of them).
TEST(OpMatMul, MatchesTripleLoopOnOddSizes) {
  for (const bool wide : kWideKernel) {
    const GemmKernelChoice kernel(wide);
    for (const auto& [m, n, k] : std::vector<std::array<std::int64_t, 3>>{
             {37, 53, 29}, {1, 1, 1}, {150, 310, 600}, {12, 8, 257}, {25, 17, 3}, {11, 7, 513}}) {
      const Tensor a = random_tensor(DataType::kFloat32, {m, k}, 1);
      const Tensor b = random_tensor(DataType::kFloat32, {k, n}, 2);
      const auto out = run_node(NodeBuilder("MatMul").inputs(2).build(), {a, b});
      EXPECT_TRUE(tensors_near(out[0], reference_product({&a, 0, k, 1}, {&b, 0, n, 1}, {m, n}, 1, m, n, k),
                               kTolerance, kTolerance))
          << m << "x" << n << "x" << k << (wide ? ", wide kernel" : ", baseline kernel");
    }
  }
}

TEST(OpMatMul, BroadcastsBatchesAndPromotesVectors) {
  // A [2, 1, 5, 7] x B [3, 7, 4] -> [2, 3, 5, 4]: A repeats over B's batch, B over A's.
  const Tensor a = random_tensor(DataType::kFloat32, {2, 1, 5, 7}, 3);
  const Tensor b = random_tensor(DataType::kFloat32, {3, 7, 4}, 4);
  const auto out = run_node(NodeBuilder("MatMul").inputs(2).build(), {a, b});
  ASSERT_EQ(out[0].shape(), (Shape{2, 3, 5, 4}));
  for (std::int64_t i = 0; i < 2; ++i) {
    for (std::int64_t j = 0; j < 3; ++j) {
      Tensor a_i =
          Tensor::from_vector(DataType::kFloat32, {5, 7},
                              std::vector<float>(a.data<float>() + i * 35, a.data<float>() + (i + 1) * 35));
      Tensor b_j =
          Tensor::from_vector(DataType::kFloat32, {7, 4},
                              std::vector<float>(b.data<float>() + j * 28, b.data<float>() + (j + 1) * 28));
      const Tensor slice =
          Tensor::from_vector(DataType::kFloat32, {5, 4},
                              std::vector<float>(out[0].data<float>() + (i * 3 + j) * 20,
                                                 out[0].data<float>() + (i * 3 + j + 1) * 20));
      EXPECT_TRUE(tensors_near(slice, reference_product({&a_i, 0, 7, 1}, {&b_j, 0, 4, 1}, {5, 4}, 1, 5, 4, 7),
                               kTolerance, kTolerance));
    }
  }
  // Batched A times one matrix folds into one product.
  const Tensor a3 = random_tensor(DataType::kFloat32, {3, 6, 9}, 5);
  const Tensor b2 = random_tensor(DataType::kFloat32, {9, 2}, 6);
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("MatMul").inputs(2).build(), {a3, b2})[0],
                           reference_product({&a3, 54, 9, 1}, {&b2, 0, 2, 1}, {3, 6, 2}, 3, 6, 2, 9),
                           kTolerance, kTolerance));
  // [K] x [K, N] -> [N]; [M, K] x [K] -> [M]; [K] x [K] -> scalar.
  const Tensor v = float_tensor({3}, {1, 2, 3});
  const Tensor mat = float_tensor({3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("MatMul").inputs(2).build(), {v, mat})[0],
                           float_tensor({2}, {22, 28})));
  const Tensor mat_t = float_tensor({2, 3}, {1, 3, 5, 2, 4, 6});
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("MatMul").inputs(2).build(), {mat_t, v})[0],
                           float_tensor({2}, {22, 28})));
  EXPECT_TRUE(
      tensors_near(run_node(NodeBuilder("MatMul").inputs(2).build(), {v, v})[0], float_tensor({}, {14})));
}

TEST(OpMatMul, InfersAndRejects) {
  const Node node = NodeBuilder("MatMul").inputs(2).build();
  const auto types = infer_types(
      node, {ValueType{DataType::kFloat32, Dims{Dim::unknown("N"), Dim::known_size(5), Dim::known_size(7)}},
             ValueType{DataType::kFloat32, dims_of({7, 3})}});
  ASSERT_TRUE(types.is_ok());
  EXPECT_EQ(dims_string(*(*types)[0].dims), "[N, 5, 3]");
  const Status status = run_node_status(
      node, {random_tensor(DataType::kFloat32, {2, 3}, 1), random_tensor(DataType::kFloat32, {4, 2}, 2)});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("inner dims"), std::string::npos) << status.message();
  const Status batch = run_node_status(node, {random_tensor(DataType::kFloat32, {2, 2, 3}, 1),
                                              random_tensor(DataType::kFloat32, {3, 3, 2}, 2)});
  EXPECT_NE(batch.message().find("broadcast"), std::string::npos) << batch.message();
}

TEST(OpGemm, TransposesScalesAndBroadcastsC) {
  const std::int64_t m = 25, n = 11, k = 17;  // full and edge tiles of both kernels
  for (const bool wide : kWideKernel) {
    const GemmKernelChoice kernel(wide);
    for (int trans_a = 0; trans_a < 2; ++trans_a) {
      for (int trans_b = 0; trans_b < 2; ++trans_b) {
        const Tensor a = random_tensor(DataType::kFloat32, trans_a ? Shape{k, m} : Shape{m, k}, 1);
        const Tensor b = random_tensor(DataType::kFloat32, trans_b ? Shape{n, k} : Shape{k, n}, 2);
        const Tensor c = random_tensor(DataType::kFloat32, {n}, 3);  // a row broadcast over M
        const Node node = NodeBuilder("Gemm")
                              .inputs(3)
                              .attr("transA", trans_a)
                              .attr("transB", trans_b)
                              .attr("alpha", 0.5f)
                              .attr("beta", -2.0f)
                              .build();
        Tensor expected = reference_product({&a, 0, trans_a ? 1 : k, trans_a ? m : 1},
                                            {&b, 0, trans_b ? 1 : n, trans_b ? k : 1}, {m, n}, 1, m, n, k);
        for (std::int64_t i = 0; i < m * n; ++i) {
          expected.data<float>()[i] = 0.5f * expected.data<float>()[i] - 2.0f * c.data<float>()[i % n];
        }
        EXPECT_TRUE(tensors_near(run_node(node, {a, b, c})[0], expected, kTolerance, kTolerance))
            << "transA " << trans_a << " transB " << trans_b
            << (wide ? ", wide kernel" : ", baseline kernel");
      }
    }
  }
}

TEST(OpGemm, OptionalAndScalarC) {
  const Tensor a = float_tensor({2, 2}, {1, 2, 3, 4});
  const Tensor b = float_tensor({2, 2}, {5, 6, 7, 8});
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("Gemm").inputs(2).build(), {a, b})[0],
                           float_tensor({2, 2}, {19, 22, 43, 50})));
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("Gemm").inputs(3).build(), {a, b, float_tensor({}, {1})})[0],
                           float_tensor({2, 2}, {20, 23, 44, 51})));
  EXPECT_TRUE(
      tensors_near(run_node(NodeBuilder("Gemm").inputs(3).build(), {a, b, float_tensor({2, 1}, {1, 2})})[0],
                   float_tensor({2, 2}, {20, 23, 45, 52})));
  EXPECT_TRUE(tensors_near(run_node(NodeBuilder("Gemm").inputs(3).omit_input(2).build(), {a, b, Tensor()})[0],
                           float_tensor({2, 2}, {19, 22, 43, 50})));
}

TEST(OpGemm, RejectsBadShapes) {
  const Tensor a = random_tensor(DataType::kFloat32, {2, 3}, 1);
  const Tensor b = random_tensor(DataType::kFloat32, {3, 4}, 2);
  Status status = run_node_status(NodeBuilder("Gemm").inputs(3).build(),
                                  {a, b, random_tensor(DataType::kFloat32, {3}, 3)});
  EXPECT_NE(status.message().find("does not broadcast"), std::string::npos) << status.message();
  status = run_node_status(NodeBuilder("Gemm").inputs(2).attr("transB", 1).build(), {a, b});
  EXPECT_NE(status.message().find("inner dims"), std::string::npos) << status.message();
  status = run_node_status(NodeBuilder("Gemm").inputs(2).build(),
                           {random_tensor(DataType::kFloat32, {2, 3, 1}, 4), b});
  EXPECT_NE(status.message().find("rank"), std::string::npos) << status.message();
}

// fovea.Gemm: Gemm with the residual R added last (fuse_gemm_residual), with and without C, and R of
// another shape refused by name.
TEST(Opfovea_Gemm, AddsTheResidualAfterTheProductAndC) {
  const std::int64_t m = 9, n = 7, k = 5;
  const Tensor a = random_tensor(DataType::kFloat32, {m, k}, 1);
  const Tensor bt = random_tensor(DataType::kFloat32, {n, k}, 2);
  const Tensor c = random_tensor(DataType::kFloat32, {n}, 3);
  const Tensor r = random_tensor(DataType::kFloat32, {m, n}, 4);
  const Node plain = NodeBuilder("Gemm").inputs(3).attr("transB", 1).attr("alpha", 0.5f).build();
  const Node fused =
      NodeBuilder("Gemm").domain("fovea").inputs(4).attr("transB", 1).attr("alpha", 0.5f).build();
  Tensor expected = run_node(plain, {a, bt, c})[0];
  for (std::int64_t i = 0; i < m * n; ++i) expected.data<float>()[i] += r.data<float>()[i];
  EXPECT_TRUE(tensors_near(run_node(fused, {a, bt, c, r})[0], expected, kTolerance, kTolerance));
  const Node without_c = NodeBuilder("Gemm")
                             .domain("fovea")
                             .inputs(4)
                             .attr("transB", 1)
                             .attr("alpha", 0.5f)
                             .omit_input(2)
                             .build();
  Tensor product =
      run_node(NodeBuilder("Gemm").inputs(2).attr("transB", 1).attr("alpha", 0.5f).build(), {a, bt})[0];
  for (std::int64_t i = 0; i < m * n; ++i) product.data<float>()[i] += r.data<float>()[i];
  EXPECT_TRUE(tensors_near(run_node(without_c, {a, bt, Tensor(), r})[0], product, kTolerance, kTolerance));
  const Status status = run_node_status(fused, {a, bt, c, random_tensor(DataType::kFloat32, {1, n}, 5)});
  EXPECT_NE(status.message().find("residual R [1, 7] is not the output's shape [9, 7]"), std::string::npos)
      << status.message();
}

// fovea.Gemm's "gelu_tanh": GELU's tanh form of alpha A B + beta C, as a Gelu node after the Gemm
// computes it; with R, or another activation, refused by name.
TEST(Opfovea_Gemm, AppliesTheGeluAfterTheProductAndC) {
  const std::int64_t m = 9, n = 7, k = 5;
  const Tensor a = random_tensor(DataType::kFloat32, {m, k}, 1);
  const Tensor bt = random_tensor(DataType::kFloat32, {n, k}, 2);
  const Tensor c = random_tensor(DataType::kFloat32, {n}, 3);
  const Node plain = NodeBuilder("Gemm").inputs(3).attr("transB", 1).attr("alpha", 0.5f).build();
  const Tensor product = run_node(plain, {a, bt, c})[0];
  const Tensor expected = run_node(NodeBuilder("Gelu").attr("approximate", "tanh").build(), {product})[0];
  const auto fused = [](const std::string& activation, int inputs) {
    return NodeBuilder("Gemm")
        .domain("fovea")
        .inputs(inputs)
        .attr("transB", 1)
        .attr("alpha", 0.5f)
        .attr("activation", activation)
        .build();
  };
  EXPECT_TRUE(tensors_near(run_node(fused("gelu_tanh", 3), {a, bt, c})[0], expected, kTolerance, kTolerance));
  Status status =
      run_node_status(fused("gelu_tanh", 4), {a, bt, c, random_tensor(DataType::kFloat32, {m, n}, 4)});
  EXPECT_NE(status.message().find("an activation and a residual R"), std::string::npos) << status.message();
  status = run_node_status(fused("relu", 3), {a, bt, c});
  EXPECT_NE(status.message().find("activation 'relu'"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace fovea::runtime::testing
