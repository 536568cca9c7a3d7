#!/usr/bin/env bash
# Packs what the soak needs on the GPU machine beyond .devsys/ (../shared/device/README.md): that
# machine has no GStreamer and no mosquitto, so the test RTSP server, the GStreamer plugins its
# pipeline uses, the mosquitto broker and every library they load (glibc's aside) travel as one
# folder, with wrappers that point the dynamic linker and GStreamer at it.
#
#   bench/soak/gpu-kit.sh BUILD_DIR OUT_DIR     (BUILD_DIR holds tests/support/fovea_rtsp_test_server)
#
# Then, on the GPU machine: bench/soak.sh --rtsp-server OUT_DIR/bin/fovea_rtsp_test_server \
#   --mosquitto OUT_DIR/bin/mosquitto --device cuda ...
set -euo pipefail
build=$(realpath "$1")
out=$(realpath -m "$2")
gst_dir=/usr/lib/x86_64-linux-gnu/gstreamer-1.0
scanner=/usr/lib/x86_64-linux-gnu/gstreamer1.0/gstreamer-1.0/gst-plugin-scanner
# The elements of the test server's launch line (tests/support/rtsp_test_server.cpp) and of
# GStreamer's RTSP server: sources, encoder, payloaders, RTP sessions and UDP/TCP transport.
plugins=(coreelements videotestsrc videoconvertscale x264 rtp rtpmanager udp tcp app)

rm -rf "$out"
mkdir -p "$out/bin" "$out/libexec" "$out/lib" "$out/gst"
cp "$build/tests/support/fovea_rtsp_test_server" /usr/sbin/mosquitto "$scanner" "$out/libexec/"
for p in "${plugins[@]}"; do cp "$gst_dir/libgst$p.so" "$out/gst/"; done

# Every shared library the binaries and plugins load, but glibc's own (the GPU machine's is newer).
is_glibc() { [[ $1 =~ ^(libc|libm|libdl|librt|libpthread|libresolv|ld-linux-x86-64)\.so ]]; }
for f in "$out"/libexec/* "$out"/gst/*.so; do
  ldd "$f" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  is_glibc "$(basename "$lib")" || cp -L "$lib" "$out/lib/"
done

for exe in fovea_rtsp_test_server mosquitto; do
  cat > "$out/bin/$exe" <<EOF
#!/bin/sh
kit=\$(cd "\$(dirname "\$0")/.." && pwd)
export LD_LIBRARY_PATH="\$kit/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export GST_PLUGIN_SYSTEM_PATH_1_0="\$kit/gst" GST_PLUGIN_SCANNER_1_0="\$kit/libexec/gst-plugin-scanner"
export GST_REGISTRY_1_0="\${TMPDIR:-/tmp}/fovea-soak-gst-registry.bin"
exec "\$kit/libexec/$exe" "\$@"
EOF
  chmod +x "$out/bin/$exe"
done
echo "gpu-kit: $out ($(du -sh "$out" | cut -f1))"
