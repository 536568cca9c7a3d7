#!/usr/bin/env bash
# Sets up, builds and runs fovea's tests: every test (GPU tests report themselves skipped without
# a GPU), then again under AddressSanitizer + UBSan all but the ones labelled `live` (real servers)
# and `cli` (the binary's flags and summaries), which would double the run for little (tests/CMakeLists.txt).
#
#   scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh release
ctest --preset release -j "$(nproc)"
if [ "${FOVEA_SKIP_ASAN:-0}" != 1 ]; then
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$(nproc)"
  ctest --preset asan -j "$(nproc)"
fi
if [ "${FOVEA_SKIP_FUZZ:-0}" != 1 ]; then
  # 20 s per target in CI: the whole run must stay under its hour (~52 min at 9c2686f); scripts/fuzz.sh N runs longer.
  scripts/fuzz.sh 20
fi
