#!/usr/bin/env python3
"""images_bench.sh's summary: the image-folder flow (issue 21) against its ceilings and its Python peer.

    images_bench_summary.py RUNS.tsv SUMMARY.md

RUNS.tsv has one line per run: kind, name, batch, exit status, result file, output folder ('-' where
it does not apply):
  baseline  unet_256            -   baseline_images.py's JSON line      its PNG folder
  decode    ab | photos         -   `fovea image-bench` JSON (decode)   -
  encode    png                 -   `fovea image-bench --encode` JSON   -
  model     unet_256 | detectnet_resnet34  -  `fovea model bench --json` output  -
  flow      unet_256            B   `fovea images` report (pix2pix)     its PNG folder
  detect    detectnet_resnet34  B   `fovea images` report (detector)    -
Each run's log is its result file with .log for .json (images_bench.sh's layout).

Targets (the issue's): each pix2pix run's steady rate >= 90% of the slowest of its three ceilings
measured alone (decode of the AB folder by the fastest backend, model bench at the run's batch, PNG
encode of the network's outputs), and the best run >= 10x the baseline; the detector run >= 90% of
min(decode of the photos by the fastest backend, model bench at its batch). fovea's rates are the
report's startup.steady_fps (after the first output: the ceilings and the baseline's rate leave
start-up out too; the baseline times no model build and runs one image untimed first); the total
rate (start-up included) is listed beside it, with the decoder the flow used and the bound it names
itself. The decode ceilings of every backend are listed in images/s and MB/s (compressed bytes).
Where the flow decodes on the CPU, decode and PNG encode share the cores: the rate both allow
together is listed too, without a target. The pix2pix outputs are compared with the baseline's PNGs
of the same images (the same network, PyTorch fp16 against fovea fp16): no target, a check that both
computed the same thing.

Prints the tables (also written to SUMMARY.md); exits 1 when a target is missed or a run left no result.
"""

import collections
import os
import sys

import numpy as np
from PIL import Image

from detect_bench_summary import load, number, peak_gpu_mib, percent, write_summary

FLOW_TARGET, BASELINE_TARGET = 0.90, 10.0
ENCODE_PREFIX = "encode-"  # image-bench's row of the encode ceiling: backend "encode-png"
COMPARED_IMAGES = 200  # outputs compared with the baseline's: enough for the max, quick to read

Run = collections.namedtuple("Run", "kind name batch status path out")


def image_bench_rows(report):
    """{backend: row} of an image-bench --json report (rows: images_per_second, mb_per_second, detail)."""
    return {row["backend"]: row for row in report.get("backends", [])}


def log_of(run):
    return run.path[: -len(".json")] + ".log"


def peak_rss_mib(run):
    """'Maximum resident set size' of /usr/bin/time -v in the run's log, if any."""
    try:
        with open(log_of(run)) as f:
            for line in f:
                if "Maximum resident set size" in line:
                    return int(line.rsplit(":", 1)[1]) / 1024
    except (OSError, ValueError):
        pass
    return None


def compare_outputs(fovea_dir, baseline_dir):
    """(images, max |d|, mean |d|) over the first PNGs both wrote (matched by path without the extension,
    as fovea may keep the input's extension in the name); images of different sizes count as None."""
    def stems(folder):
        found = {}
        for root, _, files in os.walk(folder):
            for f in files:
                path = os.path.join(root, f)
                found[os.path.splitext(os.path.relpath(path, folder))[0]] = path
        return found

    ours, theirs = stems(fovea_dir), stems(baseline_dir)
    common = sorted(set(ours) & set(theirs))[:COMPARED_IMAGES]
    worst, total, values = 0, 0.0, 0
    for stem in common:
        with Image.open(ours[stem]) as a, Image.open(theirs[stem]) as b:
            x, y = np.asarray(a.convert("RGB"), np.int16), np.asarray(b.convert("RGB"), np.int16)
        if x.shape != y.shape:
            return len(common), None, None
        d = np.abs(x - y)
        worst, total, values = max(worst, int(d.max())), total + float(d.sum()), values + d.size
    return len(common), worst, (total / values if values else None)


