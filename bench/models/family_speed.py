#!/usr/bin/env python3
"""Every torchvision family against PyTorch eager on the GPU, in one call (issue 22's speed table):

  family_speed.py --fovea BUILD/apps/fovea/fovea --out DIR [--models a,b] [--seconds S] [--check]
                  [--skip-speed]

For each model: torchvision's architecture with seeded weights (no download), exported with a
dynamic batch (opset 17), then at the issue's benchmark batch (64 for the 224x224 classifiers, 299
for Inception-V3, 4 for the 520x520 segmentation networks):
  - PyTorch 2.x eager, float16, channels-last, cudnn.benchmark, inference_mode
    (compare_torch.torch_perf, the same rule as fovea: warm-up and loop of at least S seconds);
  - `fovea model bench --precision fp16` twice with one engine cache: the first plans (the cuDNN
    algorithm search; its plan time is the cold planning time), the second loads the cached engine
    (the warm planning time, target <= 10 s) and is the timed run.
With --check, each model's outputs are first compared with PyTorch's (the issue's correctness bar):
one seeded input at batch 2, PyTorch float32 on the GPU with TF32 off as the reference, and `fovea
model run` on the CPU (float32) and on CUDA at fp32 and fp16, each as max|d| / max|ref| (bounds 1e-3
and 2e-2), next to PyTorch's own float16 (channels-last) against the same reference: seeded weights
are not a trained network's, and deep ones lose more to float16 rounding whoever computes them
(compare_torch.py --trained holds fovea to trained networks). The checked models' BatchNorm
statistics are calibrated on a seeded batch first (compare_torch.calibrate_batchnorm_: without it
the activations of deep networks outgrow float16 in PyTorch as in fovea). --skip-speed leaves the
timed runs out. --compile a,b (default: the three largest, VGG-16, Wide-ResNet-50 and ViT-B/16) also
times those models through torch.compile (inductor, default mode; its compile time beside).
A model that fails to export, plan or run is recorded with its error; the others go on.
Results: DIR/family.json and DIR/family.md (the table for docs/perf.md).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import calibrate_batchnorm_, npy_name, rel_error, run, torch_perf  # noqa: E402

# (family, torchvision name, batch, side)
CASES = [
    ("ResNet", "resnet50", 64, 224),
    ("ResNeXt", "resnext50_32x4d", 64, 224),
    ("Wide-ResNet", "wide_resnet50_2", 64, 224),
    ("VGG", "vgg16", 64, 224),
    ("MobileNet-V2", "mobilenet_v2", 64, 224),
    ("MobileNet-V3", "mobilenet_v3_large", 64, 224),
    ("EfficientNet", "efficientnet_b0", 64, 224),
    ("EfficientNet-V2", "efficientnet_v2_s", 64, 224),
    ("RegNet", "regnet_y_800mf", 64, 224),
    ("ConvNeXt", "convnext_tiny", 64, 224),
    ("DenseNet", "densenet121", 64, 224),
    ("ShuffleNet", "shufflenet_v2_x1_0", 64, 224),
    ("SqueezeNet", "squeezenet1_1", 64, 224),
    ("GoogLeNet", "googlenet", 64, 224),
    ("Inception-V3", "inception_v3", 64, 299),
    ("ViT", "vit_b_16", 64, 224),
    ("Swin", "swin_t", 64, 224),
    ("FCN", "fcn_resnet50", 4, 520),
    ("DeepLabV3", "deeplabv3_resnet50", 4, 520),
    ("LR-ASPP", "lraspp_mobilenet_v3_large", 4, 520),
]
SEGMENTATION = {"fcn_resnet50", "deeplabv3_resnet50", "lraspp_mobilenet_v3_large"}
TARGET_RATIO = 1.3
CHECK_BATCH = 2
# The bounds on max|d| / max|ref| against PyTorch float32.
CHECK_BOUNDS = {"cpu fp32": 1e-3, "cuda fp32": 1e-3, "cuda fp16": 2e-2}
TORCH_FP16 = "torch fp16"


class OutTensor(torch.nn.Module):
    """A segmentation model's dict output as its 'out' tensor, so the graph has one output."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)["out"]


def build(name):
    torch.manual_seed(0)
    if name in SEGMENTATION:
        net = torchvision.models.get_model(name, weights=None, weights_backbone=None, aux_loss=False)
        return OutTensor(net).eval()
    kwargs = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
    net = torchvision.models.get_model(name, weights=None, **kwargs).eval()
    # ViT's head starts at zero (torchvision's init for fine-tuning): its output would be zero
    # whatever the network computes, and --check would compare nothing.
    for module in net.modules():
        if isinstance(module, torch.nn.Linear) and not module.weight.any():
            torch.nn.init.normal_(module.weight, std=0.02)
    return net


