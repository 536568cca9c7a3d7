// fovea.Attention on the CPU against attention written out here in loops (scores, scale, bias,
// softmax over the keys, weighted sum of V), and its refusals.
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

}  // namespace
}  // namespace fovea::runtime::testing
