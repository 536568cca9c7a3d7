#!/usr/bin/env bash
# Installs fovea's build dependencies from Debian bookworm's packages (and nothing else), then
# configures and builds the given CMake preset (default: release). libonnx-testdata holds ONNX's
# backend test cases (the conformance test); clang-14 and libclang-rt-14-dev build the fuzzers.
#
#   scripts/setup.sh [PRESET]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}

packages=(build-essential cmake ninja-build pkgconf git
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libffmpeg-nvenc-dev ffmpeg
  libprotobuf-dev protobuf-compiler libonnx-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libjpeg62-turbo-dev libpng-dev libwebp-dev  # image files (src/io/image_*)
  libonnx-testdata clang-14 libclang-rt-14-dev
  libmosquitto-dev libcpp-httplib-dev  # metadata to MQTT, the HTTP API of fovea serve
  mosquitto libgstrtspserver-1.0-dev gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-ugly  # tests only: a real broker and a real RTSP server
  libopencv-dev)  # tests only: the parity reference for resize, blur and color conversion

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null; then
  echo "setup: CUDA toolkit found; building the CUDA parts"
else
  echo "setup: no CUDA toolkit; building CPU-only (NVDEC and GPU tests are left out)"
fi
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