def export(net, side, path):
    if os.path.exists(path):
        return
    x = torch.randn(1, 3, side, side)
    torch.onnx.export(net, (x,), path, dynamo=False, input_names=["input"], output_names=["output"],
                      opset_version=17, do_constant_folding=True,
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})


def fovea_bench(args, path, batch, side, cache, log_path):
    cmd = [args.fovea, "model", "bench", path, "--precision", "fp16", "--batch", str(batch),
           "--shape", f"input={batch}x3x{side}x{side}", "--seconds", str(args.seconds),
           "--engine-cache", cache, "--json"]
    start = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, timeout=args.timeout, text=True)
        log.write(proc.stdout)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        with open(log_path) as f:
            last = [line for line in f.read().splitlines() if line.strip()][-1:] or ["?"]
        return {"error": f"exit {proc.returncode}: {last[0][:300]}"}
    point = json.loads(proc.stdout)[0]
    point["wall_s"] = wall
    return point


def check(args, net, name, side, path):
    """fovea's outputs on one seeded input against PyTorch float32: {"cpu fp32": error, ...}."""
    work = os.path.join(args.out, f"{name}_check")
    os.makedirs(work, exist_ok=True)
    x = torch.randn(CHECK_BATCH, 3, side, side, generator=torch.Generator().manual_seed(1))
    x_path = os.path.join(work, "input.npy")
    np.save(x_path, x.numpy())
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.inference_mode():
        ref = net.float().cuda()(x.cuda()).float().cpu().numpy()
        half = net.half().to(memory_format=torch.channels_last)(
            x.cuda().half().to(memory_format=torch.channels_last))
    net.float().cpu()
    errors = {TORCH_FP16: rel_error(ref, half.float().cpu().numpy())}
    for key in CHECK_BOUNDS:
        device, precision = key.split()
        run_dir = os.path.join(work, key.replace(" ", "_"))
        os.makedirs(run_dir, exist_ok=True)
        rc, _ = run([args.fovea, "model", "run", path, "--device", device, "--precision", precision,
                     "--input", f"input={x_path}", "--output-dir", run_dir],
                    os.path.join(run_dir, "run.log"), args.timeout)
        got_path = os.path.join(run_dir, npy_name("output"))
        if rc != 0 or not os.path.exists(got_path):
            errors[key] = f"exit {rc}"
            continue
        got = np.load(got_path)
        errors[key] = rel_error(ref, got) if got.shape == ref.shape else f"shape {list(got.shape)}"
    if not np.any(ref):
        errors = {key: "reference all zero" for key in errors}
    torch.cuda.empty_cache()
    return errors


