#!/usr/bin/env bash
# Builds the "fuzz" preset (clang, libFuzzer + ASan + UBSan) and fuzzes the ONNX loader for
# SECONDS (default 60). The seed corpus is made at run time from the models of ONNX's backend test
# data (libonnx-testdata) when it is installed. Fails on a crash, a leak, a timeout or running out
# of memory; libFuzzer then leaves the input as build/fuzz/artifacts/crash-* (or leak-*, ...).
#
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
data=/usr/include/onnx/backend/test/data

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
if [ -d "$data" ]; then
  # Every 3rd node test and all the small-network models: all the ops, every element type, and the
  # encodings (raw and typed data, Constant attributes) without thousands of near-duplicates.
  i=0
  for model in "$data"/node/*/model.onnx "$data"/simple/*/model.onnx "$data"/pytorch-operator/*/model.onnx; do
    if ((i++ % 3 == 0)) && [ "$(stat -c %s "$model")" -le 65536 ]; then
      cp "$model" "$corpus/$(basename "$(dirname "$model")").onnx"
    fi
  done
fi
echo "fuzz: $(find "$corpus" -type f | wc -l) seed models, ${seconds} s"

mkdir -p build/fuzz/artifacts
# -max_len: the seeds are at most 64 KiB; larger inputs only make each run slower.
# -timeout: one input taking over 10 s is a hang worth reporting.
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  build/fuzz/tests/fuzz/fovea_onnx_loader_fuzz "$corpus" \
  -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -timeout=10 -print_final_stats=1 \
  -artifact_prefix=build/fuzz/artifacts/
