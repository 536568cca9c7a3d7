#!/usr/bin/env python3
"""torchvision's whole detectors, data-dependent postprocess included, against onnxruntime (issue 22):

  detector_exports.py --fovea BUILD/apps/fovea/fovea --out DIR [--models a,b] [--repeat N]
                      [--devices cpu,cuda]

Each model is torchvision's own object (GeneralizedRCNNTransform's resize and normalization, the
anchors, the RPN's top-k and NMS, RoIAlign, the box/mask/keypoint heads, the per-class NMS and the
score threshold all inside the graph), seeded weights, exported by torch.onnx's TorchScript exporter
(opset 17) for one image [3, H, W] in [0, 1]. These are the graphs whose shapes depend on the data
(NonZero, NonMaxSuppression, TopK with a run-time k, Reshape/Expand/Range on run-time values).

Seeded score layers give every box nearly the same score, and a ranking of near-ties reflects float
rounding, not the model: the score layers are re-drawn wider (SCORE_STD) so that scores spread, the
R-CNNs get three classes (so softmax scores clear the 0.05 threshold) and RetinaNet/FCOS a lower
score threshold. The input is a seeded image of smooth blobs (not noise), 480x640.

Per model: onnxruntime (CPU) runs the file as the reference; `fovea model run` on each device
(float32) runs it too, and the detections are matched as COCOeval matches them
(detection_metrics.greedy_match: same class, IoU >= 0.9, here also |score difference| <= 1e-3):
parity = matched / max(len(reference), len(fovea)); PyTorch's own detections (CPU, float32) against
onnxruntime's are the floor beside it (near-equal scores and IoUs near the NMS threshold flip with
float rounding whoever computes them). Masks of matched Mask R-CNN detections are
compared as max|d|; keypoints as max|d| in pixels. Times: PyTorch eager on the GPU (float32, one
image), onnxruntime CPU, and fovea's median of --repeat runs on each device.
Results: DIR/detectors.json and DIR/detectors.md. A model that fails to export or run is recorded
with its error; the others go on.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from detection_metrics import greedy_match  # noqa: E402

SCORE_STD = 0.2
HEIGHT, WIDTH = 480, 640

# name: (constructor kwargs, output names in the order the model's result dict holds them)
RCNN_OUTPUTS = ["boxes", "labels", "scores"]
ONE_STAGE_OUTPUTS = ["boxes", "scores", "labels"]
MODELS = {
    "retinanet_resnet50_fpn": ({"score_thresh": 0.02}, ONE_STAGE_OUTPUTS),
    "fcos_resnet50_fpn": ({"score_thresh": 0.02}, ONE_STAGE_OUTPUTS),
    "fasterrcnn_resnet50_fpn": ({"num_classes": 3}, RCNN_OUTPUTS),
    "fasterrcnn_mobilenet_v3_large_320_fpn": ({"num_classes": 3}, RCNN_OUTPUTS),
    "maskrcnn_resnet50_fpn": ({"num_classes": 3}, RCNN_OUTPUTS + ["masks"]),
    "keypointrcnn_resnet50_fpn": ({"num_classes": 2}, RCNN_OUTPUTS + ["keypoints", "keypoints_scores"]),
    "ssdlite320_mobilenet_v3_large": ({"num_classes": 3}, ONE_STAGE_OUTPUTS),
}


def spread_scores_(model):
    """Re-draws the layers that produce class scores wider, so that scores are not near-ties."""
    names = ("cls_logits", "cls_score", "box_predictor.cls_score", "rpn.head.cls_logits")
    for name, module in model.named_modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)) and name.endswith(names):
            torch.nn.init.normal_(module.weight, std=SCORE_STD)


def build(name):
    torch.manual_seed(0)
    kwargs, outputs = MODELS[name]
    model = torchvision.models.get_model(name, weights=None, weights_backbone=None, **kwargs)
    spread_scores_(model)
    return model.eval(), outputs


def test_image():
    """Smooth seeded blobs in [0, 1], [3, H, W] float32."""
    rng = np.random.default_rng(7)
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float32)
    image = np.full((3, HEIGHT, WIDTH), 0.3, np.float32)
    for _ in range(24):
        cy, cx = rng.uniform(0, HEIGHT), rng.uniform(0, WIDTH)
        ry, rx = rng.uniform(15, 90), rng.uniform(15, 90)
        blob = np.exp(-(((ys - cy) / ry) ** 2 + ((xs - cx) / rx) ** 2))
        image += blob[None] * rng.uniform(-0.6, 0.6, size=(3, 1, 1)).astype(np.float32)
    return np.clip(image, 0, 1).astype(np.float32)


def export(model, outputs, x, path):
    if os.path.exists(path):
        return
    axes = {"images": {1: "height", 2: "width"}}
    for out in outputs:
        axes[out] = {0: "detections"}
    torch.onnx.export(model, ([torch.from_numpy(x)],), path, dynamo=False, input_names=["images"],
                      output_names=outputs, opset_version=17, do_constant_folding=True, dynamic_axes=axes)


def timed(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return float(np.median(times))


def torch_gpu_ms(model, x, repeat):
    net = model.cuda()
    image = [torch.from_numpy(x).cuda()]

    def once():
        with torch.inference_mode():
            net(image)
        torch.cuda.synchronize()

    ms = timed(once, repeat)
    model.cpu()
    return ms


def detections(outs):
    boxes, labels, scores = outs["boxes"], outs["labels"], outs["scores"]
    return [{"box": [float(v) for v in boxes[i]], "class_id": int(labels[i]), "score": float(scores[i])}
            for i in range(len(scores))]


def parity(ref, got, extra_outputs):
    """Matched share and, over matched pairs, the largest score difference and extra-output error."""
    ref_dets, got_dets = detections(ref), detections(got)
    matches = greedy_match(got_dets, ref_dets, 0.9)
    matches = {d: r for d, r in matches.items() if abs(got_dets[d]["score"] - ref_dets[r]["score"]) <= 1e-3}
    result = {"reference": len(ref_dets), "got": len(got_dets), "matched": len(matches),
              "parity": len(matches) / max(len(ref_dets), len(got_dets)) if ref_dets or got_dets else 1.0}
    for out in extra_outputs:
        diffs = [float(np.max(np.abs(got[out][d].astype(np.float64) - ref[out][r]))) for d, r in matches.items()]
        result[f"{out}_max_abs"] = max(diffs) if diffs else 0.0
    return result


def run_fovea(args, path, x_path, device, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    cmd = [args.fovea, "model", "run", path, "--device", device, "--input", f"images={x_path}",
           "--output-dir", out_dir, "--repeat", str(args.repeat)]
    log_path = os.path.join(out_dir, "run.log")
    with open(log_path, "w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=args.timeout).returncode
    with open(log_path) as f:
        text = f.read()
    return rc, text


def median_ms(log_text):
    """`fovea model run --repeat`'s median, from its line '... ran in X ms (median of N runs ...'."""
    match = re.search(r"ran in ([0-9.]+) ms \(median", log_text)
    return float(match.group(1)) if match else None


def measure(args, name):
    import onnxruntime as ort

    model, outputs = build(name)
    x = test_image()
    model_dir = os.path.join(args.out, name)
    os.makedirs(model_dir, exist_ok=True)
    path = os.path.join(args.models_dir, f"{name}.onnx")
    x_path = os.path.join(model_dir, "images.npy")
    np.save(x_path, x)
    entry = {}
    try:
        export(model, outputs, x, path)
    except Exception as error:  # noqa: BLE001: any exporter failure is this model's result
        return {"error": f"export: {error}"[:400]}
    entry["torch_gpu_ms"] = torch_gpu_ms(model, x, args.repeat)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ref_list = session.run(outputs, {"images": x})
    entry["onnxruntime_cpu_ms"] = timed(lambda: session.run(outputs, {"images": x}), args.repeat)
    ref = dict(zip(outputs, ref_list))
    with torch.inference_mode():
        torch_out = model([torch.from_numpy(x)])[0]
    entry["onnxruntime_detections"] = int(len(ref["scores"]))
    # The floor: PyTorch itself (CPU, float32) against onnxruntime on the same file's model.
    torch_np = {o: torch_out[o].numpy() for o in outputs if o in torch_out}
    entry["torch"] = parity(ref, torch_np, [o for o in outputs[3:] if o in torch_np])
    for device in args.devices.split(","):
        out_dir = os.path.join(model_dir, device)
        rc, log = run_fovea(args, path, x_path, device, out_dir)
        result = {"rc": rc, "median_ms": median_ms(log)}
        if rc == 0:
            got = {o: np.load(os.path.join(out_dir, f"{o}.npy")) for o in outputs}
            result.update(parity(ref, got, outputs[3:]))
        else:
            result["error"] = [line for line in log.splitlines() if line.strip()][-3:]
        entry[device] = result
    return entry


def markdown(results, devices):
    head = "| model | detections (onnxruntime) | PyTorch CPU: parity | PyTorch GPU ms | onnxruntime CPU ms |"
    rule = "|---|---:|---:|---:|---:|"
    for device in devices:
        head += f" fovea {device}: parity, ms |"
        rule += "---|"
    lines = [head, rule]
    for name, entry in results.items():
        if "error" in entry:
            lines.append(f"| {name} | {entry['error']} |")
            continue
        floor = entry["torch"]
        row = (f"| {name} | {entry['onnxruntime_detections']} | {floor['matched']}/"
               f"{max(floor['reference'], floor['got'])} ({floor['parity']:.1%}) | {entry['torch_gpu_ms']:.1f} | "
               f"{entry['onnxruntime_cpu_ms']:.1f} |")
        for device in devices:
            r = entry[device]
            if r["rc"] != 0:
                row += f" failed: {' / '.join(r['error'])[:200]} |"
                continue
            extra = "".join(f", {k} {v:.1e}" for k, v in r.items() if k.endswith("_max_abs"))
            ms = f"{r['median_ms']:.1f}" if r["median_ms"] is not None else "?"
            row += f" {r['matched']}/{max(r['reference'], r['got'])} ({r['parity']:.1%}){extra}, {ms} |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fovea", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--models-dir", help="where the .onnx files go (default: OUT)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--devices", default="cpu,cuda")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=int, default=300)
    args = parser.parse_args()
    args.models_dir = args.models_dir or args.out
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.models_dir, exist_ok=True)
    results = {}
    for name in args.models.split(","):
        start = time.perf_counter()
        try:
            results[name] = measure(args, name)
        except Exception as error:  # noqa: BLE001: one model's failure is its row
            results[name] = {"error": str(error)[:400]}
        results[name]["seconds"] = round(time.perf_counter() - start, 1)
        print(name, json.dumps(results[name]), flush=True)
        with open(os.path.join(args.out, "detectors.json"), "w") as f:
            json.dump(results, f, indent=1)
    with open(os.path.join(args.out, "detectors.md"), "w") as f:
        f.write(markdown(results, args.devices.split(",")))


if __name__ == "__main__":
    main()
