#!/usr/bin/env bash
# docs/profiling.md's walk-through, on the GPU machine: a batch-size sweep of the segmentation flow
# (4 sources of the reference 1080p clip, FCN-ResNet101 544x960 fp16, class 8, blur 31, null sink).
#   bench/pipeline/sweep_walkthrough.sh FOVEA_BINARY WORK_DIR
# WORK_DIR must hold clip_1080p.mp4 and fcn_resnet101.onnx (bench/pipeline/segment_bench.sh makes them).
set -euo pipefail
fovea=$(realpath "$1")
work=$(realpath "$2")
cat > "$work/sweep.yaml" <<YAML
sources:
  - uri: $work/clip_1080p.mp4
  - uri: $work/clip_1080p.mp4
  - uri: $work/clip_1080p.mp4
  - uri: $work/clip_1080p.mp4
model:
  path: $work/fcn_resnet101.onnx
  precision: fp16
  mean: [0.485, 0.456, 0.406]
  std: [0.229, 0.224, 0.225]
  input_width: 960
  input_height: 544
task:
  classes: [8]
  blur_kernel: 31
sinks:
  null: true
YAML
"$fovea" sweep "$work/sweep.yaml" --param mux.batch_size=1,2,4,8,16 --out "$work/sweep"
