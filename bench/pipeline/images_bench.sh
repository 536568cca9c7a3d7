#!/usr/bin/env bash
# The image-folder flow's figures (issue 21, docs/perf.md), on the GPU machine, in one call:
#   bench/pipeline/images_bench.sh FOVEA_BINARY OUT_DIR
# Environment: AB_COUNT (4000), PHOTO_COUNT (1000), BASELINE_LIMIT (500), FLOW_BATCHES ("16 8 32"),
# BENCH_SECONDS (5, per image-bench measurement), STEP_TIMEOUT (120 s per command), PYTHON (python3).
# Planned for about 5 minutes on the GPU machine (16 cores), 9 at most; the folders and the exported
# models in OUT_DIR are reused by a second call. The counts are above issue 21's 2000 and the plan's
# 500 so that each fovea run lasts seconds after its first output at the expected rates (about a
# thousand AB images/s, PNG encode bound; up to two thousand photos/s): its steady rate, held to the
# ceilings, is then not a few batches' worth.
#
# Makes the folders (make_ab_images.py: AB_COUNT 512x256 pix2pix "AB" JPEGs, PHOTO_COUNT 1080p JPEG
# photos), exports unet_256 and detectnet_resnet34 with dynamic batch (compare_torch.export_dynamic:
# the seeded weights baseline_images.py also builds), then runs:
#   - the Python baseline (baseline_images.py: PIL -> torchvision transforms -> PyTorch fp16 -> PIL
#     PNG, one image at a time) on the first BASELINE_LIMIT images: a rate, which a few hundred
#     images measure as well as all of them;
#   - the pix2pix flow's three ceilings, each alone: decode of the AB folder per backend
#     (image-bench), the U-Net's model bench at the flow's batches (and 1 and 64), and PNG encode of
#     the network's 256x256 outputs (image-bench --encode png over the baseline's PNGs: encoding the
#     512x256 AB inputs would measure other images, twice the size, than the flow writes);
#   - fovea's pix2pix flow (AB JPEG -> A half -> U-Net fp16 -> PNG) at each of FLOW_BATCHES;
#   - the detector case: decode of the photos per backend, DetectNet's model bench at 32, and the
#     flow over the photos at batch 32 with metadata out.
# Every command's full output goes to OUT_DIR (NAME.log: the command line, its output and
# /usr/bin/time -v; NAME.json: the result; NAME.gpumem: nvidia-smi samples); the summary table is
# printed last (images_bench_summary.py, also OUT_DIR/summary.md), and the exit status is 1 when a
# target is missed or a run failed.
set -euo pipefail
fovea=$(realpath "$1")
out=$(realpath -m "$2")
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
ab_count=${AB_COUNT:-4000}
photo_count=${PHOTO_COUNT:-1000}
baseline_limit=${BASELINE_LIMIT:-500}
read -r -a flow_batches <<< "${FLOW_BATCHES:-16 8 32}"
bench_seconds=${BENCH_SECONDS:-5}
step_timeout=${STEP_TIMEOUT:-120}
detect_batch=32
ab="$out/ab"
photos="$out/photos"
unet="$out/unet_256.onnx"
detectnet="$out/detectnet_resnet34.onnx"
baseline_png="$out/baseline_png"
engine_cache="$out/engine_cache"

# --- fovea's command lines, as issue 21 plans them: adjust the flags here ---------------------------
# Each sets `cmd`; the ones whose JSON goes to stdout say so. The exported models' height and width
# are dynamic, so the flows name the network's input size (--size). `fovea images --task image2image`
# normalizes (pixel / 255 - 0.5) / 0.5 and maps the output back the same way by default, as
# baseline_images.py does; the detector takes pixels / 255 (--normalize none) and detect_bench.sh's
# --conf 0.4 --iou 0.5 --top-k 100 (its seeded weights find about 100 boxes an image).
decode_ceiling_cmd() {  # FOLDER JSON
  cmd=("$fovea" image-bench "$1" --backend all --seconds "$bench_seconds" --json "$2")
}
encode_ceiling_cmd() {  # FOLDER JSON
  cmd=("$fovea" image-bench "$1" --backend cpu --encode png --seconds "$bench_seconds" --json "$2")
}
model_ceiling_cmd() {  # MODEL HEIGHTxWIDTH BATCHES (JSON on stdout)
  cmd=("$fovea" model bench "$1" --shape "input=1x3x$2" --batch "$3" --precision fp16 --iterations 100 --json)
}
pix2pix_flow_cmd() {  # BATCH OUTPUT_FOLDER REPORT
  cmd=("$fovea" images "$ab" -o "$2" --model "$unet" --task image2image --split-ab a --size 256x256 --batch "$1"
       --format png --precision fp16 --engine-cache "$engine_cache" --no-progress --report "$3")
}
detector_flow_cmd() {  # BATCH METADATA REPORT
  cmd=("$fovea" images "$photos" --model "$detectnet" --task detection --parser detectnet --size 960x544
       --normalize none --conf 0.4 --iou 0.5 --top-k 100 --batch "$1" --precision fp16
       --engine-cache "$engine_cache" --metadata "$2" --no-progress --report "$3")
}
# -------------------------------------------------------------------------------------------------

