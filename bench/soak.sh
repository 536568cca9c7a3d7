#!/bin/sh
# The soak test of `fovea serve` with live RTSP cameras (issue 24): bench/soak/soak.py with the
# issue's defaults (16 cameras, 60 minutes, CPU); every flag is passed on (bench/soak/README.md).
exec python3 "$(dirname "$0")/soak/soak.py" "$@"
