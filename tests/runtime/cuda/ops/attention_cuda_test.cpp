// fovea.Attention's CUDA kernels against the CPU reference (which evaluates the MatMul, Softmax and
// MatMul chain it replaces), in float32 and float16, on odd sizes. The CUDA-core kernel (float32,
// and float16 head dims past 128): query rows across blocks of 32, keys across chunks of 32, output
// widths on every register-slot count (1, 2, 4, 8 of 32 lanes). The tensor-core kernel (float16,
// head dims up to 128): ViT's and Swin's shapes, each of its padded head dims (16, 32, 64, 128) with
// dims that pad (8 and 6, 40 and 70, 16 and 100), an odd output width, query rows across blocks of
// 64 and keys across chunks of 64, a single key. Both: head dims past the 48 KiB of shared memory a
// kernel gets by default, and biases that broadcast over the batch, the heads or the query rows.
// Both again reading Q, K (as key rows) and V as views of one packed QKV projection and writing the
// heads merged (fold_attention_views), with rows 16-byte aligned and not. Every case runs twice:
// with cuDNN's fused attention allowed (float16 without a bias where cuDNN takes the operands' form)
// and with fovea's kernels only.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/cuda/cuda_libraries.h"
#include "runtime/cuda/cuda_op_test_util.h"
#include "runtime/cuda/cudnn_attention.h"
#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;

struct Case {
  Shape q, kt, v, bias;  // bias empty: none
  float scale;
};

const Case kCases[] = {
    {{2, 3, 5, 8}, {2, 3, 8, 7}, {2, 3, 7, 6}, {}, 0.35f},
    {{1, 2, 33, 40}, {1, 2, 40, 45}, {1, 2, 45, 70}, {2, 33, 45}, 0.158f},
    {{4, 17, 64}, {4, 64, 197}, {4, 197, 64}, {1, 1, 197}, 0.125f},
    {{2, 1, 3, 256}, {2, 1, 256, 37}, {2, 1, 37, 256}, {3, 37}, 0.0625f},
    {{3, 19, 16}, {3, 16, 9}, {3, 9, 100}, {3, 19, 1}, 1.0f},
    {{6, 3, 49, 32}, {6, 3, 32, 49}, {6, 3, 49, 32}, {3, 49, 49}, 0.1768f},
    {{1, 2, 70, 128}, {1, 2, 128, 130}, {1, 2, 130, 128}, {2, 1, 130}, 0.088f},
    {{2, 5, 16}, {2, 16, 1}, {2, 1, 48}, {}, 1.0f},
    {{2, 70, 24}, {2, 24, 67}, {2, 67, 33}, {2, 1, 67}, 0.2f},
};

Node attention_node(const Case& c) {
  NodeBuilder node("Attention");
  node.domain("fovea").inputs(c.bias.empty() ? 3 : 4).attr("scale", c.scale);
  return node.build();
}

std::vector<Tensor> inputs_of(const Case& c, std::uint32_t seed) {
  std::vector<Tensor> inputs = {random_tensor(kF32, c.q, seed), random_tensor(kF32, c.kt, seed + 1),
                                random_tensor(kF32, c.v, seed + 2)};
  if (!c.bias.empty()) inputs.push_back(random_tensor(kF32, c.bias, seed + 3, -2.0, 2.0));
  return inputs;
}

// Runs the test with cuDNN's attention allowed or not, and allows it again after.
class AttentionKernels : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { runtime::cuda::allow_cudnn_attention(GetParam()); }
  void TearDown() override { runtime::cuda::allow_cudnn_attention(true); }
};

INSTANTIATE_TEST_SUITE_P(Cudafovea_Attention, AttentionKernels, ::testing::Values(true, false),
                         [](const auto& p) { return p.param ? "CudnnAllowed" : "FoveaOnly"; });

TEST_P(AttentionKernels, MatchesTheCpuChain) {
  FOVEA_REQUIRE_GPU();
  std::uint32_t seed = 1;
  for (const Case& c : kCases) {
    for (Precision p : kPrecisions) {
      EXPECT_TRUE(cuda_matches_cpu(attention_node(c), inputs_of(c, seed), accumulating(p)))
          << "q " << shape_string(c.q) << ", v " << shape_string(c.v) << ", " << precision_name(p);
    }
    seed += 4;
  }
}

