// fovea.Attention on the CPU against attention written out here in loops (scores, scale, bias,
// softmax over the keys, weighted sum of V), through strided views of a packed projection and a
// transposed output too, and its refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/op_test_util.h"

namespace fovea::runtime::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;

// Q [M, Tq, D], KT [M, D, Tk], V [M, Tk, Dv], bias [Tq, Tk] (broadcast over M) or none.
Tensor attention_by_loops(const Tensor& q, const Tensor& kt, const Tensor& v, const Tensor* bias,
                          float scale) {
  const std::int64_t m = q.dim(0), tq = q.dim(1), d = q.dim(2), tk = kt.dim(2), dv = v.dim(2);
  Tensor y = Tensor::allocate(kF32, {m, tq, dv});
  std::vector<double> weights(static_cast<std::size_t>(tk));
  for (std::int64_t b = 0; b < m; ++b) {
    for (std::int64_t i = 0; i < tq; ++i) {
      double largest = -INFINITY;
      for (std::int64_t j = 0; j < tk; ++j) {
        double s = 0;
        for (std::int64_t e = 0; e < d; ++e)
          s += q.data<float>()[(b * tq + i) * d + e] * kt.data<float>()[(b * d + e) * tk + j];
        s = s * scale + (bias != nullptr ? bias->data<float>()[i * tk + j] : 0.0);
        weights[static_cast<std::size_t>(j)] = s;
        largest = std::max(largest, s);
      }
      double sum = 0;
      for (double& w : weights) sum += (w = std::exp(w - largest));
      for (std::int64_t e = 0; e < dv; ++e) {
        double out = 0;
        for (std::int64_t j = 0; j < tk; ++j)
          out += weights[static_cast<std::size_t>(j)] * v.data<float>()[(b * tk + j) * dv + e];
        y.data<float>()[(b * tq + i) * dv + e] = static_cast<float>(out / sum);
      }
    }
  }
  return y;
}

TEST(Opfovea_Attention, MatchesTheLoopsWithAndWithoutABias) {
  const Tensor q = random_tensor(kF32, {3, 5, 4}, 1), kt = random_tensor(kF32, {3, 4, 7}, 2);
  const Tensor v = random_tensor(kF32, {3, 7, 6}, 3), bias = random_tensor(kF32, {5, 7}, 4, -2.0, 2.0);
  const Node with_bias = NodeBuilder("Attention").domain("fovea").inputs(4).attr("scale", 0.5f).build();
  EXPECT_TRUE(tensors_near(run_node(with_bias, {q, kt, v, bias})[0],
                           attention_by_loops(q, kt, v, &bias, 0.5f), 1e-5, 1e-5));
  const Node without = NodeBuilder("Attention").domain("fovea").inputs(3).build();
  EXPECT_TRUE(tensors_near(run_node(without, {q, kt, v})[0], attention_by_loops(q, kt, v, nullptr, 1.0f),
                           1e-5, 1e-5));
}

TEST(Opfovea_Attention, RefusesOperandsThatDoNotChainNamingTheirShapes) {
  const Node node = NodeBuilder("Attention").domain("fovea").inputs(3).build();
  const Tensor q = random_tensor(kF32, {2, 5, 4}, 1), v = random_tensor(kF32, {2, 7, 6}, 3);
  Status status = run_node_status(node, {q, random_tensor(kF32, {2, 3, 7}, 2), v});  // D 4 against 3
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("do not chain"), std::string::npos) << status.message();
  status = run_node_status(node, {q, random_tensor(kF32, {3, 4, 7}, 2), v});  // 2 matrices against 3
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("same leading dims"), std::string::npos) << status.message();
}

// P [T 5, M 3, 3, D 4] holds Q, K and V of each of M matrices side by side, as a QKV projection
// writes them: element (t, m, which, e) at t * 36 + m * 12 + which * 4 + e.
Tensor packed_operand(const Tensor& p, int which, bool transposed) {
  const std::int64_t t_count = p.dim(0), m_count = p.dim(1), d = p.dim(3);
  Tensor out = Tensor::allocate(kF32, transposed ? Shape{m_count, d, t_count} : Shape{m_count, t_count, d});
  for (std::int64_t m = 0; m < m_count; ++m) {
    for (std::int64_t t = 0; t < t_count; ++t) {
      for (std::int64_t e = 0; e < d; ++e) {
        const std::int64_t to = transposed ? (m * d + e) * t_count + t : (m * t_count + t) * d + e;
        out.data<float>()[to] = p.data<float>()[((t * m_count + m) * 3 + which) * d + e];
      }
    }
  }
  return out;
}

Node packed_attention(std::vector<std::int64_t> q_view) {
  return NodeBuilder("Attention")
      .domain("fovea")
      .inputs(3)
      .attr("scale", 0.5f)
      .attr("q_view", std::move(q_view))
      .attr("kt_view", std::vector<std::int64_t>{4, 3, 12, 4, 1, 5, 36})
      .attr("v_view", std::vector<std::int64_t>{8, 3, 12, 5, 36, 4, 1})
      .attr("y_perm", std::vector<std::int64_t>{1, 0, 2})
      .build();
}

TEST(Opfovea_Attention, ReadsViewsOfAPackedProjectionAndWritesTheHeadsMerged) {
  const Tensor p = random_tensor(kF32, {5, 3, 3, 4}, 5);
  const Node node = packed_attention({0, 3, 12, 5, 36, 4, 1});
  const Tensor y = attention_by_loops(packed_operand(p, 0, false), packed_operand(p, 1, true),
                                      packed_operand(p, 2, false), nullptr, 0.5f);  // [M, T, Dv]
  Tensor expected = Tensor::allocate(kF32, {5, 3, 4});                              // [T, M, Dv]
  for (std::int64_t m = 0; m < 3; ++m) {
    for (std::int64_t t = 0; t < 5; ++t) {
      for (std::int64_t e = 0; e < 4; ++e)
        expected.data<float>()[(t * 3 + m) * 4 + e] = y.data<float>()[(m * 5 + t) * 4 + e];
    }
  }
  const std::vector<Tensor> got = run_node(node, {p, p, p});
  ASSERT_EQ(got[0].shape(), (Shape{5, 3, 4}));
  EXPECT_TRUE(tensors_near(got[0], expected, 1e-5, 1e-5));
}

TEST(Opfovea_Attention, RefusesAViewPastItsInputNamingTheAttribute) {
  const Tensor p = random_tensor(kF32, {5, 3, 3, 4}, 5);
  // Q's last row would start at 4 * 36 + 2 * 12 + 170 = 338, past the 180 elements.
  const Status status = run_node_status(packed_attention({170, 3, 12, 5, 36, 4, 1}), {p, p, p});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("q_view reaches past its input"), std::string::npos) << status.message();
  // An offset without its (size, stride) pairs complete, and a negative stride.
  for (const std::vector<std::int64_t>& malformed :
       {std::vector<std::int64_t>{0, 3, 12, 5, 36, 4}, std::vector<std::int64_t>{0, 3, 12, 5, -36, 4, 1}}) {
    const Status refused = run_node_status(packed_attention(malformed), {p, p, p});
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.message().find("q_view"), std::string::npos) << refused.message();
  }
}

}  // namespace
}  // namespace fovea::runtime::testing
