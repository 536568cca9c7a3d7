#!/usr/bin/env python3
"""fovea's CUDA executor against PyTorch on the GPU, side by side in one call: correctness of every
model at fp32 and fp16, and the issue's throughput and latency comparisons.

  compare_torch.py --fovea BUILD/apps/fovea/fovea --out DIR [--models a,b] [--skip-perf] [--trained]

Models come from export_torchvision.py's build() with the same seeded weights, BatchNorm statistics
calibrated on a seeded batch (calibrate_batchnorm_), exported here with dynamic batch and spatial
dims (opset 17) so one file serves every shape.

Correctness (every model): one seeded input; PyTorch float32 on the GPU with TF32 off is the
reference; `fovea model run --device cuda` at fp32 and fp16 is compared by max|d| / max|ref| (1e-3
and 2e-2 are the issue's bounds) and, for segmentation, by the share of pixels whose argmax class
agrees (at least 99.5% at fp16).

--trained: the correctness models are first trained on train_synthetic.py's task (pretrained weights
cannot be downloaded there) and fed one of its images: trained networks' class scores are far apart,
which the float16 argmax criterion presumes. The performance runs keep the seeded weights.

Performance: PyTorch 2.x eager, FP16, channels-last, cudnn.benchmark on, inference_mode, timed
with CUDA events after warm-up; fovea through `fovea model bench --precision fp16 --json`.
Results: DIR/results.json and DIR/results.md (the tables for docs/perf.md).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_torchvision as tv_export  # noqa: E402
import train_synthetic  # noqa: E402

# (model, batch, height, width, what the issue asks: a throughput ratio or a latency ratio)
PERF_CASES = [
    ("fcn_resnet101", 4, 544, 960, {"throughput_ratio": 1.3}),
    ("resnet50", 256, 224, 224, {"throughput_ratio": 1.2}),
    ("ssd300_vgg16", 16, 300, 300, {"throughput_ratio": 1.3}),
    ("fcn_resnet101", 1, 224, 224, {"latency_ratio": 2.5}),
    ("resnet50", 1, 224, 224, {"latency_ratio": 2.5}),
]


def calibrate_batchnorm_(model, shape):
    """Sets every BatchNorm's running statistics to those of its actual inputs on a seeded batch of
    4 inputs of `shape` ([N, C, H, W]; N is not used).

    randomize_batchnorm_ alone leaves statistics unrelated to the activations, which then grow
    layer after layer: FCN-ResNet101's reach 8e5 in float32, beyond float16's 65504, and PyTorch's
    own float16 run returns NaN as fovea's does. A trained network's statistics match its
    activations; one pass in training mode with cumulative averaging gives that here.
    """
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    x = torch.randn(4, *shape[1:], generator=torch.Generator().manual_seed(tv_export.BATCHNORM_SEED))
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        model(x)
    model.eval()


def build(name):
    """export_torchvision's seeded model, with BatchNorm statistics calibrated (see above)."""
    model, output_names = tv_export.build(name)
    tv_export.randomize_batchnorm_(model)
    calibrate_batchnorm_(model, tv_export.INPUT_SHAPES[name])
    return model, output_names


def export_dynamic(name, path, built=None):
    """Exports `built` (model, output names), by default build(name), unless `path` exists."""
    model, output_names = built if built is not None else build(name)
    if not os.path.exists(path):
        x = torch.randn(1, *tv_export.INPUT_SHAPES[name][1:])
        axes = {"input": {0: "batch", 2: "height", 3: "width"}}
        for out in output_names:
            axes[out] = {0: "batch"}
        torch.onnx.export(model, (x,), path, dynamo=False, input_names=["input"], output_names=output_names,
                          opset_version=17, do_constant_folding=True, dynamic_axes=axes)
    return model, output_names


def rel_error(ref, got):
    ref = ref.astype(np.float64)
    got = got.astype(np.float64)
    scale = np.max(np.abs(ref))
    return float(np.max(np.abs(got - ref)) / scale) if scale > 0 else float(np.max(np.abs(got - ref)))


