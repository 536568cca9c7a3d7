#!/usr/bin/env python3
"""INT8 against float32 on trained networks (issue 23's accuracy table), on the GPU machine:

  int8_accuracy.py --fovea BUILD/apps/fovea/fovea --out DIR [--models a,b] [--methods entropy,...]
                   [--samples 500] [--eval 500] [--device cuda] [--int8-args=--fp16-residuals]
                   [--calib-args="--min-sqnr 30"]

Per model (classifiers resnet18, resnet50, mobilenet_v3_large; segmentation fcn_resnet50,
fcn_resnet101, deeplabv3_resnet50; detectors ssd300_vgg16, ssdlite320_mobilenet_v3_large and the
DetectNet-style detectnet_resnet34):
  1. train_synthetic.trained(name): 300 steps on the synthetic task (pretrained weights cannot be
     downloaded there; the SSDs with torchvision's own loss), exported with a dynamic batch
     (compare_torch.export_dynamic; the SSDs as export_torchvision's SSDBackboneHead, outputs
     bbox_regression [N, anchors, 4] and cls_logits [N, anchors, 91]);
  2. --samples calibration pictures of the task (train_synthetic.synthetic_batch, CALIB_SEED)
     written as PNG, and --eval other pictures (EVAL_SEED) as the network's input, normalized as
     the model expects from the same 8-bit pixels the PNGs hold: ImageNet's, or for the SSDs their
     transform's (image_mean, image_std: SSD300 (x - [0.48235, 0.45882, 0.40784]) * 255, SSDLite
     (x - 0.5) / 0.5), read from the torchvision SSD object; the detectors keep the pictures'
     ground truth (every shape's box in pixels and its kind 1..20, the labels they were trained on);
  3. `fovea model calibrate M --images CALIB --method X --normalize imagenet --size WxH` for each
     method (entropy, percentile, minmax), on --device; the SSDs with --mean M M M --std S S S,
     their transform's values, instead of --normalize imagenet;
  4. `fovea model run` over the evaluation pictures in chunks of CHUNK, at fp32 and at int8 with
     each method's cache;
  5. classifiers: the share of pictures whose int8 top-1 class is the fp32 one (target >= 99%);
     segmentation: the share of pixels whose int8 argmax is the fp32 one (target >= 99%);
     detectors: both outputs decoded as SSD.forward decodes them (the SSD's own anchors, box coder,
     score threshold, per-class top-k candidates, NMS and detections per image:
     SSD.postprocess_detections), then COCO mAP@0.5:0.95 against the ground truth
     (detection_metrics.mean_average_precision); target: int8 within MAP_TOLERANCE (1 point) of
     fovea fp32's. PyTorch's own fp32 mAP (SSD.forward on the same pictures, TF32 off) is recorded
     beside it: fovea fp32 should be within about 0.1 point of it, which checks the decoding.
     The DetectNet-style detector (trained with a class per kind on DETECTNET_SIDE pictures, pixels
     / 255 in: `--normalize none`) is decoded as DeepStream's DetectNet_v2 parser decodes it
     (grid_detections), fovea's outputs and PyTorch's alike.
Classifiers run at 224x224, the segmentation networks at 256x256, the sizes they were trained at;
the SSDs at their fixed input size (300x300, 320x320), so their transform's resize is the identity.
Results: DIR/int8.json and DIR/int8.md; a model that fails is recorded and the others go on.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torchvision
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import detection_metrics  # noqa: E402
import export_torchvision as tv_export  # noqa: E402
import train_synthetic  # noqa: E402
from compare_detections import anchors_for  # noqa: E402
from compare_torch import export_dynamic, npy_name, run  # noqa: E402

CLASSIFIERS = ["resnet18", "resnet50", "mobilenet_v3_large"]
SEGMENTERS = ["fcn_resnet50", "fcn_resnet101", "deeplabv3_resnet50"]
DETECTORS = ["ssd300_vgg16", "ssdlite320_mobilenet_v3_large"]
GRID_DETECTORS = ["detectnet_resnet34"]
ALL_DETECTORS = DETECTORS + GRID_DETECTORS
SIDE = {**{m: 224 for m in CLASSIFIERS}, **{m: 256 for m in SEGMENTERS},
        **{m: tv_export.INPUT_SHAPES[m][2] for m in DETECTORS},
        **{m: train_synthetic.DETECTNET_SIDE for m in GRID_DETECTORS}}
METHODS = ["entropy", "percentile", "minmax"]
TARGET = 0.99
MAP_TOLERANCE = 0.01  # detectors: int8 mAP at most 1 point below fovea fp32's
# The grid detector's decoding for the mAP: candidates down to a low coverage, so that the
# precision-recall curve is whole (the flows' default threshold is 0.4), NMS per class, the best 100.
GRID_SCORE_THRESH = 0.05
GRID_NMS_IOU = 0.5
GRID_DETECTIONS = 100
CALIB_SEED = 11
EVAL_SEED = 12
CHUNK = 50  # evaluation pictures per `fovea model run`


def pictures_and_truth(count, side, seed):
    """`count` synthetic pictures [count, 3, side, side] in [0, 1], rounded to 8 bits, and per
    picture its shapes as detection_metrics' ground truth: {"box": [x1, y1, x2, y2] in pixels,
    "class_id": kind 1..20}, the labels train_detector gives the SSD (0 is its background)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    chunks, truth = [], []
    for first in range(0, count, CHUNK):
        images, _, boxes, kinds = train_synthetic.synthetic_batch(min(CHUNK, count - first), side, side, g, "cpu")
        chunks.append(torch.round(images * 255) / 255)
        truth += [[{"box": box, "class_id": kind} for box, kind in zip(b.tolist(), k.tolist())]
                  for b, k in zip(boxes, kinds)]
    return torch.cat(chunks), truth


