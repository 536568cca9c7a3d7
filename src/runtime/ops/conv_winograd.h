// 3x3 convolutions with stride 1 as Winograd's F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2016) on the CPU executor: every 2x2 block of outputs comes from
// a 4x4 block of the input with 16 multiplications per (input, output) channel pair instead of 36,
// and the 16 products of all tiles and channel pairs are 16 matrix products over the channels (the
// executor's one gemm). 2.25x fewer multiplications; the transforms only add, subtract and halve
// (exact in binary floating point), so the results differ from the direct sums in rounding only.
#pragma once

#include <cstdint>

namespace fovea::runtime::ops {

// X [N, C, in_h, in_w] convolved with W [M, C, 3, 3] at stride 1, dilation 1, one group, into
// Y [N, M, out_h, out_w]; pads before (the ones after follow from the output size).
struct WinogradShape {
  std::int64_t batch = 0, channels = 0, out_channels = 0;
  std::int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  std::int64_t pad_top = 0, pad_left = 0;
};

// Where convolutions take F(2x2, 3x3): where it pays (the default), nowhere (the im2col product,
// for comparing the two), or on every 3x3 stride-1 layer (tests with small channel counts).
enum class WinogradUse { kWherePays, kNever, kAlways };

// Whether a layer of these channel counts takes F(2x2, 3x3). Where it pays: 128 channels or more
// both ways. Below, the transforms and the 16 products' packing cost more than the multiplications
// saved (docs/perf.md: 64 channels 1.5x slower, 128 even, 256 faster, a mask head's 14 x 14 boxes
// 1.8x faster).
bool takes_winograd(std::int64_t channels, std::int64_t out_channels);

// Y = conv(X, W), or Y += conv(X, W) when `accumulate` (Y holds the bias and residual).
template <typename T>
void winograd_conv_3x3(const T* x, const T* w, T* y, const WinogradShape& s, bool accumulate);

// Sets where convolutions take F(2x2, 3x3); returns the previous setting.
WinogradUse use_winograd(WinogradUse use);

}  // namespace fovea::runtime::ops