def run(cmd, log_path, timeout):
    start = time.perf_counter()
    with open(log_path, "w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode
    return rc, time.perf_counter() - start


def npy_name(value_name):
    return "".join(c if c.isalnum() or c in "_-." else "_" for c in value_name) + ".npy"


def correctness(args, name, model, output_names, onnx_path, out_dir):
    shape = tv_export.INPUT_SHAPES[name]
    if args.trained:
        x = train_synthetic.test_input(name)
    else:
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(tv_export.INPUT_SEED))
    x_path = os.path.join(out_dir, "input.npy")
    np.save(x_path, x.numpy())
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.inference_mode():
        outs = model.float().cuda()(x.cuda())
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    refs = [o.float().cpu().numpy() for o in outs]
    result = {"input_shape": list(shape)}
    # What float16 itself costs: PyTorch's own fp16 channels-last run against the same reference.
    with torch.inference_mode():
        half = model.half().to(memory_format=torch.channels_last)(x.cuda().half().to(memory_format=torch.channels_last))
    model.float()
    if isinstance(half, torch.Tensor):
        half = (half,)
    torch_fp16 = {"max_rel_error": max(rel_error(r, h.float().cpu().numpy()) for r, h in zip(refs, half))}
    if name in tv_export.SEGMENTATION:
        torch_fp16["argmax_agreement"] = float(np.mean(np.argmax(half[0].float().cpu().numpy(), axis=1) ==
                                                        np.argmax(refs[0], axis=1)))
    result["torch_fp16"] = torch_fp16
    for precision in ("fp32", "fp16"):
        run_dir = os.path.join(out_dir, precision)
        os.makedirs(run_dir, exist_ok=True)
        rc, seconds = run([args.fovea, "model", "run", onnx_path, "--device", "cuda", "--precision", precision,
                           "--input", f"input={x_path}", "--output-dir", run_dir],
                          os.path.join(run_dir, "run.log"), args.timeout)
        entry = {"rc": rc, "seconds": round(seconds, 1)}
        if rc == 0:
            errors, agreement = [], None
            for oname, ref in zip(output_names, refs):
                got = np.load(os.path.join(run_dir, npy_name(oname)))
                errors.append(rel_error(ref, got) if got.shape == ref.shape else float("inf"))
                if name in tv_export.SEGMENTATION and got.shape == ref.shape:
                    agreement = float(np.mean(np.argmax(got, axis=1) == np.argmax(ref, axis=1)))
            entry["max_rel_error"] = max(errors)
            if agreement is not None:
                entry["argmax_agreement"] = agreement
        else:
            with open(os.path.join(run_dir, "run.log")) as f:
                entry["error"] = f.read().strip().splitlines()[-1:] or ["?"]
        result[precision] = entry
    return result


def torch_perf(model, batch, h, w, iterations, min_seconds=0.0, compile=False):
    """PyTorch's p50 latency (one run at a time) and items/s (back to back) at `batch`.

    As `fovea model bench --seconds`: the warm-up and the back-to-back loop each last at least
    `min_seconds`, so that a GPU at its power limit is timed in the state a long run sees. With
    `compile`, the model goes through torch.compile (inductor, default mode) first; the first call,
    which compiles, is timed apart as compile_s."""
    torch.backends.cudnn.benchmark = True
    net = model.half().cuda().to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, h, w, device="cuda").half().to(memory_format=torch.channels_last)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    extra = {}
    with torch.inference_mode():
        if compile:
            net = torch.compile(net)
            start = time.perf_counter()
            net(x)
            torch.cuda.synchronize()
            extra["compile_s"] = time.perf_counter() - start
        start = time.perf_counter()
        while True:
            for _ in range(10):
                net(x)
            torch.cuda.synchronize()
            if time.perf_counter() - start >= min_seconds:
                break
        latencies = []
        for _ in range(min(iterations, 50)):
            begin.record()
            net(x)
            end.record()
            end.synchronize()
            latencies.append(begin.elapsed_time(end))
        p50 = float(np.median(latencies))
        runs = max(iterations, math.ceil(min_seconds * 1000 / p50)) if p50 > 0 else iterations
        begin.record()
        for _ in range(runs):
            net(x)
        end.record()
        end.synchronize()
        total_ms = begin.elapsed_time(end)
    return {"items_per_second": batch * runs / (total_ms / 1000), "latency_p50_ms": p50, **extra}


def fovea_perf(args, onnx_path, batch, h, w, iterations, log_path):
    cmd = [args.fovea, "model", "bench", onnx_path, "--precision", "fp16", "--batch", str(batch),
           "--shape", f"input={batch}x3x{h}x{w}", "--iterations", str(iterations), "--json"]
    with open(log_path, "w") as log:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, timeout=args.timeout, text=True)
        log.write(proc.stdout)
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}, see {log_path}"}
    return json.loads(proc.stdout)[0]


