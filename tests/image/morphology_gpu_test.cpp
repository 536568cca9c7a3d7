#include <memory>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "image/image_test_util.h"
#include "image/morphology.h"

namespace fovea::image::testing {
namespace {

struct Size {
  int width;
  int height;
};

void expect_cuda_matches_cpu(const std::vector<Size>& sizes, const MorphologyParams& params, bool in_place) {
  std::vector<std::unique_ptr<HostImage>> h_in, h_out;
  std::vector<std::unique_ptr<DeviceImage>> d_in, d_out;
  ImageBatch hi, ho, di, dout;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto [w, h] = sizes[i];
    h_in.push_back(std::make_unique<HostImage>(PixelFormat::kGRAY8, w, h, 3, 5));
    h_in.back()->fill_random(static_cast<std::uint32_t>(7 + i));
    // Sparse masks make dilate and erode both visible: keep ~1 in 8 pixels.
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        std::uint8_t& v = h_in.back()->view().row(0, y)[x];
        v = v < 32 ? 255 : (v < 64 ? v : 0);
      }
    h_out.push_back(std::make_unique<HostImage>(PixelFormat::kGRAY8, w, h, 3, 3));
    d_in.push_back(std::make_unique<DeviceImage>(PixelFormat::kGRAY8, w, h));
    d_out.push_back(std::make_unique<DeviceImage>(PixelFormat::kGRAY8, w, h));
    d_in.back()->upload(*h_in.back());
    d_out.back()->upload(*h_out.back());
    const Roi roi = i % 2 == 1 ? Roi{1, 2, w - 2, h - 3} : Roi{};
    hi.images.push_back(h_in.back()->view());
    ho.images.push_back(h_out.back()->view());
    di.images.push_back(d_in.back()->view());
    dout.images.push_back(d_out.back()->view());
    for (ImageBatch* b : {&hi, &ho, &di, &dout}) b->rois.push_back(roi);
  }
  if (in_place) {
    ho = hi;
    dout = di;
  }
  auto plan = plan_morphology(di, params);
  ASSERT_TRUE(plan.is_ok());
  void* d_work = nullptr;
  ASSERT_EQ(cudaMalloc(&d_work, plan->workspace_bytes), cudaSuccess);
  ASSERT_TRUE(run_morphology_cpu(hi, ho, params).is_ok());
  Status status = run_morphology_cuda(nullptr, di, dout, params, d_work, plan->workspace_bytes);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    HostImage got = (in_place ? d_in[i] : d_out[i])->download(2);
    // Min and max are exact: no tolerance.
    EXPECT_EQ(max_abs_difference(got.view(), (in_place ? h_in[i] : h_out[i])->view()), 0.0) << "image " << i;
  }
  EXPECT_FALSE(run_morphology_cuda(nullptr, di, dout, params, d_work, plan->workspace_bytes - 1).is_ok());
  cudaFree(d_work);
}

MorphologyParams make(MorphologyOp op, int w, int h, int iterations) {
  return MorphologyParams{op, w, h, iterations};
}

TEST(MorphologyGpu, MatchesCpu) {
  FOVEA_REQUIRE_GPU();
  for (MorphologyOp op : {MorphologyOp::kDilate, MorphologyOp::kErode}) {
    expect_cuda_matches_cpu({{13, 127}}, make(op, 3, 3, 1), false);
    expect_cuda_matches_cpu({{127, 13}, {40, 33}, {9, 5}}, make(op, 7, 2, 2), false);
    expect_cuda_matches_cpu({{64, 48}, {31, 17}}, make(op, 21, 1, 3), true);
  }
  std::vector<Size> many;
  for (int i = 0; i < 19; ++i) many.push_back({10 + i, 30 - i});
  expect_cuda_matches_cpu(many, make(MorphologyOp::kDilate, 4, 6, 2), false);
}

}  // namespace
}  // namespace fovea::image::testing