mkdir -p "$out"
runs="$out/runs.tsv"  # kind, name, batch, exit status, result file, output folder: what the summary reads
: > "$runs"

# NAME MODE COMMAND...: runs COMMAND under /usr/bin/time -v and STEP_TIMEOUT. Its result is
# OUT/NAME.json: COMMAND writes it (MODE writes-json) or prints it (MODE prints-json: stdout goes
# there); a previous call's result is removed first, so a failed run leaves none. The command line,
# the rest of the output and time's figures go to OUT/NAME.log, nvidia-smi's memory samples to
# OUT/NAME.gpumem; the exit status to `status` and the name to `last`, for record. A failure is
# logged and left for the summary, so one failed run does not hide the others' figures.
run() {
  local name=$1 mode=$2
  shift 2
  local log="$out/$name.log" result="$out/$name.json"
  echo "== $name"
  rm -f "$result"
  printf '%q ' "$@" > "$log"
  echo >> "$log"
  local stdout=$log
  [ "$mode" != prints-json ] || stdout=$result
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$out/$name.gpumem" 2>/dev/null &
  local sampler=$!
  status=0
  # timeout inside time: a timed-out command is killed itself, and time still reports its peak memory.
  /usr/bin/time -v timeout "$step_timeout" "$@" >> "$stdout" 2>> "$log" || status=$?
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  last=$name
  if [ "$status" -eq 124 ]; then
    echo "   timed out after $step_timeout s, see $log" | tee -a "$log"
  elif [ "$status" -ne 0 ]; then
    echo "   exit status $status, see $log" | tee -a "$log"
  fi
}

record() {  # KIND NAME BATCH OUTPUT_FOLDER: the last run, for the summary
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$status" "$out/$last.json" "$4" >> "$runs"
}

count_files() {  # FOLDER PATTERN
  find "$1" -maxdepth 1 -name "$2" 2>/dev/null | wc -l
}

# Inputs and models. The exports (single-threaded, mostly) run beside the image generation.
(
  cd "$here/../models"
  for model in unet_256 detectnet_resnet34; do
    "$py" -c "import compare_torch as c; c.export_dynamic('$model', '$out/$model.onnx')"
  done
) > "$out/export.log" 2>&1 &
exporter=$!
[ "$(count_files "$ab" 'ab_*.jpg')" -ge "$ab_count" ] ||
  "$py" "$here/make_ab_images.py" "$ab" --count "$ab_count" --size 256x256 > "$out/make_ab.json"
[ "$(count_files "$photos" 'photo_*.jpg')" -ge "$photo_count" ] ||
  "$py" "$here/make_ab_images.py" "$photos" --count 0 --photos "$photo_count" --photo-size 1920x1080 \
    > "$out/make_photos.json"
wait "$exporter" || { echo "the model export failed: see $out/export.log" >&2; exit 1; }

# The baseline first: its PNGs are the encode ceiling's input.
rm -rf "$baseline_png"
run baseline_images prints-json \
  "$py" "$here/baseline_images.py" "$ab" --model unet_256 --fp16 --limit "$baseline_limit" --out "$baseline_png"
record baseline unet_256 - "$baseline_png"

# The pix2pix flow's ceilings, each alone.
decode_ceiling_cmd "$ab" "$out/decode_ab.json"
run decode_ab writes-json "${cmd[@]}"
record decode ab - -
batches=$(printf '%s\n' 1 64 "${flow_batches[@]}" | sort -nu | paste -sd,)
model_ceiling_cmd "$unet" 256x256 "$batches"
run model_bench_unet_256 prints-json "${cmd[@]}"
record model unet_256 - -
encode_ceiling_cmd "$baseline_png" "$out/encode_png.json"
run encode_png writes-json "${cmd[@]}"
record encode png - -

# fovea's pix2pix flow; the first batch's run also plans the model into the engine cache.
for batch in "${flow_batches[@]}"; do
  name="images_unet_256_b$batch"
  rm -rf "${out:?}/$name"
  pix2pix_flow_cmd "$batch" "$out/$name" "$out/$name.json"
  run "$name" writes-json "${cmd[@]}"
  record flow unet_256 "$batch" "$out/$name"
done

# The detector case: its two ceilings, then the flow.
decode_ceiling_cmd "$photos" "$out/decode_photos.json"
run decode_photos writes-json "${cmd[@]}"
record decode photos - -
model_ceiling_cmd "$detectnet" 544x960 "$detect_batch"
run model_bench_detectnet_resnet34 prints-json "${cmd[@]}"
record model detectnet_resnet34 - -
name="images_detectnet_resnet34_b$detect_batch"
detector_flow_cmd "$detect_batch" "$out/$name.jsonl" "$out/$name.json"
run "$name" writes-json "${cmd[@]}"
record detect detectnet_resnet34 "$detect_batch" -

"$py" "$here/images_bench_summary.py" "$runs" "$out/summary.md"
