#!/usr/bin/env bash
# Image and postprocessing benchmarks for docs/perf.md, run on the GPU machine after a release
# build, each next to its peer in the same run:
#
#   bench/image_bench.sh BUILD_DIR OUT_DIR
#
#   - fused preprocess (8 x 1080p NV12 -> 3x544x960 f16 NCHW) vs device-to-device copy and vs the
#     PyTorch sequence (bench/preprocess_torch.py);
#   - blur + composite of 8 1080p RGB frames vs device-to-device copy;
#   - color conversion vs device-to-device copy;
#   - batched NMS at the SSD300 shape vs torchvision's batched_nms on the same input
#     (bench/nms_torch.py).
set -uo pipefail
build=$1
out=$2
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
status=0
step() {
  echo "== $*"
  "$@" || { echo "FAILED: $*"; status=1; }
}
step "$build/bench/preprocess_bench" --json "$out/preprocess.json"
step python3 "$here/preprocess_torch.py" --fovea-json "$out/preprocess.json"
step "$build/bench/blur_composite_bench" 15 8 100
step "$build/bench/color_bench"
mkdir -p "$out/nms"
step "$build/bench/nms_bench" "$out/nms"
step python3 "$here/nms_torch.py" "$out/nms"
exit $status
