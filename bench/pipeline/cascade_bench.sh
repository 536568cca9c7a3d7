#!/usr/bin/env bash
# The cascade's figures (issue 20, docs/perf.md), on the GPU machine:
#   bench/pipeline/cascade_bench.sh FOVEA_BINARY OUT_DIR
# SOURCES (default 64) sources of the 1080p30 H.264 8 Mb/s clip of ../shared/device/README.md
# (CLIP_SECONDS long, default 10), decoded on NVDEC, batch min(SOURCES, 32), null sink, OSD off:
#   detector    the DetectNet-style ResNet-34 at 960x544 fp16 (seeded weights, dynamic batch);
#               its scores mean nothing, so the load is fixed instead: confidence 0 and top_k 20
#               (20 objects on every inferred frame);
#   tracker     ByteTrack;
#   classifiers two ResNet-18s at 224x224 fp16 ("color" and "type", the same seeded network),
#               SECONDARY_BATCH objects per inference (default 64), reinfer_interval 10, on every
#               object (SKIP_UNTRACKED=true: on every tracked object, as DeepStream's secondary
#               models see only confirmed tracks).
# mux.source_queue is SOURCE_QUEUE (default 4, fovea's default).
# Runs, each `fovea run` with its report (steady fps after the first output):
#   - fovea decode-bench, NVDEC, SOURCES sessions: the decode ceiling;
#   - for each interval in INTERVALS (default "0 1 2"): the primary and tracker alone
#     (stages [detect, track]), then the whole cascade;
#   - fovea sweep over detect.interval (SWEEP_INTERVALS, default 0,2) and both classifiers' batch
#     size together (SWEEP_BATCHES, default 3,9,27,81, as the DeepStream tutorial sweeps it), each
#     source cut to its first SWEEP_SECONDS (default 5: every sweep run is traced, and a trace of
#     the whole clip at 64 sources holds millions of GPU operations); SWEEP=0 leaves it out;
#   - with TRACE=1, the whole cascade at the last interval again under --trace, and `fovea report`
#     on it (trace_report.txt).
# Every command's output goes to OUT_DIR; summary.md (printed last) has the tables: the streams, and
# what each classify stage counted (objects classified, without a track, labels reused).
set -euo pipefail
fovea=$(realpath "$1")
out=$(realpath -m "$2")
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
sources=${SOURCES:-64}
batch=$((sources < 32 ? sources : 32))
read -r -a intervals <<< "${INTERVALS-0 1 2}"  # INTERVALS="" runs none (the sweep alone)
mkdir -p "$out"

clip="$out/clip_1080p.mp4"
[ -f "$clip" ] || ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=12:allf=t+u" \
  -t "${CLIP_SECONDS:-10}" -c:v libx264 -preset medium -profile:v high -b:v 8M -bf 2 -g 60 -pix_fmt yuv420p "$clip"
for model in detectnet_resnet34 resnet18; do
  [ -f "$out/$model.onnx" ] || (cd "$here/../models" && "$py" -c \
    "import compare_torch as c; c.export_dynamic('$model', '$out/$model.onnx')") > "$out/export_$model.log" 2>&1
done
[ -f "$out/decode.json" ] || "$fovea" decode-bench "$clip" --decoder nvdec --sessions "$sources" --repeat 2 \
  --json "$out/decode.json" > "$out/decode.log" 2>&1 || true

write_config() {  # [SOURCE_KEYS]: the configuration on stdout, SOURCE_KEYS (", duration: 5") in every source
  echo "sources:"
  for ((i = 0; i < sources; ++i)); do echo "  - {uri: $clip, name: cam-$i, decoder: nvdec${1:-}}"; done
  cat <<EOF
flow: detection
mux: {batch_size: $batch, width: 1920, height: 1080, source_queue: ${SOURCE_QUEUE:-4}}
models:
  - {name: detector, path: $out/detectnet_resnet34.onnx, parser: detectnet, precision: fp16,
     input_width: 960, input_height: 544, mean: [0, 0, 0], std: [1, 1, 1], engine_cache: $out/engines}
  - {name: color, path: $out/resnet18.onnx, precision: fp16, batch_size: ${SECONDARY_BATCH:-64},
     input_width: 224, input_height: 224, engine_cache: $out/engines}
  - {name: type, path: $out/resnet18.onnx, precision: fp16, batch_size: ${SECONDARY_BATCH:-64},
     input_width: 224, input_height: 224, engine_cache: $out/engines}
detect: {model: detector, confidence: 0, top_k: 20}
track: {enabled: true, tracker: bytetrack}
secondary:
  - {model: color, reinfer_interval: 10, skip_untracked: ${SKIP_UNTRACKED:-false}}
  - {model: type, reinfer_interval: 10, skip_untracked: ${SKIP_UNTRACKED:-false}}
sinks: {null: true}
EOF
}
config="$out/cascade.yaml"
write_config > "$config"

