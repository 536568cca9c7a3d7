#!/usr/bin/env bash
# Decode benchmarks for docs/perf.md, run on the GPU machine after a release build:
#
#   bench/decode_bench.sh BUILD_DIR OUT_DIR [HEVC_CLIP]
#
# Generates the 1080p H.264 clip of shared/device/README.md, then measures, in one run:
#   - FFmpeg's own decoders as peers: CPU (-threads 16) and NVDEC (-hwaccel cuda, frames kept on
#     the GPU), one process and 8 concurrent processes;
#   - fovea decode-bench with cpu and nvdec, 1, 8, 12 and 16 sessions in one process, and 8
#     processes with one session each (and HEVC when a clip is given);
#   - the raw NVDEC ceiling on the same clips (bench/nvdec_ceiling: nvcuvid alone, pre-parsed
#     pictures submitted back to back), the denominator of the nvdec rows.
# Each fovea result is also written as JSON next to the log.
set -euo pipefail
build=$1
out=$2
hevc=${3:-}
fovea=$build/apps/fovea/fovea
ceiling=$build/bench/nvdec_ceiling
mkdir -p "$out"
clip=$out/clip_h264_1080p.mp4
[ -s "$clip" ] || ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=12:allf=t+u" \
  -t 10 -c:v libx264 -preset medium -profile:v high -b:v 8M -bf 2 -g 60 -pix_fmt yuv420p "$clip"
frames=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$clip")

# Waits for the given processes; prints "failed" and returns 1 when any of them failed, so that
# a broken peer never passes for a fast one.
wait_all() {
  local failed=0 pid
  for pid in "$@"; do
    wait "$pid" || failed=1
  done
  [ "$failed" = 0 ] || { echo "failed"; return 1; }
}

# Prints frames/s of N concurrent ffmpeg processes, each decoding INPUT REPEAT times over, so that
# process start-up weighs as little as in fovea's runs. The repeats are a stream copy made
# beforehand, not -stream_loop: at the loop point FFmpeg 5.1 reconfigures its filters, which fails
# for CUDA frames ("Impossible to convert between the formats ...") and ends the process after the
# first pass, which made earlier NVDEC peer figures look twice as fast as they were.
ffmpeg_fps() {
  local n=$1 repeat=$2 input=$3
  shift 3
  local repeated count start end pids=()
  repeated=$out/$(basename "${input%.*}")_x$repeat.mp4
  [ -s "$repeated" ] || ffmpeg -loglevel error -y -stream_loop $((repeat - 1)) -i "$input" -c copy "$repeated"
  count=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$repeated")
  start=$(date +%s.%N)
  for _ in $(seq "$n"); do
    ffmpeg -loglevel error -nostdin "$@" -i "$repeated" -f null - &
    pids+=($!)
  done
  wait_all "${pids[@]}" || return 0
  end=$(date +%s.%N)
  echo "$n $count $start $end" | awk '{printf "%.1f", $1 * $2 / ($4 - $3)}'
}

# Prints the raw nvcuvid rate of N sessions in one process on a clip (nvdec_ceiling's replay mode).
ceiling_fps() {
  local n=$1 repeat=$2 input=$3 name=$4
  "$ceiling" "$input" --mode replay --sessions "$n" --repeat "$repeat" >"$out/$name.json" 2>"$out/$name.log"
  python3 -c "import json,sys; print('%.1f' % json.load(open(sys.argv[1]))['aggregate_fps'])" "$out/$name.json"
}

row() { printf '| %-58s | %12s |\n' "$1" "$2"; }

fovea_fps() {
  local name=$1
  shift
  "$fovea" decode-bench "$@" --json "$out/$name.json" >"$out/$name.log" 2>&1
  python3 -c "import json,sys; print('%.1f' % json.load(open(sys.argv[1]))['aggregate_fps'])" "$out/$name.json"
}

# Prints the sum of the frames/s of N concurrent fovea decode-bench processes (each with the given
# arguments): the same decoders as N sessions in one process, but each in its own process.
fovea_processes_fps() {
  local n=$1 name=$2 i pids=()
  shift 2
  for i in $(seq "$n"); do
    "$fovea" decode-bench "$@" --json "$out/$name-$i.json" >"$out/$name-$i.log" 2>&1 &
    pids+=($!)
  done
  wait_all "${pids[@]}" || return 0
  python3 -c "import json,sys; print('%.1f' % sum(json.load(open(f))['aggregate_fps'] for f in sys.argv[1:]))" \
    "$out/$name"-*.json
}

{
  echo "clip: $clip ($frames frames, $(du -h "$clip" | cut -f1))"
  echo
  row "what" "frames/s"
  row "---" "---"
  row "ffmpeg CPU decode, -threads 16, 1 process" "$(ffmpeg_fps 1 3 "$clip" -threads 16)"
  row "fovea decode-bench cpu, threads 16, 1 session" "$(fovea_fps cpu1 "$clip" --decoder cpu --threads 16 --sessions 1 --repeat 3)"
  row "ffmpeg NVDEC (-hwaccel cuda, device frames), 1 process" \
    "$(ffmpeg_fps 1 5 "$clip" -hwaccel cuda -hwaccel_output_format cuda)"
  row "raw NVDEC ceiling (nvdec_ceiling replay), 1 session" "$(ceiling_fps 1 5 "$clip" ceiling1)"
  row "fovea decode-bench nvdec, 1 session, display delay 2" "$(fovea_fps nvdec1d2 "$clip" --decoder nvdec --sessions 1 --repeat 5 --display-delay 2)"
  row "fovea decode-bench nvdec, 1 session (display delay 4)" "$(fovea_fps nvdec1 "$clip" --decoder nvdec --sessions 1 --repeat 5)"
  row "ffmpeg NVDEC, 8 processes" "$(ffmpeg_fps 8 3 "$clip" -hwaccel cuda -hwaccel_output_format cuda)"
  row "raw NVDEC ceiling (nvdec_ceiling replay), 8 sessions" "$(ceiling_fps 8 3 "$clip" ceiling8)"
  row "fovea decode-bench nvdec, 8 sessions, display delay 2" "$(fovea_fps nvdec8d2 "$clip" --decoder nvdec --sessions 8 --repeat 3 --display-delay 2)"
  row "fovea decode-bench nvdec, 8 sessions (display delay 4)" "$(fovea_fps nvdec8 "$clip" --decoder nvdec --sessions 8 --repeat 3)"
  row "fovea decode-bench nvdec, 12 sessions" "$(fovea_fps nvdec12 "$clip" --decoder nvdec --sessions 12 --repeat 2)"
  row "fovea decode-bench nvdec, 16 sessions" "$(fovea_fps nvdec16 "$clip" --decoder nvdec --sessions 16 --repeat 2)"
  row "fovea decode-bench nvdec, 8 processes x 1 session (sum)" \
    "$(fovea_processes_fps 8 nvdec8p "$clip" --decoder nvdec --sessions 1 --repeat 10)"
  if [ -n "$hevc" ] && [ -s "$hevc" ]; then
    row "ffmpeg NVDEC HEVC, 8 processes" "$(ffmpeg_fps 8 3 "$hevc" -hwaccel cuda -hwaccel_output_format cuda)"
    row "raw NVDEC ceiling HEVC, 8 sessions" "$(ceiling_fps 8 3 "$hevc" ceiling_hevc8)"
    row "fovea decode-bench nvdec HEVC, 8 sessions" "$(fovea_fps hevc8 "$hevc" --decoder nvdec --sessions 8 --repeat 3)"
  fi
} | tee "$out/decode_bench.md"
