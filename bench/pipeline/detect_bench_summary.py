#!/usr/bin/env python3
"""detect_bench.sh's summary: each run's fps against its bound, and fovea against the Python baseline.

    detect_bench_summary.py RUNS.tsv SUMMARY.md

RUNS.tsv has one line per result file: kind (decode, model, null, osd_mosaic, baseline_null,
baseline_drawn), model, sources, batch, path ('-' where it does not apply). The bound of a fovea run
with N sources at batch B is min(decode-bench's aggregate_fps for N sessions, model bench's
items_per_second at batch B); its steady rate (report: startup.steady_fps) is held to 90% of it
with the null sink and 85% with OSD + mosaic; fovea's best OSD + mosaic total fps to 20x the
baseline's. Prints the tables (also written to SUMMARY.md); exits 1 when a target is missed or a run
left no result.
"""

import json
import sys

NULL_TARGET, OSD_TARGET, BASELINE_TARGET = 0.90, 0.85, 20.0


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def peak_gpu_mib(result_path):
    """The highest nvidia-smi memory sample detect_bench.sh took beside the run, if any."""
    try:
        with open(result_path[: -len(".json")] + ".gpumem") as f:
            return max(int(v) for v in f.read().split())
    except (OSError, ValueError):
        return None


def number(v):
    return f"{v:.0f}" if v else "?"


def percent(v):
    return f"{v:.1%}" if v else "?"


def summarize(runs):
    """(markdown lines, misses) for the runs [(kind, model, sources, batch, path)]."""
    decode = {int(n): (load(p) or {}).get("aggregate_fps") for kind, _, n, _, p in runs if kind == "decode"}
    model_bench = {m: {point["batch"]: point["items_per_second"] for point in (load(p) or [])}
                   for kind, m, _, _, p in runs if kind == "model"}
    misses = [f"decode-bench {n} sessions: no result" for n, fps in decode.items() if not fps]
    misses += [f"model bench {m}: no result" for m, points in model_bench.items() if not points]
    lines = ["| model | run | sources | batch | fps (total) | fps (steady) | decode ceiling | model bench | "
             "bound | steady / bound | target | peak GPU MiB |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    best_null, best_drawn, baseline = {}, {}, {}
    for kind, model, n, batch, path in runs:
        if kind in ("decode", "model"):
            continue
        result = load(path)
        log = path[: -len(".json")] + ".log"
        if kind.startswith("baseline_"):
            fps = (result or {}).get("fps")
            baseline[(model, kind)] = fps
            lines.append(f"| {model} | Python, {kind[len('baseline_'):]} | {n} | {batch} | {fps or 'no result'} "
                         f"| | | | | | | |")
            if not fps:
                misses.append(f"{model} {kind}: no result, see {log}")
            continue
        n, batch = int(n), int(batch)
        ceiling, bench = decode.get(n), model_bench.get(model, {}).get(batch)
        bound = min(ceiling, bench) if ceiling and bench else None
        target = NULL_TARGET if kind == "null" else OSD_TARGET
        if not result:
            lines.append(f"| {model} | {kind} | {n} | {batch} | no result | | | | | | >= {target:.0%} | |")
            misses.append(f"{model} {kind} {n} sources: no result, see {log}")
            continue
        total, steady = result["total"]["fps"], result["startup"]["steady_fps"]
        ratio = steady / bound if bound else None
        best = best_null if kind == "null" else best_drawn
        best[model] = max(best.get(model, 0.0), total)
        lines.append(f"| {model} | {kind} | {n} | {batch} | {total:.0f} | {steady:.0f} | {number(ceiling)} | "
                     f"{number(bench)} | {number(bound)} | {percent(ratio)} | >= {target:.0%} | "
                     f"{peak_gpu_mib(path) or '?'} |")
        if ratio is None or ratio < target:
            misses.append(f"{model} {kind} {n} sources: {percent(ratio)} of the bound, target {target:.0%}")
    # The peer decodes, detects, suppresses, draws and encodes: it is held against fovea's
    # flow doing the same (OSD + mosaic video). The null sinks are compared too, for what the
    # decode-to-detections part alone gains, without a target.
    lines += ["", "| model | fovea OSD + mosaic fps | Python drawn + encoded fps | ratio (target) "
                  "| fovea null fps | Python null fps | ratio |", "|---|---|---|---|---|---|---|"]
    for model in sorted(set(best_null) | set(best_drawn)):
        drawn, base_drawn = best_drawn.get(model), baseline.get((model, "baseline_drawn"))
        null, base_null = best_null.get(model), baseline.get((model, "baseline_null"))
        ratio = drawn / base_drawn if drawn and base_drawn else None
        null_ratio = null / base_null if null and base_null else None
        lines.append(f"| {model} | {number(drawn)} | {base_drawn or '?'} | "
                     f"{f'{ratio:.1f}x' if ratio else '?'} (>= {BASELINE_TARGET:.0f}x) | {number(null)} | "
                     f"{base_null or '?'} | {f'{null_ratio:.1f}x' if null_ratio else '?'} |")
        if ratio is None or ratio < BASELINE_TARGET:
            misses.append(f"{model}: fovea (OSD + mosaic) {f'{ratio:.1f}x' if ratio else '?'} the Python "
                          f"baseline (drawn + encoded), target {BASELINE_TARGET:.0f}x")
    return lines, misses


def main():
    with open(sys.argv[1]) as f:
        runs = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    lines, misses = summarize(runs)
    return write_summary(lines, misses, sys.argv[2])


def write_summary(lines, misses, path):
    """The table, then each missed target; to PATH and stdout. The exit status: 1 when any was missed."""
    text = "\n".join(lines + [""] + [f"MISSED: {m}" for m in misses] + ([] if misses else ["all targets met"])) + "\n"
    with open(path, "w") as f:
        f.write(text)
    print("\n" + text)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
