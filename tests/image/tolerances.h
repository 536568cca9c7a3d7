// The one table of tolerances for image and postprocessing tests. Every entry says where its
// number comes from; tests use these names, never literals.
#pragma once

namespace fovea::image::testing {

// uint8 outputs of ops that compute in float and round once: a CUDA and a CPU run may round a
// value that lies within float error of .5 differently, so they may differ by one step.
inline constexpr double kU8RoundingTolerance = 1.0;
// The fused background blur (blur_composite.h) filters on the tensor cores in half precision:
// weights with 11 significant bits move each pass by at most 255 * 2^-11 = 0.125 and the half
// intermediate by 1/16 more, ~0.31 in all, so its blurred bytes are the float reference's or one
// step off. It blends in half too: the blurred byte's step moves the blend by 1 - m/255 and the
// weight m/255 (11 significant bits) by at most (m/255) * 255 * 2^-11, under one step together, so
// the output is also the reference's or one step off.
inline constexpr double kU8HalfPrecisionTolerance = 1.0;
// Parity with OpenCV / libswscale on uint8 (the issue's ±1): they use fixed-point arithmetic with
// their own rounding, fovea rounds float math once.
inline constexpr double kU8ParityTolerance = 1.0;
// float32 outputs of short computations (a few multiply-adds per element, values within [0, 1] or
// normalized to ~[-3, 3]): CUDA's fused multiply-add and reassociation change the last bits;
// 1e-5 is ~80 float32 ulps at 1.0.
inline constexpr double kF32Tolerance = 1e-5;
// float16 outputs: half has 11 significant bits, so one rounding step is ~1e-3 relative near 1.0;
// values normalized to ~[-3, 3] get 2e-3 absolute (one ulp at 2..4) plus the float32 difference.
inline constexpr double kF16Tolerance = 2e-3;
// Box coordinates after decoding (float32, pixel units up to ~1000): relative 1e-6 of the
// magnitude times a few operations.
inline constexpr double kBoxTolerance = 1e-3;

// RGB8 -> 8-bit YUV (limited range) -> RGB8 on 2x2-constant blocks: half a Y step is 0.58 (255/219/2)
// and half a chroma step times the largest chroma coefficient is 1.06 (B's 2 * (1 - 0.0722) *
// 255/224 / 2 for BT.709); 1.64 in all, so the rounded result is within 2 of the original.
inline constexpr double kU8YuvRoundTripTolerance = 2.0;

}  // namespace fovea::image::testing