def measure(args, family, name, batch, side):
    entry = {"family": family, "model": name, "batch": batch, "side": side}
    path = os.path.join(args.out, f"{name}.onnx")
    net = build(name)
    if args.check:
        calibrate_batchnorm_(net, (1, 3, side, side))
    export(net, side, path)
    if args.check:
        entry["check"] = check(args, net, name, side, path)
    if args.skip_speed:
        return entry
    cache = os.path.join(args.out, "engines")
    cold = fovea_bench(args, path, batch, side, cache, os.path.join(args.out, f"{name}_cold.log"))
    entry["plan_cold_s"] = cold.get("plan_ms", float("nan")) / 1000 if "error" not in cold else None
    warm = fovea_bench(args, path, batch, side, cache, os.path.join(args.out, f"{name}_warm.log"))
    entry["fovea"] = warm
    entry["plan_warm_s"] = warm.get("plan_ms", float("nan")) / 1000 if "error" not in warm else None
    if "error" in cold and "error" not in warm:
        entry["fovea_cold_error"] = cold["error"]
    if "error" in warm:
        entry["fovea"] = cold if "error" not in cold else warm
    entry["torch"] = torch_perf(build(name), batch, side, side, 20, args.seconds)
    torch.cuda.empty_cache()
    if name in args.compile.split(","):
        try:
            entry["torch_compile"] = torch_perf(build(name), batch, side, side, 20, args.seconds, compile=True)
        except Exception as e:  # noqa: BLE001 - a compile failure is a result, not the end of the run
            entry["torch_compile"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        torch.cuda.empty_cache()
    return entry


def markdown(results):
    lines = [f"GPU: {results['gpu']}, PyTorch {results['torch']}, float16, fovea `model bench --seconds "
             f"{results['seconds']}` against eager channels-last with the same rule.", "",
             "| family | model | batch | input | PyTorch eager img/s | fovea img/s | ratio | plan cold / warm s |",
             "|---|---|---:|---|---:|---:|---:|---|"]
    for e in [e for e in results["models"] if "torch" in e or "error" in e]:
        size = f"{e['side']}x{e['side']}"
        if "error" in e:
            lines.append(f"| {e['family']} | {e['model']} | {e['batch']} | {size} | | | failed: {e['error']} | |")
            continue
        t = e["torch"]["items_per_second"]
        f = e["fovea"]
        if "error" in f:
            lines.append(f"| {e['family']} | {e['model']} | {e['batch']} | {size} | {t:.0f} | failed: "
                         f"{f['error']} | | |")
            continue
        ratio = f["items_per_second"] / t
        mark = "" if ratio >= TARGET_RATIO else " (miss)"
        cold = "?" if e.get("plan_cold_s") is None else f"{e['plan_cold_s']:.1f}"
        warm = "?" if e.get("plan_warm_s") is None else f"{e['plan_warm_s']:.1f}"
        lines.append(f"| {e['family']} | {e['model']} | {e['batch']} | {size} | {t:.0f} | "
                     f"{f['items_per_second']:.0f} | {ratio:.2f}x{mark} | {cold} / {warm} |")
    compiled = [e for e in results["models"] if "torch_compile" in e and "error" not in e.get("fovea", {})]
    if compiled:
        lines += ["", "torch.compile (inductor, default mode, float16 channels-last) against fovea:", "",
                  "| model | eager img/s | compiled img/s | compile s | fovea img/s | fovea / compiled |",
                  "|---|---:|---:|---:|---:|---:|"]
        for e in compiled:
            c, f = e["torch_compile"], e["fovea"]["items_per_second"]
            if "error" in c:
                lines.append(f"| {e['model']} | {e['torch']['items_per_second']:.0f} | failed: {c['error']} | | "
                             f"{f:.0f} | |")
                continue
            lines.append(f"| {e['model']} | {e['torch']['items_per_second']:.0f} | {c['items_per_second']:.0f} | "
                         f"{c['compile_s']:.0f} | {f:.0f} | {f / c['items_per_second']:.2f}x |")
    checked = [e for e in results["models"] if "check" in e]
    if checked:
        lines += ["", f"Outputs against PyTorch float32 (TF32 off), one seeded input at batch {CHECK_BATCH}: "
                  "max|d| / max|ref|, bounds " + ", ".join(f"{k} {v:g}" for k, v in CHECK_BOUNDS.items()) +
                  f"; {TORCH_FP16} is PyTorch's own float16 run (channels-last). \"over\": beyond the bound "
                  f"and beyond twice {TORCH_FP16}'s.",
                  "", "| model | " + " | ".join(CHECK_BOUNDS) + f" | {TORCH_FP16} |",
                  "|---|" + "---:|" * (len(CHECK_BOUNDS) + 1)]
        for e in checked:
            torch_half = e["check"].get(TORCH_FP16)
            cells = []
            for key, bound in CHECK_BOUNDS.items():
                error = e["check"].get(key, "?")
                if isinstance(error, str):
                    cells.append(error)
                    continue
                allowed = max(bound, 2 * torch_half) if key.endswith("fp16") and torch_half is not None else bound
                cells.append(f"{error:.1e}" + ("" if error <= allowed else " (over)"))
            cells.append("?" if torch_half is None or isinstance(torch_half, str) else f"{torch_half:.1e}")
            lines.append(f"| {e['model']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fovea", required=True, help="the fovea binary")
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default=",".join(c[1] for c in CASES))
    parser.add_argument("--seconds", type=float, default=1.0, help="warm-up and timed loop, at least")
    parser.add_argument("--timeout", type=int, default=240, help="seconds per fovea command")
    parser.add_argument("--check", action="store_true", help="compare each model's outputs with PyTorch's")
    parser.add_argument("--skip-speed", action="store_true", help="leave the timed runs out")
    parser.add_argument("--compile", default="vgg16,wide_resnet50_2,vit_b_16",
                        help="models also timed through torch.compile ('' for none)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    wanted = [m for m in args.models.split(",") if m]
    results = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "seconds": args.seconds,
               "models": []}
    for family, name, batch, side in [c for c in CASES if c[1] in wanted]:
        print(f"== {name}", flush=True)
        try:
            entry = measure(args, family, name, batch, side)
        except Exception as e:  # noqa: BLE001 - one model's failure must not stop the others
            entry = {"family": family, "model": name, "batch": batch, "side": side,
                     "error": f"{type(e).__name__}: {str(e)[:300]}"}
        print(json.dumps(entry), flush=True)
        results["models"].append(entry)
        with open(os.path.join(args.out, "family.json"), "w") as f:
            json.dump(results, f, indent=2)
        with open(os.path.join(args.out, "family.md"), "w") as f:
            f.write(markdown(results))
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
