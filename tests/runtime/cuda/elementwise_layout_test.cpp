// The elementwise kernel's dim merging (host-only: runs without a GPU).
#include "runtime/cuda/elementwise_layout.h"

#include <gtest/gtest.h>

namespace fovea::runtime::cuda {
namespace {

TEST(CudaElementwiseLayout, SameShapesAndScalarsAreFlat) {
  const ElementwiseLayout layout = elementwise_layout({5, 3, 13, 17}, {{5, 3, 13, 17}, {}, {1, 1}});
  EXPECT_EQ(layout.dims, (Shape{3315}));
  EXPECT_EQ(layout.strides, (std::vector<Shape>{{1}, {0}, {0}}));
}

TEST(CudaElementwiseLayout, PerChannelBiasMergesTheSpatialDims) {
  const ElementwiseLayout layout = elementwise_layout({4, 3, 16, 24}, {{4, 3, 16, 24}, {3, 1, 1}});
  EXPECT_EQ(layout.dims, (Shape{4, 3, 384}));
  EXPECT_EQ(layout.strides, (std::vector<Shape>{{1152, 384, 1}, {0, 1, 0}}));
}

TEST(CudaElementwiseLayout, RowBroadcastMergesTheOuterDims) {
  const ElementwiseLayout layout = elementwise_layout({5, 3, 13, 16}, {{5, 3, 13, 16}, {16}});
  EXPECT_EQ(layout.dims, (Shape{195, 16}));
  EXPECT_EQ(layout.strides, (std::vector<Shape>{{16, 1}, {0, 1}}));
}

TEST(CudaElementwiseLayout, SizeOneDimsAreDropped) {
  const ElementwiseLayout layout = elementwise_layout({2, 1, 7, 1, 3}, {{2, 1, 7, 1, 1}, {1, 1, 1, 1, 3}});
  EXPECT_EQ(layout.dims, (Shape{14, 3}));
  EXPECT_EQ(layout.strides, (std::vector<Shape>{{1, 0}, {0, 1}}));
}

TEST(CudaElementwiseLayout, AlternatingBroadcastsDoNotMerge) {
  const ElementwiseLayout layout = elementwise_layout({2, 3, 5}, {{2, 1, 5}, {3, 1}});
  EXPECT_EQ(layout.dims, (Shape{2, 3, 5}));
  EXPECT_EQ(layout.strides, (std::vector<Shape>{{5, 0, 1}, {0, 1, 0}}));
}

TEST(CudaElementwiseLayout, OneElementIsOneDim) {
  const ElementwiseLayout layout = elementwise_layout({1, 1}, {{1}, {}});
  EXPECT_EQ(layout.dims, (Shape{1}));
  EXPECT_EQ(layout.strides, (std::vector<Shape>{{0}, {0}}));
}

}  // namespace
}  // namespace fovea::runtime::cuda