// P [T, B, 3, H, D], the packed projection; Q, KT and V its views, Y written as [T, B, H, D].
Node head_split_attention(std::int64_t t, std::int64_t b, std::int64_t h, std::int64_t d) {
  const std::int64_t row = b * 3 * h * d, batch = 3 * h * d;
  return NodeBuilder("Attention")
      .domain("fovea")
      .inputs(3)
      .attr("scale", 0.125f)
      .attr("q_view", std::vector<std::int64_t>{0, b, batch, h, d, t, row, d, 1})
      .attr("kt_view", std::vector<std::int64_t>{h * d, b, batch, h, d, d, 1, t, row})
      .attr("v_view", std::vector<std::int64_t>{2 * h * d, b, batch, h, d, t, row, d, 1})
      .attr("y_perm", std::vector<std::int64_t>{2, 0, 1, 3})
      .build();
}

TEST_P(AttentionKernels, ReadsHeadSplitViewsAndWritesMergedHeads) {
  FOVEA_REQUIRE_GPU();
  // {T, B, H, D}: ViT-like rows (aligned), head dims that pad with rows of odd length, the
  // CUDA-core kernel's head dim, DETR's and Swin's head dim with one batch (cuDNN's B of 1) and a
  // single head (its H of 1).
  const std::vector<std::int64_t> shapes[] = {{197, 2, 3, 64}, {70, 3, 2, 33}, {9, 2, 3, 6},
                                              {5, 1, 2, 160},  {50, 1, 4, 32}, {33, 3, 1, 64}};
  std::uint32_t seed = 90;
  for (const std::vector<std::int64_t>& s : shapes) {
    const Tensor p = random_tensor(kF32, {s[0], s[1], 3, s[2], s[3]}, seed++);
    for (Precision precision : kPrecisions) {
      EXPECT_TRUE(
          cuda_matches_cpu(head_split_attention(s[0], s[1], s[2], s[3]), {p, p, p}, accumulating(precision)))
          << "T " << s[0] << ", B " << s[1] << ", H " << s[2] << ", D " << s[3] << ", "
          << precision_name(precision);
    }
  }
}

// ViT-B's attention in float16 (197 tokens, 12 heads of 64, read from the packed projection)
// takes cuDNN's kernel where the library has it (9.13.1 and later), and matches the CPU.
TEST(Cudafovea_Attention, VitHeadsRunOnCudnnWhereItHasTheKernel) {
  FOVEA_REQUIRE_GPU();
  if (cudnnGetVersion() < 91301) GTEST_SKIP() << "cuDNN " << cudnnGetVersion() << " has no SDPA operation";
  const std::int64_t t = 197, b = 3, h = 12, d = 64;
  // The plan cuDNN makes for the shape, to name its reason if it refuses.
  Result<std::unique_ptr<runtime::cuda::CudaLibraries>> libraries = runtime::cuda::CudaLibraries::create();
  ASSERT_TRUE(libraries.is_ok()) << libraries.status().message();
  runtime::cuda::CudnnAttentionShape shape;
  const std::int64_t row = b * 3 * h * d;
  shape.q = {{b, h, t, d}, {3 * h * d, d, row, 1}};
  shape.k = shape.q;
  shape.v = shape.q;
  shape.o = {{b, h, t, d}, {h * d, d, b * h * d, 1}};
  shape.scale = 0.125f;
  const auto plan = runtime::cuda::CudnnAttention::create((*libraries)->cudnn, shape);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();

  const int before = runtime::cuda::cudnn_attention_plans_built();
  const Tensor p = random_tensor(kF32, {t, b, 3, h, d}, 77);
  EXPECT_TRUE(
      cuda_matches_cpu(head_split_attention(t, b, h, d), {p, p, p}, accumulating(Precision::kFloat16)));
  EXPECT_GT(runtime::cuda::cudnn_attention_plans_built(), before);
}

TEST(Cudafovea_Attention, HeadDimsPastTheKernelsAreRefusedByName) {
  FOVEA_REQUIRE_GPU();
  const Case wide{{1, 1, 4, 300}, {1, 1, 300, 5}, {1, 1, 5, 8}, {}, 1.0f};
  const Status status = run_cuda_node_status(attention_node(wide), inputs_of(wide, 50));
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("head dims up to 256"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace fovea::runtime::testing