def markdown(results):
    lines = ["| model | fp32 max rel err | fp16 max rel err | fp16 argmax agreement | PyTorch fp16 max rel err | "
             "PyTorch fp16 argmax agreement |", "|---|---|---|---|---|---|"]
    for name, c in results["correctness"].items():
        def cell(p):
            e = c.get(p, {})
            return f"{e['max_rel_error']:.2e}" if "max_rel_error" in e else f"failed: {e.get('error', '?')}"
        agree = c.get("fp16", {}).get("argmax_agreement")
        t = c.get("torch_fp16", {})
        t_err = f"{t['max_rel_error']:.2e}" if "max_rel_error" in t else ""
        t_agree = f"{t['argmax_agreement']:.4%}" if "argmax_agreement" in t else ""
        lines.append(f"| {name} | {cell('fp32')} | {cell('fp16')} | {'' if agree is None else f'{agree:.4%}'} | "
                     f"{t_err} | {t_agree} |")
    lines += ["", "| model | batch | input | PyTorch eager fp16 | fovea fp16 | ratio | target |", "|---|---|---|---|---|---|---|"]
    for p in results["performance"]:
        t, f = p["torch"], p["fovea"]
        if "latency_ratio" in p["target"]:
            ratio = t["latency_p50_ms"] / f["latency_p50_ms"] if "latency_p50_ms" in f else float("nan")
            lines.append(f"| {p['model']} | {p['batch']} | {p['h']}x{p['w']} | {t['latency_p50_ms']:.3f} ms | "
                         f"{f.get('latency_p50_ms', float('nan')):.3f} ms | {ratio:.2f}x faster | "
                         f">= {p['target']['latency_ratio']}x |")
        else:
            ratio = f["items_per_second"] / t["items_per_second"] if "items_per_second" in f else float("nan")
            lines.append(f"| {p['model']} | {p['batch']} | {p['h']}x{p['w']} | {t['items_per_second']:.0f} img/s | "
                         f"{f.get('items_per_second', float('nan')):.0f} img/s | {ratio:.2f}x | "
                         f">= {p['target']['throughput_ratio']}x |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fovea", required=True, help="the fovea binary")
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default=",".join(tv_export.ALL_MODELS), help="correctness models")
    parser.add_argument("--skip-perf", action="store_true")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--timeout", type=int, default=300, help="seconds per fovea command")
    parser.add_argument("--trained", action="store_true",
                        help="correctness on networks trained on train_synthetic.py's task")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
               "weights": "trained on train_synthetic.py's task" if args.trained else "seeded random",
               "correctness": {},
               "performance": []}
    models = {}
    for name in [m for m in args.models.split(",") if m]:
        print(f"== {name}", flush=True)
        out_dir = os.path.join(args.out, name)
        os.makedirs(out_dir, exist_ok=True)
        onnx_path = os.path.join(args.out, f"{name}_trained.onnx" if args.trained else f"{name}.onnx")
        try:
            built = train_synthetic.trained(name) if args.trained else None
            model, output_names = export_dynamic(name, onnx_path, built)
            if not args.trained:
                models[name] = onnx_path
            results["correctness"][name] = correctness(args, name, model, output_names, onnx_path, out_dir)
        except Exception as e:  # noqa: BLE001 - one model's failure must not stop the others
            results["correctness"][name] = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(results["correctness"][name]), flush=True)
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(results, f, indent=2)
    if not args.skip_perf:
        for name, batch, h, w, target in PERF_CASES:
            print(f"== perf {name} batch {batch} {h}x{w}", flush=True)
            model, _ = build(name)
            if name not in models:
                models[name] = os.path.join(args.out, f"{name}.onnx")
                export_dynamic(name, models[name])
            onnx_path = models[name]
            iterations = max(10, args.iterations // max(1, batch // 16))
            entry = {"model": name, "batch": batch, "h": h, "w": w, "target": target,
                     "torch": torch_perf(model, batch, h, w, iterations)}
            torch.cuda.empty_cache()
            entry["fovea"] = fovea_perf(args, onnx_path, batch, h, w, iterations,
                                        os.path.join(args.out, f"bench_{name}_{batch}_{h}x{w}.log"))
            print(json.dumps(entry), flush=True)
            results["performance"].append(entry)
            with open(os.path.join(args.out, "results.json"), "w") as f:
                json.dump(results, f, indent=2)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(markdown(results))
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