run() {  # NAME --set ARGS...
  local name=$1
  shift
  "$fovea" run "$config" --device cuda --report "$out/$name.json" --no-progress "$@" \
    > "$out/$name.log" 2>&1 || echo "$name: exit $? (see $out/$name.log)"
}
for interval in "${intervals[@]}"; do
  run "primary_i$interval" --set "detect.interval=$interval" --set "stages=[detect, track]"
  run "cascade_i$interval" --set "detect.interval=$interval"
done
if [ "${TRACE:-0}" = 1 ]; then
  run "trace_i${intervals[-1]}" --set "detect.interval=${intervals[-1]}" --trace "$out/trace"
  "$fovea" report "$out/trace" > "$out/trace_report.txt" 2>&1 || echo "report: exit $?"
fi
if [ "${SWEEP:-1}" != 0 ]; then
  write_config ", duration: ${SWEEP_SECONDS:-5}" > "$out/sweep.yaml"
  "$fovea" sweep "$out/sweep.yaml" --device cuda --out "$out/sweep" --param "detect.interval=${SWEEP_INTERVALS:-0,2}" \
    --param "models.1.batch_size+models.2.batch_size=${SWEEP_BATCHES:-3,9,27,81}" > "$out/sweep.log" 2>&1 ||
    echo "sweep: exit $? (see $out/sweep.log)"
fi

"$py" - "$out" "$sources" "${intervals[@]}" <<'PY' | tee "$out/summary.md"
import json, os, sys
out, sources, intervals = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
decode = load("decode.json")
ceiling = decode.get("aggregate_fps") if decode else None
print(f"NVDEC ceiling, {sources} sessions: " + (f"{ceiling:.0f} fps ({ceiling / 30:.1f} streams at 30 fps)" if ceiling else "?"))
print()
print("| interval | primary + ByteTrack fps (streams) | + two classifiers fps (streams) | classifiers' cost | bound |")
print("|---:|---:|---:|---:|---|")
for i in intervals:
    p, c = load(f"primary_i{i}.json"), load(f"cascade_i{i}.json")
    pf = p["startup"]["steady_fps"] if p else None
    cf = c["startup"]["steady_fps"] if c else None
    cell = lambda f: f"{f:.0f} ({f / 30:.1f})" if f else "failed"
    cost = f"{100 * (1 - cf / pf):.1f}%" if pf and cf else "?"
    bound = c["bound"] if c else {}
    print(f"| {i} | {cell(pf)} | {cell(cf)} | {cost} | {bound.get('what', '?')}; {bound.get('busiest_stage', '?')} "
          f"{100 * bound.get('busiest_busy', 0):.0f}% busy |")
print()
print("| interval | classify stage | objects classified | of them without a track | labels reused |")
print("|---:|---|---:|---:|---:|")
for i in intervals:
    c = load(f"cascade_i{i}.json")
    for stage in (c or {}).get("stages", []):
        n = stage.get("counters")
        if n and "objects classified" in n:
            print(f"| {i} | {stage['name']} | {n['objects classified']} | {n['of them without a track']} | "
                  f"{n['labels reused']} |")
sweep = load("sweep/sweep.json")
if sweep:
    print()
    print("| sweep run | fps | status |")
    print("|---|---:|---|")
    for r in sweep.get("runs", []):
        print(f"| {r.get('label')} | {r.get('fps', 0) or 0:.0f} | {r.get('status')} |")
    print()
    print("fastest:", json.dumps(sweep.get("fastest"))[:300])
PY
