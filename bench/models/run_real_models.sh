#!/usr/bin/env bash
# Real models on fovea's CPU executor against PyTorch, for docs/perf.md. Run on the GPU machine
# (it has PyTorch) after a Release build:
#
#   bench/models/run_real_models.sh BUILD_DIR OUT_DIR [MODEL,MODEL,...]
#
# 1. export_torchvision.py exports the models with seeded random weights into OUT_DIR/export and
#    saves PyTorch's CPU outputs and timings (16 threads);
# 2. for each model, `fovea model info` (FLOPs, arena) and `fovea model run` with the same input and
#    FOVEA_CPU_THREADS=16, into OUT_DIR/fovea/<model>/ (outputs, info.log, run.log);
# 3. compare_outputs.py prints the table into OUT_DIR/results.md.
# A failing model is recorded and the others still run. OUT_DIR/summary.tar.gz holds everything
# but the .onnx and .npy files, small enough to bring back from the GPU machine.
#
# Environment: PYTHON (default: the GPU machine's /opt/torch/.venv python, else python3),
# THREADS (16), MODEL_TIMEOUT (seconds per fovea command, 240), REF_DIR (reuse an existing export
# instead of exporting again).
set -uo pipefail

if [ $# -lt 2 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
build=$1
out=$2
models=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
fovea=$build/apps/fovea/fovea
threads=${THREADS:-16}
model_timeout=${MODEL_TIMEOUT:-240}
if [ -z "${PYTHON:-}" ]; then
  if [ -x /opt/torch/.venv/bin/python3 ]; then PYTHON=/opt/torch/.venv/bin/python3; else PYTHON=python3; fi
fi
[ -x "$fovea" ] || { echo "no fovea binary at $fovea" >&2; exit 1; }
mkdir -p "$out/fovea"
out=$(cd "$out" && pwd)

ref=${REF_DIR:-$out/export}
if [ -z "${REF_DIR:-}" ]; then
  echo "== export ($PYTHON)"
  # Unbuffered, so a run cut short still shows how far it got.
  PYTHONUNBUFFERED=1 "$PYTHON" "$here/export_torchvision.py" --out "$ref" --threads "$threads" \
    ${models:+--models "$models"} 2>&1 | tee "$out/export.log"
  echo "export exit status ${PIPESTATUS[0]}"
fi
[ -f "$ref/manifest.json" ] || { echo "no $ref/manifest.json: the export failed" >&2; exit 1; }

# The models the manifest holds and exported without error, with their input names.
mapfile -t exported < <("$PYTHON" -c '
import json, sys
for e in json.load(open(sys.argv[1]))["models"]:
    if "error" not in e:
        print(e["model"], e["input_name"])
' "$ref/manifest.json")

# Prints the exit status, naming a timeout as such.
status_text() {
  case $1 in
    0) echo ok ;;
    124) echo "timed out after ${model_timeout} s" ;;
    *) echo "exit status $1" ;;
  esac
}

for line in "${exported[@]}"; do
  read -r m input <<<"$line"
  dir=$out/fovea/$m
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "== $m"
  FOVEA_CPU_THREADS=$threads timeout "$model_timeout" "$fovea" model info "$ref/$m.onnx" >"$dir/info.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then grep -E '^  (FLOPs|arena|nodes|parameters)' "$dir/info.log"; else tail -n 2 "$dir/info.log"; fi
  echo "info: $(status_text $rc)" | tee -a "$dir/info.log"
  FOVEA_CPU_THREADS=$threads timeout "$model_timeout" "$fovea" model run "$ref/$m.onnx" \
    --input "$input=$ref/$m.input.npy" --output-dir "$dir" >"$dir/run.log" 2>&1
  rc=$?
  tail -n 3 "$dir/run.log"
  echo "run: $(status_text $rc)" | tee -a "$dir/run.log"
done

echo "== compare"
"$PYTHON" "$here/compare_outputs.py" "$ref" "$out/fovea" --json "$out/results.json" | tee "$out/results.md"
compare_rc=${PIPESTATUS[0]}

# Written beside OUT_DIR first: tar warns (and fails) when the folder it reads changes under it.
tar -czf "$out.summary.tar.gz" -C "$out" --exclude='*.onnx' --exclude='*.npy' --exclude=summary.tar.gz . &&
  mv "$out.summary.tar.gz" "$out/summary.tar.gz"
exit "$compare_rc"
