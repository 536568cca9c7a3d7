#!/usr/bin/env bash
# The detection flow's figures (issue 19, docs/perf.md), on the GPU machine:
#   bench/pipeline/detect_bench.sh FOVEA_BINARY OUT_DIR [MODELS...]
# MODELS: detectnet_resnet34 (960x544, PeopleNet's shape) and ssdlite320_mobilenet_v3_large (320x320),
# both by default; COUNTS="16 32 64" (the default) sets the source counts. Each model takes about
# five minutes; where one command may run 10 minutes, run one model per call (the clips, the decode
# figures and the exported models in OUT_DIR are reused).
#
# Makes the 10 s 1080p30 H.264 8 Mb/s clip of ../shared/device/README.md and a 40 s stream copy of it
# (fovea's runs: start-up is then a small part of each), exports each model with dynamic batch
# (compare_torch.export_dynamic: the seeded weights baseline_detect.py also builds), then runs:
#   - fovea decode-bench, NVDEC, N = COUNTS sessions: the decode ceiling for N streams;
#   - fovea model bench, fp16, at the flow's batches (and 64, to show where batching stops paying);
#   - fovea detect, N = COUNTS sources of the 40 s clip, null sink, OSD off, every frame inferred
#     (--interval 0), frames kept at 1080p (--frame-size), batch min(N, 32): up to 32 sources a
#     batch takes one frame of each, so it fills as soon as every source has delivered one frame
#     (no source waits a second frame interval); past 32 the model's throughput no longer grows
#     with the batch (the model bench at 32 and 64 shows it) while memory and latency do;
#   - the same with --osd --mosaic -o (the mosaic video, libx264: this GPU has no NVENC);
#   - the Python baseline (baseline_detect.py), fp16, 8 sources at batch 8, 150 frames each, null
#     and drawn + encoded. Its fps, like fovea's, is all streams' frames over the wall time; the
#     baseline is one Python thread whose throughput does not grow with the source count, so fewer
#     sources and frames measure the same rate in less time.
# fovea and the baseline use the same --conf 0.4 --iou 0.5 --top-k 100 and pixels / 255 input (the
# exported SSDLite has no normalization inside; its seeded scores stay below 0.4 either way).
# fovea's ratio to its bound uses the steady rate (report's startup.steady_fps: after the first
# output, as the bound is a steady rate); the total rate is listed too. The bound for N sources at
# batch B is min(decode ceiling for N sessions, model bench items/s at batch B). Targets: null sink
# >= 90% of the bound, OSD + mosaic >= 85%, fovea (its best null-sink run) >= 20x the baseline.
# Every command's full output goes to OUT_DIR; the summary table is printed last (and written to
# OUT_DIR/summary.md); the exit status is 1 when a target is missed or a run failed.
set -euo pipefail
fovea=$(realpath "$1")
out=$(realpath -m "$2")
shift 2
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(detectnet_resnet34 ssdlite320_mobilenet_v3_large)
read -r -a counts <<< "${COUNTS:-16 32 64}"
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
mkdir -p "$out"
runs="$out/runs.tsv"  # kind, model, sources, batch, result file: what the summary reads
: > "$runs"

clip="$out/clip_1080p.mp4"
[ -f "$clip" ] || ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=12:allf=t+u" \
  -t 10 -c:v libx264 -preset medium -profile:v high -b:v 8M -bf 2 -g 60 -pix_fmt yuv420p "$clip"
long_clip="$out/clip_1080p_40s.mp4"
[ -f "$long_clip" ] || ffmpeg -loglevel error -y -stream_loop 3 -i "$clip" -c copy "$long_clip"

for n in "${counts[@]}"; do
  [ -f "$out/decode_${n}.json" ] || "$fovea" decode-bench "$clip" --decoder nvdec --sessions "$n" --repeat 2 \
    --json "$out/decode_${n}.json" > "$out/decode_${n}.log" 2>&1 || true
  printf 'decode\t-\t%s\t-\t%s\n' "$n" "$out/decode_${n}.json" >> "$runs"
done

detect() {  # name inputs... -- extra args
  local name=$1; shift
  local inputs=()
  while [ "$1" != "--" ]; do inputs+=("$1"); shift; done
  shift
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$out/$name.gpumem" 2>/dev/null &
  local sampler=$!
  /usr/bin/time -v "$fovea" detect "${inputs[@]}" --no-progress --report "$out/$name.json" "$@" \
    > "$out/$name.log" 2>&1 || true
  kill "$sampler" 2>/dev/null || true
}

post=(--conf 0.4 --iou 0.5 --top-k 100)
for model_name in "${models[@]}"; do
  case "$model_name" in
    detectnet_resnet34) size=960x544 parser=detectnet ;;
    ssdlite320_mobilenet_v3_large) size=320x320 parser=ssd ;;
    *) echo "unknown model $model_name (detectnet_resnet34, ssdlite320_mobilenet_v3_large)" >&2; exit 2 ;;
  esac
  model="$out/$model_name.onnx"
  [ -f "$model" ] || (cd "$here/../models" && "$py" -c \
    "import compare_torch as c; c.export_dynamic('$model_name', '$model')") > "$out/export_$model_name.log" 2>&1

  batches=$( (for n in "${counts[@]}"; do echo $(( n < 32 ? n : 32 )); done; echo 64) | sort -nu | paste -sd,)
  "$fovea" model bench "$model" --shape "input=1x3x${size#*x}x${size%x*}" --batch "$batches" --precision fp16 \
    --iterations 100 --json > "$out/model_bench_$model_name.json" 2> "$out/model_bench_$model_name.log" || true
  printf 'model\t%s\t-\t-\t%s\n' "$model_name" "$out/model_bench_$model_name.json" >> "$runs"

  for n in "${counts[@]}"; do
    inputs=(); for _ in $(seq "$n"); do inputs+=("$long_clip"); done
    batch=$(( n < 32 ? n : 32 ))
    common=(--model "$model" --parser "$parser" --size "$size" --frame-size 1920x1080 --normalize none
            --precision fp16 --batch "$batch" --interval 0 "${post[@]}" --engine-cache "$out/engine_cache")
    name="${model_name}_null_${n}src_b${batch}"
    detect "$name" "${inputs[@]}" -- "${common[@]}"
    printf 'null\t%s\t%s\t%s\t%s\n' "$model_name" "$n" "$batch" "$out/$name.json" >> "$runs"
    name="${model_name}_osd_mosaic_${n}src_b${batch}"
    # libx264 veryfast: this GPU has no NVENC, and the mosaic (one 1080p frame per batch) must keep up.
    detect "$name" "${inputs[@]}" -- "${common[@]}" --osd --mosaic --preset veryfast -o "$out/$name"
    printf 'osd_mosaic\t%s\t%s\t%s\t%s\n' "$model_name" "$n" "$batch" "$out/$name.json" >> "$runs"
  done

  for sink in null drawn; do
    name="${model_name}_baseline_${sink}_8src_b8"
    sink_args=(--null); [ "$sink" = null ] || sink_args=(--out "$out/$name")
    "$py" "$here/baseline_detect.py" "$clip" --model "$model_name" --sources 8 --batch 8 --frames 150 --fp16 \
      "${post[@]}" "${sink_args[@]}" > "$out/$name.json" 2> "$out/$name.log" || true
    printf 'baseline_%s\t%s\t8\t8\t%s\n' "$sink" "$model_name" "$out/$name.json" >> "$runs"
  done
done

"$py" "$here/detect_bench_summary.py" "$runs" "$out/summary.md"