def pictures(count, side, seed):
    return pictures_and_truth(count, side, seed)[0]


def write_pngs(images, folder):
    os.makedirs(folder, exist_ok=True)
    for i, image in enumerate(images):
        pixels = (image * 255).round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).numpy()
        Image.fromarray(pixels).save(os.path.join(folder, f"calib_{i:04d}.png"))


def write_chunks(inputs, work):
    """The network input [N, 3, H, W] as .npy files of CHUNK pictures each; their paths."""
    chunks = []
    for first in range(0, len(inputs), CHUNK):
        chunks.append(os.path.join(work, f"eval_{first // CHUNK}.npy"))
        np.save(chunks[-1], inputs[first:first + CHUNK])
    return chunks


def last_line(path):
    with open(path) as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "?"


def fovea_outputs(args, onnx_path, output_names, chunks, work, extra):
    """{name: the model's output over every chunk of the evaluation input, concatenated} for each of
    `output_names` (one run per chunk writes them all)."""
    outs = {name: [] for name in output_names}
    for i, chunk_path in enumerate(chunks):
        run_dir = os.path.join(work, f"chunk{i}")
        os.makedirs(run_dir, exist_ok=True)
        log = os.path.join(run_dir, "run.log")
        rc, _ = run([args.fovea, "model", "run", onnx_path, "--device", args.device, "--input",
                     f"input={chunk_path}", "--output-dir", run_dir] + extra, log, args.timeout)
        if rc != 0:
            raise RuntimeError(f"fovea model run {' '.join(extra)}: exit {rc}: {last_line(log)}")
        for name in output_names:
            outs[name].append(np.load(os.path.join(run_dir, npy_name(name))))
    return {name: np.concatenate(parts) for name, parts in outs.items()}


def agreement(reference, got):
    """Top-1 (classifiers, logits [N, C]) or per-pixel argmax (segmentation, [N, C, H, W]) agreement."""
    return float(np.mean(np.argmax(got, axis=1) == np.argmax(reference, axis=1)))


# --- detectors -----------------------------------------------------------------------------------


def whole_ssd(name, model):
    """The torchvision SSD around trained()'s SSDBackboneHead (eval, CPU). The wrapper keeps only the
    backbone and head; the rest of the SSD (transform, anchor generator, box coder, postprocess
    settings) has no weights, so a freshly built SSD of the same name, given the trained backbone
    and head, is the trained SSD."""
    ssd = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None)
    ssd.backbone, ssd.head = model.backbone, model.head
    return ssd.eval()


def network_input(name, images, ssd):
    """Pictures in [0, 1] as the network's input: the SSD's transform's normalization (exactly
    GeneralizedRCNNTransform.normalize) for an SSD, the pictures as they are for the grid detector
    (pixels / 255), ImageNet's otherwise."""
    if ssd is not None:
        return torch.stack([ssd.transform.normalize(image) for image in images])
    if name in GRID_DETECTORS:
        return images
    return train_synthetic.normalized(images)


def calibrate_normalization(name, ssd):
    """`fovea model calibrate`'s normalization flags, the same as network_input's: --mean/--std are
    on the 0..1 scale, (pixel / 255 - mean) / std, as the SSD's transform's image_mean/image_std."""
    if name in GRID_DETECTORS:
        return ["--normalize", "none"]
    if ssd is None:
        return ["--normalize", "imagenet"]
    t = ssd.transform
    return (["--mean"] + [repr(float(v)) for v in t.image_mean] +
            ["--std"] + [repr(float(v)) for v in t.image_std])


