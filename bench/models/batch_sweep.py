#!/usr/bin/env python3
"""fovea's items/s and latency across batch sizes, against PyTorch eager at the same batches (issue 25).

  batch_sweep.py --variant LABEL=FOVEA[,VAR=VALUE...] [--variant ...] --out DIR [--models a,b]
                 [--iterations N] [--seconds S] [--no-torch]

Each variant is a fovea binary, optionally with environment settings, benched in one process over
every batch as a user runs it (`fovea model bench --precision fp16 --batch 1,4,...`), with its own
empty algorithm cache (FOVEA_CACHE_DIR=DIR/cache_LABEL), so no variant reuses another's choices.
PyTorch: eager, FP16, channels-last, cudnn.benchmark on (compare_torch.torch_perf). Models are
compare_torch's: seeded weights, calibrated BatchNorm, dynamic batch and spatial dims.

Writes DIR/sweep.json and DIR/sweep.md: per model, items/s and p50 latency per batch, and each
row's worst fall, (best items/s at any smaller batch - items/s) / that best, which the issue bounds
by run-to-run noise (3%).
"""

import argparse
import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_torch  # noqa: E402

# The models, shapes and batches: up to 64, 256 for the 224x224 classifiers.
SMALL = [1, 4, 8, 16, 32, 64]
CLASSIFIER = SMALL + [128, 256]
MODELS = {
    "detectnet_resnet34": (544, 960, SMALL),
    "resnet50": (224, 224, CLASSIFIER),
    "fcn_resnet101": (544, 960, SMALL),
    "ssd300_vgg16": (300, 300, SMALL),
    "ssdlite320_mobilenet_v3_large": (320, 320, SMALL),
    "unet_256": (256, 256, SMALL),
}


def fovea_sweep(binary, env, onnx_path, h, w, batches, iterations, seconds, log_path, timeout):
    cmd = [binary, "-v", "model", "bench", onnx_path, "--precision", "fp16", "--shape", f"input=1x3x{h}x{w}",
           "--batch", ",".join(map(str, batches)), "--iterations", str(iterations), "--seconds", str(seconds),
           "--json"]
    with open(log_path, "w") as log:
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, timeout=timeout, text=True,
                                  env={**os.environ, **env})
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout} s, see {log_path}"}
        log.write(proc.stdout)
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}, see {log_path}"}
    return {str(p["batch"]): p for p in json.loads(proc.stdout)}


def worst_fall(points, batches):
    """The largest relative fall of items/s below the best at any smaller batch."""
    best, worst = 0.0, 0.0
    for b in batches:
        ips = points.get(str(b), {}).get("items_per_second")
        if ips is None:
            continue
        if best > 0:
            worst = max(worst, (best - ips) / best)
        best = max(best, ips)
    return worst


def markdown(results):
    lines = []
    for name, entry in results["models"].items():
        h, w, batches = MODELS[name]
        lines += [f"**{name}** {h}x{w}, items/s (p50 ms)", "",
                  "| run | " + " | ".join(f"b{b}" for b in batches) + " | worst fall |",
                  "|---|" + "---:|" * (len(batches) + 1)]
        for label, points in entry.items():
            if "error" in points:
                lines.append(f"| {label} | {points['error']} |")
                continue
            cells = []
            for b in batches:
                p = points.get(str(b))
                cells.append(f"{p['items_per_second']:,.0f} ({p['latency_p50_ms']:.3f})" if p else "")
            lines.append(f"| {label} | " + " | ".join(cells) + f" | {worst_fall(points, batches):.1%} |")
        lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", required=True,
                        help="LABEL=FOVEA_BINARY[,VAR=VALUE...]: a fovea build and its environment")
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--iterations", type=int, default=50, help="fovea's and PyTorch's timed runs per batch")
    parser.add_argument("--seconds", type=float, default=1.0,
                        help="shortest warm-up and back-to-back loop per batch, fovea's and PyTorch's (a GPU at "
                             "its power limit slows within a second or so of full load)")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per fovea sweep")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    variants = []
    for text in args.variant:
        label, rest = text.split("=", 1)
        binary, *settings = rest.split(",")
        env = dict(s.split("=", 1) for s in settings)
        env["FOVEA_CACHE_DIR"] = os.path.join(os.path.abspath(args.out), f"cache_{label}")
        variants.append((label, binary, env))
    results = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "models": {}}
    for name in [m for m in args.models.split(",") if m]:
        h, w, batches = MODELS[name]
        onnx_path = os.path.join(args.out, f"{name}.onnx")
        model, _ = compare_torch.export_dynamic(name, onnx_path)
        entry = results["models"][name] = {}
        for label, binary, env in variants:
            print(f"== {name} fovea {label}", flush=True)
            entry[f"fovea {label}"] = fovea_sweep(binary, env, onnx_path, h, w, batches, args.iterations, args.seconds,
                                                  os.path.join(args.out, f"{name}_{label}.log"), args.timeout)
            print(json.dumps(entry[f"fovea {label}"]), flush=True)
        if not args.no_torch:
            torch_points = {}
            for b in batches:
                torch_points[str(b)] = compare_torch.torch_perf(model, b, h, w, args.iterations, args.seconds)
                torch.cuda.empty_cache()
            entry["PyTorch eager fp16 channels-last"] = torch_points
            print(json.dumps(torch_points), flush=True)
        del model
        torch.cuda.empty_cache()
        with open(os.path.join(args.out, "sweep.json"), "w") as f:
            json.dump(results, f, indent=2)
    with open(os.path.join(args.out, "sweep.md"), "w") as f:
        f.write(markdown(results))
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
