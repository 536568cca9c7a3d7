// Whether a GPU can be used: this build has CUDA and the driver sees at least one device. What
// every "auto" device choice (flows, decoders, tests that skip) asks, so they all agree.
#pragma once

namespace fovea {

bool gpu_available();

}  // namespace fovea
