#!/usr/bin/env bash
# Sets up and builds fovea, generates a 10-second 1080p test clip, and transcodes it with fovea
# (NVDEC when a GPU is present, otherwise CPU decoding; libx264 encoding).
#
#   scripts/demo.sh [OUTPUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh release
out=${1:-out/demo}
mkdir -p "$out"
clip="$out/input.mp4"
if [ ! -s "$clip" ]; then
  echo "demo: generating $clip (testsrc2 + noise, H.264 High, 8 Mb/s, B-frames)"
  ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=12:allf=t+u" -t 10 \
    -c:v libx264 -preset veryfast -profile:v high -b:v 8M -bf 2 -g 60 -pix_fmt yuv420p "$clip"
fi
build/release/apps/fovea/fovea probe "$clip"
build/release/apps/fovea/fovea transcode "$clip" "$out/output.mp4" --decoder auto --codec h264 --preset veryfast
build/release/apps/fovea/fovea probe "$out/output.mp4"
