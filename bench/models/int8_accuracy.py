#!/usr/bin/env python3
"""INT8 against float32 on trained networks (issue 23's accuracy table), on the GPU machine:

  int8_accuracy.py --fovea BUILD/apps/fovea/fovea --out DIR [--models a,b] [--methods entropy,...]
                   [--samples 500] [--eval 500] [--device cuda] [--int8-args=--fp16-residuals]
                   [--calib-args="--min-sqnr 30"]

Per model (classifiers resnet18, resnet50, mobilenet_v3_large; segmentation fcn_resnet50,
fcn_resnet101, deeplabv3_resnet50):
  1. train_synthetic.trained(name): 300 steps on the synthetic task (pretrained weights cannot be
     downloaded there), exported with a dynamic batch (compare_torch.export_dynamic);
  2. --samples calibration pictures of the task (train_synthetic.synthetic_batch, CALIB_SEED)
     written as PNG, and --eval other pictures (EVAL_SEED) as the network's input, normalized as
     the model expects from the same 8-bit pixels the PNGs hold;
  3. `fovea model calibrate M --images CALIB --method X --normalize imagenet --size WxH` for each
     method (entropy, percentile, minmax), on --device;
  4. `fovea model run` over the evaluation pictures in chunks of CHUNK, at fp32 and at int8 with
     each method's cache;
  5. classifiers: the share of pictures whose int8 top-1 class is the fp32 one (target >= 99%);
     segmentation: the share of pixels whose int8 argmax is the fp32 one (target >= 99%).
Classifiers run at 224x224, the segmentation networks at 256x256, the sizes they were trained at.
The detectors (mAP against the synthetic ground truth) need compare_detections.py's clip and
metadata path with --precision int8, which this script does not cover yet.
Results: DIR/int8.json and DIR/int8.md; a model that fails is recorded and the others go on.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_torchvision as tv_export  # noqa: E402
import train_synthetic  # noqa: E402
from compare_torch import export_dynamic, npy_name, run  # noqa: E402

CLASSIFIERS = ["resnet18", "resnet50", "mobilenet_v3_large"]
SEGMENTERS = ["fcn_resnet50", "fcn_resnet101", "deeplabv3_resnet50"]
SIDE = {**{m: 224 for m in CLASSIFIERS}, **{m: 256 for m in SEGMENTERS}}
METHODS = ["entropy", "percentile", "minmax"]
TARGET = 0.99
CALIB_SEED = 11
EVAL_SEED = 12
CHUNK = 50  # evaluation pictures per `fovea model run`


def pictures(count, side, seed):
    """`count` synthetic pictures [count, 3, side, side] in [0, 1], rounded to 8 bits."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    chunks = []
    for first in range(0, count, CHUNK):
        images, _, _, _ = train_synthetic.synthetic_batch(min(CHUNK, count - first), side, side, g, "cpu")
        chunks.append(torch.round(images * 255) / 255)
    return torch.cat(chunks)


def write_pngs(images, folder):
    os.makedirs(folder, exist_ok=True)
    for i, image in enumerate(images):
        pixels = (image * 255).round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).numpy()
        Image.fromarray(pixels).save(os.path.join(folder, f"calib_{i:04d}.png"))


def last_line(path):
    with open(path) as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "?"


def fovea_outputs(args, onnx_path, output_name, chunks, work, extra):
    """The model's output over every chunk of the evaluation input, concatenated."""
    outs = []
    for i, chunk_path in enumerate(chunks):
        run_dir = os.path.join(work, f"chunk{i}")
        os.makedirs(run_dir, exist_ok=True)
        log = os.path.join(run_dir, "run.log")
        rc, _ = run([args.fovea, "model", "run", onnx_path, "--device", args.device, "--input",
                     f"input={chunk_path}", "--output-dir", run_dir] + extra, log, args.timeout)
        if rc != 0:
            raise RuntimeError(f"fovea model run {' '.join(extra)}: exit {rc}: {last_line(log)}")
        outs.append(np.load(os.path.join(run_dir, npy_name(output_name))))
    return np.concatenate(outs)


def agreement(reference, got):
    """Top-1 (classifiers, logits [N, C]) or per-pixel argmax (segmentation, [N, C, H, W]) agreement."""
    return float(np.mean(np.argmax(got, axis=1) == np.argmax(reference, axis=1)))


