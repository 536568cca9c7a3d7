#!/usr/bin/env bash
# The segmentation flow's figures (issue 6, docs/perf.md), on the GPU machine:
#   bench/pipeline/segment_bench.sh FOVEA_BINARY OUT_DIR [SOURCES...]
# Makes a 10 s 1080p30 H.264 clip at ~8 Mb/s (the workload of the reference figures) and the same
# clip four times over (40 s, a stream copy) for fovea's runs, so that the start-up (sources
# opening, the first batch's trip through the stages: ~0.25 s) is a small part of each run; exports
# FCN-ResNet101 with dynamic axes (bench/models/compare_torch.py's export), then runs, in one go:
#   - fovea model bench: FCN-ResNet101 544x960 fp16 batch 4 (the ceiling the flow is held to);
#   - fovea segment with the null sink for 1, 4 and 16 sources (batch 4, or the sources up to 16);
#   - the same for 4 sources without mask refinement, and traced (fovea report);
#   - fovea segment with video output (libx264, the H200 has no NVENC), 1 and 4 sources;
#   - the Python baseline (bench/pipeline/baseline_seed.py), FP32 batch 1 and FP16 batch 4.
# Every command's full output goes to OUT_DIR/<name>.log; a summary table is printed last.
set -euo pipefail
fovea=$(realpath "$1")
out=$(realpath -m "$2")
shift 2
counts=("${@:-1 4 16}")
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
mkdir -p "$out"
clip="$out/clip_1080p.mp4"
model="$out/fcn_resnet101.onnx"
[ -f "$clip" ] || ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=12:allf=t+u" \
  -t 10 -c:v libx264 -preset medium -profile:v high -b:v 8M -bf 2 -g 60 -pix_fmt yuv420p "$clip"
long_clip="$out/clip_1080p_40s.mp4"
[ -f "$long_clip" ] || ffmpeg -loglevel error -y -stream_loop 3 -i "$clip" -c copy "$long_clip"
[ -f "$model" ] || (cd "$here/../models" && "$py" -c \
  "import compare_torch as c; c.export_dynamic('fcn_resnet101', '$model')") > "$out/export.log" 2>&1

summary=()
note() { summary+=("$1"); echo "$1"; }

"$fovea" model bench "$model" --shape input=4x3x544x960 --batch 4 --precision fp16 --iterations 100 --json \
  > "$out/model_bench.json" 2> "$out/model_bench.log" || true
note "model bench b4 fp16: $(grep -Eo '"items_per_second": *[0-9.]+' "$out/model_bench.json" | head -1 | grep -Eo '[0-9.]+$') img/s"

segment() {  # name sources... -- extra args
  local name=$1; shift
  local inputs=()
  while [ "$1" != "--" ]; do inputs+=("$1"); shift; done
  shift
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$out/$name.gpumem" 2>/dev/null &
  local sampler=$!
  /usr/bin/time -v "$fovea" segment "${inputs[@]}" --model "$model" --class 8 --size 960x544 --precision fp16 \
    --no-progress --report "$out/$name.json" "$@" > "$out/$name.log" 2>&1 || true
  kill "$sampler" 2>/dev/null || true
  local fps gpu
  gpu=$(sort -n "$out/$name.gpumem" | tail -1)
  fps=$("$py" -c "import json; r = json.load(open('$out/$name.json')); \
print(f\"{r['total']['fps']:.1f} fps, {r['startup']['steady_fps']:.1f} after the first output at {r['startup']['first_output_s']:.2f} s\")" \
    2>/dev/null || echo "failed")
  note "$name: $fps  (GPU memory ${gpu:-?} MiB, $(grep -E 'Maximum resident' "$out/$name.log" | awk '{print $6/1024 " MB RSS"}'))"
}

for n in ${counts[@]}; do
  inputs=(); for _ in $(seq "$n"); do inputs+=("$long_clip"); done
  batch=$(( n < 4 ? 4 : (n > 16 ? 16 : n) ))
  segment "null_${n}src_b${batch}" "${inputs[@]}" -- --batch "$batch"
done
four=("$long_clip" "$long_clip" "$long_clip" "$long_clip")
segment "null_4src_b4_no_refine" "${four[@]}" -- --batch 4 --no-refine
segment "null_4src_b4_traced" "${four[@]}" -- --batch 4 --trace "$out/trace_4src"
"$fovea" report "$out/trace_4src" --top 20 > "$out/trace_4src_report.txt" 2>&1 || true
segment "video_1src_b4" "$long_clip" -- --batch 4 -o "$out/video1" --preset veryfast
segment "video_4src_b4" "${four[@]}" -- --batch 4 -o "$out/video4" --preset veryfast

if [ -f "$here/baseline_seed.py" ]; then
  "$py" "$here/baseline_seed.py" "$clip" --model "$model" --out "$out/baseline_fp32_b1.mp4" > "$out/baseline_fp32_b1.log" 2>&1 || true
  note "baseline fp32 b1: $(tail -1 "$out/baseline_fp32_b1.log")"
  "$py" "$here/baseline_seed.py" "$clip" --model "$model" --fp16 --batch 4 --out "$out/baseline_fp16_b4.mp4" > "$out/baseline_fp16_b4.log" 2>&1 || true
  note "baseline fp16 b4: $(tail -1 "$out/baseline_fp16_b4.log")"
fi
printf '\n%s\n' "${summary[@]}"