def as_frame(d):
    """One picture's torchvision detections {"boxes", "labels", "scores"} in detection_metrics' form."""
    return [{"box": b, "class_id": c, "score": s}
            for b, c, s in zip(d["boxes"].cpu().tolist(), d["labels"].cpu().tolist(), d["scores"].cpu().tolist())]


def ssd_detections(ssd, anchors, side, outs):
    """Per picture, the detections of fovea's head outputs {bbox_regression [N, A, 4], cls_logits
    [N, A, classes]}: SSD.postprocess_detections (softmax, background 0 left out, box decoding with
    the SSD's box coder against its anchors, clipping, score threshold, top-k per class, NMS,
    detections per image), as SSD.forward runs it. The pictures are the network's size, so
    transform.postprocess (a rescale to the original size) would multiply by 1 and is left out."""
    frames = []
    with torch.inference_mode():
        for first in range(0, len(outs["cls_logits"]), CHUNK):
            heads = {name: torch.from_numpy(outs[name][first:first + CHUNK]).float()
                     for name in ("bbox_regression", "cls_logits")}
            n = heads["cls_logits"].shape[0]
            frames += [as_frame(d) for d in ssd.postprocess_detections(heads, [anchors] * n, [(side, side)] * n)]
    return frames


def detection_map(frames, truths):
    result = detection_metrics.mean_average_precision(dict(enumerate(frames)), truths)
    return {"map": result["map"], "ap50": result["ap50"], "detections": sum(len(f) for f in frames)}


def torch_detections(args, ssd, images):
    """PyTorch's own detections of the SSD on the pictures ([0, 1]): SSD.forward, its transform's
    normalization and (identity) resize, anchors and postprocess included, in float32 with TF32
    off (trained() turns it on for training); independent of ssd_detections, so it checks it."""
    device = "cuda" if args.device == "cuda" and torch.cuda.is_available() else "cpu"
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    frames = []
    ssd.to(device)
    try:
        with torch.inference_mode():
            for first in range(0, len(images), CHUNK):
                frames += [as_frame(d) for d in ssd(list(images[first:first + CHUNK].to(device)))]
    finally:
        ssd.cpu()
        if device == "cuda":
            torch.cuda.empty_cache()  # the GPU memory goes back to the fovea runs
    return frames