def rate_of(report):
    """(steady, total) images/s of a fovea images report."""
    return report["startup"]["steady_fps"], report["total"]["fps"]


def bound_of(ceilings):
    """(images/s, which) of the slowest ceiling, or (None, what is missing)."""
    missing = [what for what, v in ceilings.items() if not v]
    if missing:
        return None, "no " + ", ".join(missing)
    what = min(ceilings, key=ceilings.get)
    return ceilings[what], what


class Summary:
    """The tables (lines) and the missed targets (misses) of the runs."""

    def __init__(self, runs):
        self.runs = runs
        self.lines, self.misses = [], []
        for run in runs:
            what = " ".join([run.kind, run.name] + ([f"batch {run.batch}"] if run.batch != "-" else []))
            if run.status == "124":
                self.misses.append(f"{what}: timed out, see {log_of(run)}")
            elif run.status != "0":
                self.misses.append(f"{what}: exit status {run.status}, see {log_of(run)}")
        self.decode = {r.name: {backend: row for backend, row in image_bench_rows(load(r.path) or {}).items()
                                if not backend.startswith(ENCODE_PREFIX)} for r in self.of("decode")}
        self.model = {r.name: {point["batch"]: point["items_per_second"] for point in (load(r.path) or [])}
                      for r in self.of("model")}
        self.encode = next((image_bench_rows(load(r.path) or {}).get(ENCODE_PREFIX + r.name, {})
                            .get("images_per_second") for r in self.of("encode")), None)
        found = {"decode": self.decode, "model": self.model, "encode": {"png": self.encode}}
        for run in self.of("decode", "model", "encode"):
            if run.status == "0" and not found[run.kind].get(run.name):
                self.misses.append(f"{run.kind} ceiling {run.name}: no figures in {run.path}")

    def of(self, *kinds):
        return [r for r in self.runs if r.kind in kinds]

    def best_decode(self, folder):
        """(backend, images/s) of the fastest decoder of `folder`."""
        rates = [(row["images_per_second"], backend) for backend, row in self.decode.get(folder, {}).items()
                 if row.get("images_per_second")]
        return (max(rates)[1], max(rates)[0]) if rates else (None, None)

    def decode_table(self):
        self.lines += ["| folder | backend | images/s | MB/s | how |", "|---|---|---|---|---|"]
        for folder, backends in self.decode.items():
            for backend, row in backends.items():
                mbps = row.get("mb_per_second")
                self.lines.append(f"| {folder} | {backend} | {number(row.get('images_per_second'))} | "
                                  f"{f'{mbps:.1f}' if mbps else '?'} | {row.get('detail', '')} |")
        self.lines.append(f"\nPNG encode ceiling (the network's 256x256 outputs): {number(self.encode)} images/s")

    def fovea_row(self, label, run, ceilings):
        """One table row of a fovea images run against its bound; returns its steady rate or None."""
        report = load(run.path)
        bound, which = bound_of(ceilings)
        cells = " | ".join(number(v) for v in ceilings.values())
        if not report:
            self.lines.append(f"| {label} | {run.batch} | no result | | | {cells} | | | | | |")
            if run.status == "0":
                self.misses.append(f"{label} batch {run.batch}: no report, see {log_of(run)}")
            return None
        steady, total = rate_of(report)
        ratio = steady / bound if bound else None
        own = report.get("bound", {}).get("what", "?")
        decoders = ", ".join(sorted({s["decoder"] for s in report.get("sources", []) if s.get("decoder")})) or "?"
        self.lines.append(f"| {label} | {run.batch} | {report['total']['frames']} | {total:.0f} | {steady:.0f} | "
                          f"{cells} | {which} | {percent(ratio)} (>= {FLOW_TARGET:.0%}) | {decoders} | {own} | "
                          f"{number(peak_rss_mib(run))} / {peak_gpu_mib(run.path) or '?'} |")
        if ratio is None or ratio < FLOW_TARGET:
            self.misses.append(f"{label} batch {run.batch}: {percent(ratio)} of its bound ({which}), target "
                               f"{FLOW_TARGET:.0%}")
        return steady

    def pix2pix_tables(self):
        backend, decode = self.best_decode("ab")
        self.lines += ["", f"| pix2pix run | batch | images | fps (total) | fps (steady) | decode ({backend or '?'}) "
                       "| model bench | PNG encode | bound | steady / bound | decoder | fovea's own bound "
                       "| peak RSS / GPU MiB |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        best, best_run = None, None
        for run in self.of("flow"):
            ceilings = {"decode": decode, "model": self.model.get(run.name, {}).get(int(run.batch)),
                        "encode": self.encode}
            steady = self.fovea_row("fovea images", run, ceilings)
            if steady and (best is None or steady > best):
                best, best_run = steady, run
        cpu_decode = self.decode.get("ab", {}).get("cpu", {}).get("images_per_second")
        if cpu_decode and self.encode:
            shared = 1.0 / (1.0 / cpu_decode + 1.0 / self.encode)
            self.lines.append(f"\nCPU decode and PNG encode share the cores; measured apart, together they allow "
                              f"{shared:.0f} images/s (1 / (1/decode + 1/encode)): the bound where the flow decodes "
                              "on the CPU (no target)")
        for baseline in self.of("baseline"):
            self.against_baseline(best, best_run, baseline)

    def against_baseline(self, best, best_run, baseline):
        """fovea's best steady rate against the baseline's, and their outputs compared."""
        result = load(baseline.path) or {}
        rate = result.get("images_per_second")
        if not rate and baseline.status == "0":
            self.misses.append(f"baseline: no result, see {log_of(baseline)}")
        stages = ", ".join(f"{s} {ms:.2f}" for s, ms in result.get("stage_ms", {}).items())
        ratio = best / rate if best and rate else None
        self.lines += ["", "| fovea best steady images/s | Python baseline images/s | ratio (target) | "
                       "baseline images | baseline ms per image by stage |", "|---|---|---|---|---|",
                       f"| {number(best)} | {rate or '?'} | {f'{ratio:.1f}x' if ratio else '?'} "
                       f"(>= {BASELINE_TARGET:.0f}x) | {result.get('images', '?')} | {stages} |"]
        if ratio is None or ratio < BASELINE_TARGET:
            self.misses.append(f"fovea {f'{ratio:.1f}x' if ratio else '?'} the Python baseline, target "
                               f"{BASELINE_TARGET:.0f}x")
        if best_run and os.path.isdir(best_run.out) and os.path.isdir(baseline.out):
            images, worst, mean = compare_outputs(best_run.out, baseline.out)
            detail = f"max |d| {worst}, mean |d| {mean:.3g}" if mean is not None else "sizes differ or none matched"
            self.lines.append(f"\nfovea's PNGs (batch {best_run.batch}) against the baseline's, fp16 both, {images} "
                              f"images: {detail} (0..255 per channel; no target)")

    def detect_table(self):
        backend, decode = self.best_decode("photos")
        self.lines += ["", f"| detector run | batch | images | fps (total) | fps (steady) | decode ({backend or '?'}) "
                       "| model bench | bound | steady / bound | decoder | fovea's own bound | peak RSS / GPU MiB |",
                       "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for run in self.of("detect"):
            ceilings = {"decode": decode, "model": self.model.get(run.name, {}).get(int(run.batch))}
            self.fovea_row(f"fovea images {run.name}", run, ceilings)


def main():
    with open(sys.argv[1]) as f:
        runs = [Run(*line.rstrip("\n").split("\t")) for line in f if line.strip()]
    summary = Summary(runs)
    summary.decode_table()
    summary.pix2pix_tables()
    summary.detect_table()
    return write_summary(summary.lines, summary.misses, sys.argv[2])


if __name__ == "__main__":
    sys.exit(main())
