// libFuzzer target for the ONNX loader: arbitrary bytes must give a model or an error, never a
// crash, a leak or undefined behaviour. Bytes that load are planned too (shape inference, constant
// folding, passes, memory planning), with small input shapes, since every op's infer() must also
// survive whatever a hostile file puts in its attributes and constants.
//
//   scripts/fuzz.sh [SECONDS] onnx_loader
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/onnx_loader.h"
#include "runtime/planner.h"

namespace {

using namespace fovea::runtime;

// Initializers total at most this much, so that a file claiming huge tensors is an error rather
// than an allocation the fuzzer's RSS limit would report.
constexpr std::uint64_t kMaxTensorBytes = std::uint64_t{64} << 20;
// Inputs are planned only when they hold at most this many elements together: the fuzzer looks
// for bugs, not for models that are legitimately too big to plan quickly.
constexpr std::int64_t kMaxInputElements = std::int64_t{1} << 20;
// Unknown input dims become this: small, and not 1, so broadcasting is exercised.
constexpr std::int64_t kDefaultDim = 2;

bool small_enough(const InputShapes& shapes) {
  std::int64_t total = 0;
  for (const auto& [name, shape] : shapes) {
    std::int64_t count = 1;
    for (std::int64_t d : shape) {
      // Each dim is at most 2^31 (the loader checks), so this test keeps the product in range.
      if (d != 0 && count > kMaxInputElements / d) return false;
      count *= d;
    }
    total += count;
    if (total > kMaxInputElements) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  LoadOptions options;
  options.max_total_tensor_bytes = kMaxTensorBytes;
  // A base folder that does not exist: external data references must fail cleanly.
  auto model = parse_onnx(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.onnx",
                          "/nonexistent/fovea-fuzz", options);
  if (!model.is_ok()) return 0;
  auto shapes = resolve_input_shapes(model->graph, {}, kDefaultDim);
  if (!shapes.is_ok() || !small_enough(*shapes)) return 0;
  auto plan = plan_graph(model->graph, *shapes);
  (void)plan;
  return 0;
}
