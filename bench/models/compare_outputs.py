#!/usr/bin/env python3
"""Compare fovea's outputs with PyTorch's references and print the markdown table for docs/perf.md.

  compare_outputs.py REF_DIR FOVEA_OUT_DIR

REF_DIR is what export_torchvision.py wrote (manifest.json, <model>.output_<i>.npy). FOVEA_OUT_DIR
holds one folder per model with what `fovea model run --output-dir FOVEA_OUT_DIR/<model>` wrote:
one <output name>.npy per output, and run.log (its stdout and stderr, as run_real_models.sh saves
them), from which the run time ("ran in X ms") or the error is read.

The measure is max|fovea - torch| / max|torch| per output, the worst output per model; a model
passes at or below --tolerance (1e-4, the issue's bound).
"""

import argparse
import json
import os
import re
import sys

import numpy as np

RAN_IN = re.compile(r"ran in ([0-9.]+) ms on (\d+) CPU threads")


def npy_name(value_name):
    """fovea names each output file after the value, with unsafe characters replaced (cmd_model.cpp)."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", value_name) + ".npy"


def max_rel_error(ref, got):
    ref = ref.astype(np.float64)
    got = got.astype(np.float64)
    scale = np.max(np.abs(ref)) if ref.size else 0.0
    diff = np.max(np.abs(got - ref)) if ref.size else 0.0
    return float(diff / scale) if scale > 0 else float(diff)


def last_error(log_text):
    """The line that says why fovea failed: its last error line, else the log's last line."""
    lines = [line.strip() for line in log_text.splitlines() if line.strip()]
    for line in reversed(lines):
        if "error" in line.lower() or "unsupported" in line.lower() or "failed" in line.lower():
            return line
    return lines[-1] if lines else "no output"


def compare_model(entry, ref_dir, fovea_dir, tolerance):
    name = entry["model"]
    row = {"model": name, "torch_ms": None, "torch_first_ms": None, "ort_ms": None, "ort_error": None}
    torch_ms = entry.get("torch_cpu_ms")
    if torch_ms:
        row["torch_ms"] = torch_ms["median"]
        row["torch_first_ms"] = torch_ms.get("first")
    ort = entry.get("onnxruntime") or {}
    row["ort_ms"] = ort.get("median_ms")
    row["ort_error"] = ort.get("max_rel_error")
    if "error" in entry:
        row.update(status="export failed", detail=entry["error"])
        return row

    model_dir = os.path.join(fovea_dir, name)
    log_path = os.path.join(model_dir, "run.log")
    log_text = open(log_path, errors="replace").read() if os.path.exists(log_path) else ""
    match = RAN_IN.search(log_text)
    row["fovea_ms"] = float(match.group(1)) if match else None
    row["fovea_threads"] = int(match.group(2)) if match else None

    errors = []
    for out in entry["outputs"]:
        got_path = os.path.join(model_dir, npy_name(out["name"]))
        if not os.path.exists(got_path):
            detail = last_error(log_text) if log_text else f"no {got_path} and no run.log"
            row.update(status="fovea failed", detail=detail)
            return row
        ref = np.load(os.path.join(ref_dir, out["file"]))
        got = np.load(got_path)
        if ref.shape != got.shape:
            row.update(status="shape mismatch",
                       detail=f"{out['name']}: fovea {list(got.shape)}, torch {list(ref.shape)}")
            return row
        if not np.all(np.isfinite(got)):
            row.update(status="non-finite", detail=f"{out['name']} holds NaN or Inf")
            return row
        errors.append((max_rel_error(ref, got), out["name"]))
    worst, worst_name = max(errors)
    row["error"] = worst
    row["per_output"] = {n: e for e, n in errors}
    row["status"] = "pass" if worst <= tolerance else "FAIL"
    row["detail"] = "" if worst <= tolerance else f"worst output: {worst_name}"
    return row


def fmt_ms(value):
    return f"{value:.1f}" if value is not None else "—"


def fmt_err(value):
    return f"{value:.2e}" if value is not None else "—"


def markdown(rows, tolerance):
    lines = [
        f"| model | max rel error | ≤ {tolerance:g} | fovea CPU ms | PyTorch CPU ms | fovea / PyTorch "
        "| PyTorch first call ms | onnxruntime CPU ms | onnxruntime rel error |",
        "|---|---:|:---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ratio = (f"{r['fovea_ms'] / r['torch_ms']:.2f}×"
                 if r.get("fovea_ms") and r.get("torch_ms") else "—")
        verdict = {"pass": "yes", "FAIL": "**no**"}.get(r["status"], f"**{r['status']}**")
        lines.append(f"| {r['model']} | {fmt_err(r.get('error'))} | {verdict} | "
                     f"{fmt_ms(r.get('fovea_ms'))} | {fmt_ms(r.get('torch_ms'))} | {ratio} | "
                     f"{fmt_ms(r.get('torch_first_ms'))} | "
                     f"{fmt_ms(r.get('ort_ms'))} | {fmt_err(r.get('ort_error'))} |")
    notes = [f"- {r['model']}: {r['status']}: {r['detail']}" for r in rows if r.get("detail")]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(
        description="Compare fovea model outputs with the PyTorch references of "
                    "export_torchvision.py and print a markdown table.")
    parser.add_argument("ref_dir", metavar="REF_DIR", help="export_torchvision.py's --out folder")
    parser.add_argument("fovea_dir", metavar="FOVEA_OUT_DIR",
                        help="folder with one <model>/ folder of fovea outputs and run.log each")
    parser.add_argument("--tolerance", type=float, default=1e-4,
                        help="max|Δ|/max|ref| bound for a pass (default 1e-4, the issue's)")
    parser.add_argument("--json", help="also write the rows as JSON here")
    args = parser.parse_args()

    with open(os.path.join(args.ref_dir, "manifest.json")) as f:
        manifest = json.load(f)
    rows = [compare_model(e, args.ref_dir, args.fovea_dir, args.tolerance)
            for e in manifest["models"]]
    repeats = next((e["torch_cpu_ms"]["repeats"] for e in manifest["models"] if "torch_cpu_ms" in e), "?")
    print(f"PyTorch {manifest['torch']}, torchvision {manifest['torchvision']}. PyTorch and "
          f"onnxruntime: median of {repeats} runs after a warm-up, {manifest['threads']} threads "
          f"(PyTorch's first call is listed too). fovea: one run in a fresh process, "
          f"FOVEA_CPU_THREADS={manifest['threads']}.\n")
    print(markdown(rows, args.tolerance))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0 if rows and all(r["status"] == "pass" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