def evaluate(args, name):
    side = SIDE[name]
    work = os.path.join(args.out, name)
    os.makedirs(work, exist_ok=True)
    entry = {"model": name, "side": side, "samples": args.samples, "eval": args.eval}
    started = time.perf_counter()
    model, output_names = train_synthetic.trained(name)
    onnx_path = os.path.join(work, f"{name}.onnx")
    export_dynamic(name, onnx_path, (model, output_names))
    entry["train_export_s"] = round(time.perf_counter() - started, 1)

    calib_dir = os.path.join(work, "calib")
    write_pngs(pictures(args.samples, side, CALIB_SEED), calib_dir)
    inputs = train_synthetic.normalized(pictures(args.eval, side, EVAL_SEED)).numpy().astype(np.float32)
    chunks = []
    for first in range(0, len(inputs), CHUNK):
        chunks.append(os.path.join(work, f"eval_{first // CHUNK}.npy"))
        np.save(chunks[-1], inputs[first:first + CHUNK])

    reference = fovea_outputs(args, onnx_path, output_names[0], chunks, os.path.join(work, "fp32"),
                              ["--precision", "fp32"])
    entry["methods"] = {}
    for method in args.methods.split(","):
        cache = os.path.join(work, f"{name}.{method}.calib")
        log = os.path.join(work, f"calibrate_{method}.log")
        rc, calibrate_s = run([args.fovea, "model", "calibrate", onnx_path, "--images", calib_dir, "--samples",
                               str(args.samples), "--method", method, "--normalize", "imagenet", "--size",
                               f"{side}x{side}", "--device", args.device, "-o", cache] + args.calib_args.split(),
                              log, args.timeout)
        if rc != 0:
            entry["methods"][method] = {"error": f"calibrate: exit {rc}: {last_line(log)}"}
            continue
        try:
            got = fovea_outputs(args, onnx_path, output_names[0], chunks, os.path.join(work, f"int8_{method}"),
                                ["--precision", "int8", "--calib", cache] + args.int8_args.split())
        except RuntimeError as e:
            entry["methods"][method] = {"error": str(e)}
            continue
        entry["methods"][method] = {"agreement": agreement(reference, got),
                                    "calibrate_s": round(calibrate_s, 1)}
        print(f"  {name} {method}: {entry['methods'][method]}", flush=True)
    return entry


def markdown(results):
    methods = results["methods"]
    lines = [f"GPU: {results['gpu']}; networks trained on train_synthetic.py's task; calibrated on "
             f"{results['samples']} pictures, evaluated on {results['eval']} others; int8 against fp32 "
             f"(fovea both), target >= {TARGET:.0%}."
             + (f" int8 runs with `{results['int8_args']}`." if results.get("int8_args") else "")
             + (f" Calibrated with `{results['calib_args']}`." if results.get("calib_args") else ""), "",
             "| model | measure | " + " | ".join(methods) + " |", "|---|---|" + "---:|" * len(methods)]
    for e in results["models"]:
        measure = "top-1 agreement" if e["model"] in CLASSIFIERS else "pixel argmax agreement"
        if "error" in e:
            lines.append(f"| {e['model']} | {measure} | failed: {e['error']} |")
            continue
        cells = []
        for method in methods:
            m = e["methods"].get(method, {"error": "not run"})
            if "error" in m:
                cells.append("failed")
            else:
                cells.append(f"{100 * m['agreement']:.2f}%" + ("" if m["agreement"] >= TARGET else " (miss)"))
        lines.append(f"| {e['model']} ({e['side']}x{e['side']}) | {measure} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fovea", required=True, help="the fovea binary")
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default=",".join(CLASSIFIERS + SEGMENTERS))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--samples", type=int, default=500, help="calibration pictures")
    parser.add_argument("--eval", type=int, default=500, help="evaluation pictures")
    parser.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
    parser.add_argument("--timeout", type=int, default=600, help="seconds per fovea command")
    parser.add_argument("--int8-args", default="",
                        help="more arguments for the int8 runs, e.g. --int8-args=--fp16-residuals")
    parser.add_argument("--calib-args", default="",
                        help="more arguments for `fovea model calibrate`, e.g. --calib-args='--min-sqnr 30'")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    unknown = [m for m in args.models.split(",") if m and m not in SIDE]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {sorted(SIDE)}")
    results = {"gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "none",
               "samples": args.samples, "eval": args.eval, "methods": args.methods.split(","),
               "int8_args": args.int8_args, "calib_args": args.calib_args, "models": []}
    for name in [m for m in args.models.split(",") if m]:
        print(f"== {name}", flush=True)
        try:
            entry = evaluate(args, name)
        except Exception as e:  # noqa: BLE001 - one model's failure must not stop the others
            entry = {"model": name, "side": SIDE[name], "error": f"{type(e).__name__}: {str(e)[:300]}"}
        results["models"].append(entry)
        with open(os.path.join(args.out, "int8.json"), "w") as f:
            json.dump(results, f, indent=2)
        with open(os.path.join(args.out, "int8.md"), "w") as f:
            f.write(markdown(results))
    print(markdown(results))
    return 0 if all("error" not in e and all("error" not in m and m["agreement"] >= TARGET
                                             for m in e["methods"].values())
                    for e in results["models"]) else 1


if __name__ == "__main__":
    sys.exit(main())
