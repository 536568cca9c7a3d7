#!/usr/bin/env bash
# Sets up and builds fovea, then runs `fovea demo`: it generates a short synthetic 1080p clip and a
# small segmentation model (an ONNX file fovea writes itself), blurs the clip's background with the
# segmentation flow (decode -> infer -> blur -> encode; on the GPU when there is one, on the CPU
# otherwise, and it says which) and prints the stats table.
#
#   scripts/demo.sh [OUTPUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh release
build/release/apps/fovea/fovea demo -o "${1:-out/demo}"
