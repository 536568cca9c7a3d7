// The activations a convolution's epilogue applies on the device (ops::Activation, whose CPU form
// is Activation::apply), for cuDNN's convolutions' epilogue pass and fovea's own depthwise kernel.
#pragma once

#include "runtime/ops/conv_util.h"

namespace fovea::runtime::cuda {

template <typename C>
__device__ __forceinline__ C activate(C v, const ops::Activation& a) {
  switch (a.kind) {
    case ops::Activation::Kind::kNone: return v;
    case ops::Activation::Kind::kRelu: return v > C(0) ? v : C(0);
    case ops::Activation::Kind::kLeakyRelu: return v < C(0) ? C(a.alpha) * v : v;
    case ops::Activation::Kind::kClip: return v < C(a.min) ? C(a.min) : (v > C(a.max) ? C(a.max) : v);
    case ops::Activation::Kind::kSigmoid: return C(1) / (C(1) + exp(-v));
    case ops::Activation::Kind::kHardSwish: {
      const C gate = v / C(6) + C(0.5);
      return v * (gate < C(0) ? C(0) : (gate > C(1) ? C(1) : gate));
    }
    case ops::Activation::Kind::kSilu: return v / (C(1) + exp(-v));
  }
  return v;
}

}  // namespace fovea::runtime::cuda
