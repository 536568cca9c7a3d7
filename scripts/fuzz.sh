#!/usr/bin/env bash
# Builds the "fuzz" preset (clang, libFuzzer + ASan + UBSan) and runs each fuzz target for SECONDS
# (default 60): onnx_loader (the ONNX loader and planner) and image_decode (the image readers);
# name targets to run only those. Seed corpora are made at run time: models from ONNX's backend
# test data (libonnx-testdata), small pictures in every format from ffmpeg, where installed. Fails
# on a crash, a leak, a timeout or running out of memory; libFuzzer then leaves the input as
# build/fuzz/artifacts/TARGET-crash-* (or leak-*, ...).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(onnx_loader image_decode)

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT

seed_onnx_loader() {  # DIR
  local data=/usr/include/onnx/backend/test/data i=0
  [ -d "$data" ] || return 0
  # Every 3rd node test and all the small-network models: all the ops, every element type, and the
  # encodings (raw and typed data, Constant attributes) without thousands of near-duplicates.
  for model in "$data"/node/*/model.onnx "$data"/simple/*/model.onnx "$data"/pytorch-operator/*/model.onnx; do
    if ((i++ % 3 == 0)) && [ "$(stat -c %s "$model")" -le 65536 ]; then
      cp "$model" "$1/$(basename "$(dirname "$model")").onnx"
    fi
  done
}

seed_image_decode() {  # DIR
  command -v ffmpeg >/dev/null || return 0
  # Odd sizes; each format in the pixel layouts its decoder handles differently.
  local forms=(jpg:yuvj420p jpg:yuvj444p jpg:gray png:rgb24 png:rgba png:gray png:gray16be png:rgb48be
               png:pal8 bmp:bgr24 bmp:bgra bmp:pal8 webp:yuv420p webp:yuva420p)
  for form in "${forms[@]}"; do
    ffmpeg -v error -f lavfi -i testsrc2=size=37x21 -frames:v 1 -pix_fmt "${form#*:}" \
      "$1/seed_${form#*:}.${form%%:*}" || true
  done
}

mkdir -p build/fuzz/artifacts
status=0
for target in "${targets[@]}"; do
  mkdir -p "$corpus/$target"
  "seed_$target" "$corpus/$target"
  dict=()
  [ ! -f "tests/fuzz/$target.dict" ] || dict=(-dict="tests/fuzz/$target.dict")
  echo "fuzz $target: $(find "$corpus/$target" -type f | wc -l) seeds, ${seconds} s"
  # -max_len: the seeds are at most 64 KiB; larger inputs only make each run slower.
  # -timeout: one input taking over 10 s is a hang worth reporting.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build/fuzz/tests/fuzz/fovea_${target}_fuzz" "$corpus/$target" "${dict[@]}" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="build/fuzz/artifacts/$target-" || status=$?
  ((status == 0)) || break
done
exit "$status"
