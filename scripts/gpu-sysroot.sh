#!/usr/bin/env bash
# Makes .devsys/ for the GPU machine (../shared/device/README.md): the shared sysroot plus every
# Debian library fovea links beyond it. Keep EXTRA in step with scripts/setup.sh and
# cmake/FoveaDependencies.cmake: a library missing here fails the GPU machine's configure step.
#   scripts/gpu-sysroot.sh            (from the repository root, after scripts/setup.sh)
set -euo pipefail
device=${FOVEA_DEVICE_DIR:-../shared/device}
extra=(libjpeg62-turbo-dev libjpeg62-turbo libpng-dev libpng16-16
       libwebp-dev libwebp7 libwebpdemux2 libwebpmux3
       libmosquitto-dev libmosquitto1 libcpp-httplib-dev libcpp-httplib0.11
       libssl-dev libssl3 zlib1g-dev libbrotli-dev libbrotli1)
grep -qx '/.devsys/' .git/info/exclude || echo '/.devsys/' >> .git/info/exclude
mkdir -p .devsys
"$device/make-sysroot.sh" .devsys/sysroot.tar.xz "${extra[@]}"
cp "$device/gpu-env.sh" .devsys/