def grid_detections(outs, side):
    """Per picture, the grid detector's detections from its outputs {output_cov [N, C, G, G] (through
    their sigmoid), output_bbox [N, 4C, G, G]}: each (class, cell) a box as DeepStream's DetectNet_v2
    parser and fovea's `detectnet` parser decode it (train_synthetic.detectnet_targets' inverse:
    x1 = (o1 - cx) * -norm, y1 = (o2 - cy) * -norm, x2 = (o3 + cx) * norm, y2 = (o4 + cy) * norm,
    cx = (gx * stride + offset) / norm), scored by its coverage; those above GRID_SCORE_THRESH,
    clipped to the picture, NMS per class, the best GRID_DETECTIONS; class_id = class + 1, the kind."""
    norm, offset = train_synthetic.DETECTNET_NORM, train_synthetic.DETECTNET_OFFSET
    coverage = torch.from_numpy(outs["output_cov"]).float()
    n, classes, grid_h, grid_w = coverage.shape
    offsets = torch.from_numpy(outs["output_bbox"]).float().view(n, classes, 4, grid_h, grid_w)
    stride_y, stride_x = -(-side // grid_h), -(-side // grid_w)  # DeepStream's DIVIDE_AND_ROUND_UP
    cx = (torch.arange(grid_w).float().view(1, -1) * stride_x + offset) / norm
    cy = (torch.arange(grid_h).float().view(-1, 1) * stride_y + offset) / norm
    frames = []
    for i in range(n):
        o = offsets[i]
        corners = torch.stack([(o[:, 0] - cx) * -norm, (o[:, 1] - cy) * -norm,
                               (o[:, 2] + cx) * norm, (o[:, 3] + cy) * norm], dim=-1)  # [C, gh, gw, 4]
        kept = coverage[i] > GRID_SCORE_THRESH
        boxes = corners[kept].clamp(0, side)
        scores = coverage[i][kept]
        labels = torch.nonzero(kept)[:, 0]
        chosen = torchvision.ops.batched_nms(boxes, scores, labels, GRID_NMS_IOU)[:GRID_DETECTIONS]
        frames.append([{"box": boxes[j].tolist(), "class_id": int(labels[j]) + 1, "score": float(scores[j])}
                       for j in chosen.tolist()])
    return frames


def torch_grid_outputs(args, model, images):
    """PyTorch's own outputs of the grid detector on the pictures, float32 with TF32 off."""
    device = "cuda" if args.device == "cuda" and torch.cuda.is_available() else "cpu"
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    outs = {"output_cov": [], "output_bbox": []}
    model.to(device)
    try:
        with torch.inference_mode():
            for first in range(0, len(images), CHUNK):
                coverage, bbox = model(images[first:first + CHUNK].to(device))
                outs["output_cov"].append(coverage.cpu().numpy())
                outs["output_bbox"].append(bbox.cpu().numpy())
    finally:
        model.cpu()
        if device == "cuda":
            torch.cuda.empty_cache()
    return {name: np.concatenate(parts) for name, parts in outs.items()}


def detector_reference(entry, truth, fp32, decode, torch_frames):
    """Records fovea fp32's mAP (its outputs through `decode`) and PyTorch's (`torch_frames()`, the
    model's own detections) in `entry`; returns how to measure an int8 run."""
    truths = dict(enumerate(truth))
    entry["ground_truth_boxes"] = sum(len(t) for t in truth)
    fovea = detection_map(decode(fp32), truths)
    entry.update(fp32_map=fovea["map"], fp32_ap50=fovea["ap50"], fp32_detections=fovea["detections"])
    try:  # a sanity check only: its failure must not cost the int8 results
        pytorch = detection_map(torch_frames(), truths)
        entry.update(torch_fp32_map=pytorch["map"], torch_fp32_ap50=pytorch["ap50"],
                     fp32_minus_torch_points=100 * (fovea["map"] - pytorch["map"]))
    except Exception as e:  # noqa: BLE001
        entry["torch_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    pytorch_text = f", PyTorch {100 * entry['torch_fp32_map']:.2f}" if "torch_fp32_map" in entry else ""
    print(f"  {entry['model']} fp32: mAP {100 * fovea['map']:.2f}{pytorch_text}", flush=True)

    def measure(outs):
        got = detection_map(decode(outs), truths)
        return {**got, "points_below_fp32": 100 * (fovea["map"] - got["map"])}
    return measure


def ssd_reference(args, entry, ssd, images, truth, fp32):
    side = entry["side"]
    anchors = anchors_for(ssd, side, side)
    entry["postprocess"] = {"score_thresh": ssd.score_thresh, "nms_thresh": ssd.nms_thresh,
                            "detections_per_img": ssd.detections_per_img, "topk_candidates": ssd.topk_candidates}
    return detector_reference(entry, truth, fp32, lambda outs: ssd_detections(ssd, anchors, side, outs),
                              lambda: torch_detections(args, ssd, images))


def grid_reference(args, entry, model, images, truth, fp32):
    side = entry["side"]
    entry["postprocess"] = {"score_thresh": GRID_SCORE_THRESH, "nms_thresh": GRID_NMS_IOU,
                            "detections_per_img": GRID_DETECTIONS, "norm": train_synthetic.DETECTNET_NORM,
                            "offset": train_synthetic.DETECTNET_OFFSET}
    return detector_reference(entry, truth, fp32, lambda outs: grid_detections(outs, side),
                              lambda: grid_detections(torch_grid_outputs(args, model, images), side))


# --- every model ---------------------------------------------------------------------------------


def evaluate(args, name):
    side = SIDE[name]
    work = os.path.join(args.out, name)
    os.makedirs(work, exist_ok=True)
    entry = {"model": name, "side": side, "samples": args.samples, "eval": args.eval}
    started = time.perf_counter()
    model, output_names = train_synthetic.trained(name)
    onnx_path = os.path.join(work, f"{name}.onnx")
    if os.path.exists(onnx_path):
        os.remove(onnx_path)  # export_dynamic keeps an existing file; these weights are new
    export_dynamic(name, onnx_path, (model, output_names))
    entry["train_export_s"] = round(time.perf_counter() - started, 1)
    ssd = whole_ssd(name, model) if name in DETECTORS else None
    normalization = calibrate_normalization(name, ssd)
    if ssd is not None:
        entry["normalization"] = {"mean": list(ssd.transform.image_mean), "std": list(ssd.transform.image_std)}

    calib_dir = os.path.join(work, "calib")
    write_pngs(pictures(args.samples, side, CALIB_SEED), calib_dir)
    images, truth = pictures_and_truth(args.eval, side, EVAL_SEED)
    chunks = write_chunks(network_input(name, images, ssd).numpy().astype(np.float32), work)

    fp32 = fovea_outputs(args, onnx_path, output_names, chunks, os.path.join(work, "fp32"), ["--precision", "fp32"])
    if ssd is not None:
        measure = ssd_reference(args, entry, ssd, images, truth, fp32)
    elif name in GRID_DETECTORS:
        measure = grid_reference(args, entry, model, images, truth, fp32)
    else:
        reference = fp32[output_names[0]]

        def measure(outs):
            return {"agreement": agreement(reference, outs[output_names[0]])}
    del fp32  # the SSDs' cls_logits over every picture run to gigabytes
    entry["methods"] = {}
    for method in args.methods.split(","):
        cache = os.path.join(work, f"{name}.{method}.calib")
        log = os.path.join(work, f"calibrate_{method}.log")
        rc, calibrate_s = run([args.fovea, "model", "calibrate", onnx_path, "--images", calib_dir,
                               "--samples", str(args.samples), "--method", method] + normalization +
                              ["--size", f"{side}x{side}", "--device", args.device, "-o", cache] +
                              args.calib_args.split(), log, args.timeout)
        if rc != 0:
            entry["methods"][method] = {"error": f"calibrate: exit {rc}: {last_line(log)}"}
            continue
        try:
            got = fovea_outputs(args, onnx_path, output_names, chunks, os.path.join(work, f"int8_{method}"),
                                ["--precision", "int8", "--calib", cache] + args.int8_args.split())
            entry["methods"][method] = {**measure(got), "calibrate_s": round(calibrate_s, 1)}
        except RuntimeError as e:
            entry["methods"][method] = {"error": str(e)}
            continue
        except Exception as e:  # noqa: BLE001 - one method's failure must not cost the others
            entry["methods"][method] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            continue
        print(f"  {name} {method}: {entry['methods'][method]}", flush=True)
    return entry


def passes(entry, result):
    """A method's result against its target: agreement >= TARGET, or for the detectors an int8 mAP
    at most MAP_TOLERANCE below fovea fp32's."""
    if "error" in result:
        return False
    if entry["model"] in ALL_DETECTORS:
        return result["map"] >= entry["fp32_map"] - MAP_TOLERANCE
    return result["agreement"] >= TARGET


def measure_text(e):
    if e["model"] in CLASSIFIERS:
        return "top-1 agreement"
    if e["model"] in SEGMENTERS:
        return "pixel argmax agreement"
    torch_map = f", PyTorch fp32 {100 * e['torch_fp32_map']:.2f}" if "torch_fp32_map" in e else ""
    return f"mAP@0.5:0.95 (fovea fp32 {100 * e['fp32_map']:.2f}{torch_map})" if "fp32_map" in e else "mAP@0.5:0.95"


def cell(e, m):
    if "error" in m:
        return "failed"
    miss = "" if passes(e, m) else " (miss)"
    if e["model"] in ALL_DETECTORS:
        return f"{100 * m['map']:.2f} (fp32 {100 * e['fp32_map']:.2f})" + miss
    return f"{100 * m['agreement']:.2f}%" + miss


def markdown(results):
    methods = results["methods"]
    lines = [f"GPU: {results['gpu']}; networks trained on train_synthetic.py's task; calibrated on "
             f"{results['samples']} pictures, evaluated on {results['eval']} others; int8 against fp32 "
             f"(fovea both), target >= {TARGET:.0%}; detectors: mAP@0.5:0.95 (in points) against the "
             f"pictures' ground truth, target int8 at most {100 * MAP_TOLERANCE:g} point below fovea fp32."
             + (f" int8 runs with `{results['int8_args']}`." if results.get("int8_args") else "")
             + (f" Calibrated with `{results['calib_args']}`." if results.get("calib_args") else ""), "",
             "| model | measure | " + " | ".join(methods) + " |", "|---|---|" + "---:|" * len(methods)]
    for e in results["models"]:
        if "error" in e:
            lines.append(f"| {e['model']} | {measure_text(e)} | failed: {e['error']} |")
            continue
        cells = [cell(e, e["methods"].get(method, {"error": "not run"})) for method in methods]
        lines.append(f"| {e['model']} ({e['side']}x{e['side']}) | {measure_text(e)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fovea", required=True, help="the fovea binary")
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default=",".join(CLASSIFIERS + SEGMENTERS + ALL_DETECTORS))
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
               "int8_args": args.int8_args, "calib_args": args.calib_args,
               "targets": {"agreement": TARGET, "detector_map_points_below_fp32": 100 * MAP_TOLERANCE},
               "models": []}
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
    return 0 if all("error" not in e and all(passes(e, m) for m in e["methods"].values())
                    for e in results["models"]) else 1


if __name__ == "__main__":
    sys.exit(main())
