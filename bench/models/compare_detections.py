#!/usr/bin/env python3
"""`fovea detect` against torchvision's SSDs on the same decoded frames (issue 19's parity check).

  compare_detections.py --fovea BUILD/apps/fovea/fovea --out DIR [--models a,b] [--frames 100]

Per model (SSD300-VGG16, SSDLite320-MobileNetV3), on the GPU machine:
  1. the whole torchvision SSD is trained on train_synthetic.py's task (train_detector: its own
     loss, anchor matching), so that its detections mean something (--seeded skips this);
  2. a clip of train_synthetic's images at the model's input size (300x300, 320x320: fovea does
     no resize), near-lossless H.264, and their ground truth (DIR/<model>/truth.json);
  3. the trained backbone + head exported as export_torchvision exports it (outputs
     bbox_regression, cls_logits; compare_torch.export_dynamic's dynamic batch), with the
     transform's normalization inside the graph (NormalizedBackboneHead says why);
  4. `fovea detect` on the clip at fp32 and fp16, --conf/--iou/--top-k set to the SSD object's own
     score_thresh, nms_thresh, detections_per_img (torchvision's defaults: SSD300 0.01, 0.45, 200;
     SSDLite 0.001, 0.55, 300), its metadata JSON Lines read back;
  5. the clip decoded to its exact YUV 4:2:0 planes (the ffmpeg CLI's rawvideo output: H.264
     decoding is bit-exact, so these are the planes NVDEC hands fovea), turned into the network
     input as fovea's preprocess does (fovea_input), and run through torchvision: the same
     backbone + head at the same precision, then SSD.postprocess_detections and
     transform.postprocess, torchvision's own code (reference_detections; at fp32 it is checked
     to equal SSD.forward on the first batch: forward_max_diff);
  6. parity: the share of torchvision's detections that fovea reports too, with the same class,
     IoU >= 0.99 and |score difference| <= 1e-3 (target >= 99% at fp32); mAP@0.5:0.95 of both
     against the ground truth (target: fovea within 0.5 points of torchvision, fp32 and fp16).

fp16 compares with torchvision at fp16 (PyTorch's half-precision backbone + head, the postprocess
in float32 as fovea's): two float16 networks differ by more than 1e-3 in score, so its parity is
reported but only its mAP is held to the target. The SSDs' postprocess keeps the best
topk_candidates per class before NMS (SSD300 400, SSDLite 300): fovea is given the same with
--candidates. Prints a JSON
summary (also DIR/summary.json); exits 1 when a target is missed or a run fails.
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
from torch import nn
from torchvision.models.detection.image_list import ImageList

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_torch  # noqa: E402
import detection_metrics  # noqa: E402
import export_torchvision as tv_export  # noqa: E402
import train_synthetic  # noqa: E402

CLIP_SEED = 5  # train_synthetic uses 3 (training) and 4 (test_input): these images are unseen
FPS = 30
PARITY_IOU = 0.99
PARITY_SCORE = 1e-3
PARITY_TARGET = 0.99
MAP_TOLERANCE = 0.005  # 0.5 points of mAP


class NormalizedBackboneHead(nn.Module):
    """export_torchvision's SSDBackboneHead behind the SSD's own input normalization.

    fovea's --normalize offers imagenet and none (pixels / 255); torchvision's SSD300 wants
    (x - [0.48235, 0.45882, 0.40784]) * 255 and SSDLite (x - 0.5) / 0.5, neither of them. So the
    graph takes pixels / 255 (fovea's --normalize none, torchvision's input) and normalizes itself
    as GeneralizedRCNNTransform.normalize does, in the network's precision as PyTorch runs it.
    """

    def __init__(self, ssd):
        super().__init__()
        self.register_buffer("mean", torch.tensor(ssd.transform.image_mean).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(ssd.transform.image_std).view(1, 3, 1, 1))
        self.net = tv_export.SSDBackboneHead(ssd)

    def forward(self, x):
        return self.net((x - self.mean) / self.std)


def detector(name, seeded):
    """The whole torchvision SSD (eval, CPU, float32): trained on the synthetic task, or seeded."""
    if seeded:
        torch.manual_seed(tv_export.WEIGHT_SEED)
        return getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None).eval()
    return train_synthetic.train_detector(name)


# --- the clip and its ground truth ---------------------------------------------------------------


def make_clip(name, frames, folder):
    """clip.mp4 (H.264 High profile, qp 1, no B-frames) and truth.json; returns their paths.

    qp 0 would be lossless, but libx264 then writes the High 4:4:4 Predictive profile, which NVDEC
    does not decode; qp 1 stays in High. The frames go RGB -> YUV 4:2:0 BT.601 limited range (what
    fovea's preprocess assumes) in ffmpeg; exactness does not matter here, as the reference reads
    the decoded planes back.
    """
    _, _, h, w = tv_export.INPUT_SHAPES[name]
    g = torch.Generator(device="cpu").manual_seed(CLIP_SEED)
    images, _, boxes, kinds = train_synthetic.synthetic_batch(frames, h, w, g, "cpu")
    rgb = (images * 255).round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).contiguous().numpy()
    clip = os.path.join(folder, "clip.mp4")
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
                    "-s", f"{w}x{h}", "-r", str(FPS), "-i", "-",
                    "-vf", "scale=out_color_matrix=bt601:out_range=tv", "-c:v", "libx264", "-profile:v", "high",
                    "-qp", "1", "-bf", "0", "-g", str(FPS), "-pix_fmt", "yuv420p",
                    "-colorspace", "smpte170m", "-color_primaries", "smpte170m", "-color_trc", "smpte170m",
                    "-color_range", "tv", clip], input=rgb.tobytes(), check=True)
    truth = {"model": name, "width": w, "height": h, "fps": FPS,
             "frames": [[{"box": [float(v) for v in b], "class_id": int(k)} for b, k in zip(bs, ks)]
                        for bs, ks in zip(boxes, kinds)]}
    truth_path = os.path.join(folder, "truth.json")
    with open(truth_path, "w") as f:
        json.dump(truth, f)
    return clip, truth_path


def decode_planes(clip, w, h):
    """Every frame's Y [h, w], U and V [h/2, w/2] as uint8, in presentation order."""
    raw = subprocess.run(["ffmpeg", "-loglevel", "error", "-i", clip, "-f", "rawvideo", "-pix_fmt", "yuv420p",
                          "-fps_mode", "passthrough", "-"], stdout=subprocess.PIPE, check=True).stdout
    frame_bytes = w * h * 3 // 2
    if len(raw) % frame_bytes:
        raise RuntimeError(f"{clip}: {len(raw)} bytes of yuv420p is not a whole number of {w}x{h} frames")
    frames = np.frombuffer(raw, dtype=np.uint8).reshape(-1, frame_bytes)
    y = frames[:, : w * h].reshape(-1, h, w)
    u = frames[:, w * h: w * h * 5 // 4].reshape(-1, h // 2, w // 2)
    v = frames[:, w * h * 5 // 4:].reshape(-1, h // 2, w // 2)
    return y, u, v


def fovea_input(y, u, v):
    """[n, 3, h, w] float32 in [0, 1]: fovea's preprocess (src/image/preprocess.h's definition) with
    no resize and --normalize none.

    color_math.h's yuv_to_rgb for BT.601 limited range in float32, chroma sample (x/2, y/2) for
    luma pixel (x, y) (nearest, no interpolation), clamped to [0, 255], then x * (1/255) (mean 0,
    std 1). fovea's kernel folds these into one affine map: equal up to float rounding.
    """
    f32 = np.float32
    kr, kb = f32(0.299), f32(0.114)
    kg = f32(1) - kr - kb
    y_scale, c_scale = f32(255) / f32(219), f32(255) / f32(224)
    r_v = f32(2) * (f32(1) - kr)
    g_u = f32(2) * kb * (f32(1) - kb) / kg
    g_v = f32(2) * kr * (f32(1) - kr) / kg
    b_u = f32(2) * (f32(1) - kb)
    luma = (y.astype(f32) - f32(16)) * y_scale
    cb = (u.astype(f32) - f32(128)) * c_scale
    cr = (v.astype(f32) - f32(128)) * c_scale
    cb = cb.repeat(2, axis=1).repeat(2, axis=2)
    cr = cr.repeat(2, axis=1).repeat(2, axis=2)
    rgb = np.stack([luma + r_v * cr, luma - g_u * cb - g_v * cr, luma + b_u * cb], axis=1)
    x = np.clip(rgb, f32(0), f32(255)) * (f32(1) / f32(255))
    return torch.from_numpy(np.ascontiguousarray(x))


# --- torchvision's detections --------------------------------------------------------------------


def anchors_for(ssd, h, w):
    """The default boxes SSD.forward makes for an h x w input (they depend on the sizes only)."""
    x = torch.zeros(1, 3, h, w)
    with torch.inference_mode():
        features = ssd.backbone(x)
    features = [features] if isinstance(features, torch.Tensor) else list(features.values())
    return ssd.anchor_generator(ImageList(x, [(h, w)]), features)[0]


def reference_detections(ssd, network, x, precision, device, batch):
    """torchvision's detections per frame: `network` (NormalizedBackboneHead) at `precision`, then
    SSD.postprocess_detections and transform.postprocess in float32, as SSD.forward runs them."""
    h, w = x.shape[2:]
    anchors = anchors_for(ssd, h, w).to(device)
    dtype = torch.float16 if precision == "fp16" else torch.float32
    net = network.to(device, dtype)
    ssd.to(device)
    frames = []
    with torch.inference_mode():
        for start in range(0, x.shape[0], batch):
            chunk = x[start: start + batch].to(device, dtype)
            bbox_regression, cls_logits = net(chunk)
            heads = {"bbox_regression": bbox_regression.float(), "cls_logits": cls_logits.float()}
            sizes = [(h, w)] * chunk.shape[0]
            dets = ssd.postprocess_detections(heads, [anchors] * chunk.shape[0], sizes)
            dets = ssd.transform.postprocess(dets, sizes, sizes)
            for d in dets:
                frames.append([{"box": b, "class_id": c, "score": s} for b, c, s in
                               zip(d["boxes"].cpu().tolist(), d["labels"].cpu().tolist(), d["scores"].cpu().tolist())])
    network.float().cpu()
    ssd.cpu()
    return frames


def forward_agrees(ssd, network, x, device):
    """Largest box and score difference between SSD.forward on the frames and the decomposition
    reference_detections runs at fp32 (same detections in the same order expected)."""
    ssd.to(device)
    with torch.inference_mode():
        full = ssd(list(x.to(device)))
    ssd.cpu()
    ours = reference_detections(ssd, network, x, "fp32", device, x.shape[0])
    worst = 0.0
    for f, o in zip(full, ours):
        if len(o) != f["boxes"].shape[0]:
            return float("inf")
        for det, b, s in zip(o, f["boxes"].cpu().tolist(), f["scores"].cpu().tolist()):
            worst = max(worst, abs(det["score"] - s), *(abs(p - q) for p, q in zip(det["box"], b)))
    return worst


# --- fovea ---------------------------------------------------------------------------------------


def run_fovea(args, ssd, onnx_path, clip, size, precision, folder):
    """`fovea detect` with the SSD's own postprocess settings; (exit code, seconds, metadata path)."""
    metadata = os.path.join(folder, f"fovea_{precision}.jsonl")
    cmd = [args.fovea, "detect", clip, "--model", onnx_path, "--parser", "ssd", "--normalize", "none",
           "--size", f"{size[0]}x{size[1]}", "--conf", str(ssd.score_thresh), "--iou", str(ssd.nms_thresh),
           "--top-k", str(ssd.detections_per_img), "--candidates", str(ssd.topk_candidates), "--interval", "0", "--batch", str(args.batch),
           "--precision", precision, "--device", args.device, "--metadata", metadata,
           "--report", os.path.join(folder, f"fovea_{precision}_stats.json"), "--no-progress"]
    log = os.path.join(folder, f"fovea_{precision}.log")
    start = time.perf_counter()
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n")
        f.flush()
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=args.timeout).returncode
    return rc, time.perf_counter() - start, metadata


def fovea_frames(metadata, count):
    """The metadata's detections per frame index 0..count-1 (source 0), and the frames it lacks."""
    frames = detection_metrics.load_metadata(metadata)
    detections = [frames.get((0, i), []) for i in range(count)]
    missing = [i for i in range(count) if (0, i) not in frames]
    return detections, missing, len(frames)


# --- the comparison ------------------------------------------------------------------------------


def parity(reference, fovea):
    """Share of the reference's detections (non-empty boxes) that fovea reports with the same class,
    IoU >= PARITY_IOU and |score difference| <= PARITY_SCORE; also for scores >= 0.5 alone."""
    counted = matched = confident = confident_matched = empty = extra = 0
    worst_score = 0.0
    for ref, got in zip(reference, fovea):
        kept = [d for d in ref if detection_metrics.area(d["box"]) > 0]
        empty += len(ref) - len(kept)
        matches = detection_metrics.greedy_match(kept, got, PARITY_IOU)
        extra += len(got) - len(matches)
        for i, d in enumerate(kept):
            diff = abs(d["score"] - got[matches[i]]["score"]) if i in matches else float("inf")
            if i in matches:
                worst_score = max(worst_score, diff)
            ok = diff <= PARITY_SCORE
            counted += 1
            matched += ok
            if d["score"] >= 0.5:
                confident += 1
                confident_matched += ok
    return {"matched": matched / counted if counted else 1.0, "reference_detections": counted,
            "matched_confident": confident_matched / confident if confident else 1.0,
            "reference_confident": confident, "reference_empty_boxes_skipped": empty,
            "fovea_unmatched": extra, "max_score_diff_of_iou_matches": worst_score}


def frames_dict(frames):
    return dict(enumerate(frames))


def compare_model(args, name):
    folder = os.path.join(args.out, name)
    os.makedirs(folder, exist_ok=True)
    _, _, h, w = tv_export.INPUT_SHAPES[name]
    result = {"input": f"{w}x{h}", "weights": "seeded" if args.seeded else "trained on train_synthetic.py's task"}
    ssd = detector(name, args.seeded)
    torch.backends.cudnn.allow_tf32 = False  # training may turn TF32 on; the reference is float32
    torch.backends.cuda.matmul.allow_tf32 = False
    result["settings"] = {"normalize": "none, and the transform's in the graph", "conf": ssd.score_thresh, "iou": ssd.nms_thresh,
                          "top_k": ssd.detections_per_img, "torchvision_candidates_per_class": ssd.topk_candidates}
    network = NormalizedBackboneHead(ssd).eval()
    clip, truth_path = make_clip(name, args.frames, folder)
    with open(truth_path) as f:
        truths = frames_dict(json.load(f)["frames"])
    onnx_path = os.path.join(folder, f"{name}.onnx")
    if os.path.exists(onnx_path):
        os.remove(onnx_path)  # export_dynamic keeps an existing file; these weights are new
    compare_torch.export_dynamic(name, onnx_path, (network, ["bbox_regression", "cls_logits"]))

    x = fovea_input(*decode_planes(clip, w, h))
    if x.shape[0] != args.frames:
        raise RuntimeError(f"{clip}: decoded {x.shape[0]} frames, wrote {args.frames}")
    result["forward_max_diff"] = forward_agrees(ssd, network, x[: args.batch], args.torch_device)
    misses = []
    if result["forward_max_diff"] > 1e-4:
        misses.append(f"{name}: the reference is not SSD.forward (max diff {result['forward_max_diff']:.2e})")
    for precision in ("fp32", "fp16"):
        reference = reference_detections(ssd, network, x, precision, args.torch_device, args.batch)
        torch_map = detection_metrics.mean_average_precision(frames_dict(reference), truths)
        entry = {"torchvision_map": torch_map["map"], "torchvision_ap50": torch_map["ap50"]}
        rc, seconds, metadata = run_fovea(args, ssd, onnx_path, clip, (w, h), precision, folder)
        entry.update(rc=rc, seconds=round(seconds, 1))
        if rc != 0:
            misses.append(f"{name} {precision}: fovea detect exited {rc} (see {folder}/fovea_{precision}.log)")
            result[precision] = entry
            continue
        fovea, missing, listed = fovea_frames(metadata, args.frames)
        fovea_map = detection_metrics.mean_average_precision(frames_dict(fovea), truths)
        entry.update(fovea_map=fovea_map["map"], fovea_ap50=fovea_map["ap50"],
                     map_diff_points=100 * (fovea_map["map"] - torch_map["map"]),
                     fovea_frames=listed, missing_frames=missing[:10], parity=parity(reference, fovea))
        if missing or listed != args.frames:
            misses.append(f"{name} {precision}: fovea listed {listed} frames of {args.frames}, missing {missing[:10]}")
        if abs(fovea_map["map"] - torch_map["map"]) > MAP_TOLERANCE:
            misses.append(f"{name} {precision}: mAP {100 * fovea_map['map']:.2f} vs torchvision "
                          f"{100 * torch_map['map']:.2f} (more than {100 * MAP_TOLERANCE} points apart)")
        if precision == "fp32" and entry["parity"]["matched"] < PARITY_TARGET:
            misses.append(f"{name} fp32: parity {entry['parity']['matched']:.2%} < {PARITY_TARGET:.0%}")
        result[precision] = entry
        print(json.dumps({name: {precision: entry}}), flush=True)
    return result, misses


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fovea", required=True, help="the fovea binary")
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default=",".join(tv_export.DETECTION),
                        help="comma-separated subset of: " + ", ".join(tv_export.DETECTION))
    parser.add_argument("--frames", type=int, default=100, help="frames in the clip (default 100)")
    parser.add_argument("--batch", type=int, default=8, help="fovea's --batch and PyTorch's (default 8)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="fovea's --device")
    parser.add_argument("--torch-device", default="cuda", help="where PyTorch runs the reference")
    parser.add_argument("--seeded", action="store_true",
                        help="skip training (seeded weights): checks the plumbing; the mAPs then mean little")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per fovea command")
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in tv_export.DETECTION]
    if unknown:
        parser.error(f"unknown models: {', '.join(unknown)}")
    os.makedirs(args.out, exist_ok=True)

    summary = {"torch": torch.__version__, "torchvision": torchvision.__version__,
               "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
               "targets": {"parity_fp32": f">= {PARITY_TARGET:.0%} of torchvision's detections with the same class, "
                                          f"IoU >= {PARITY_IOU}, |score diff| <= {PARITY_SCORE}",
                           "map": f"fovea within {100 * MAP_TOLERANCE} points of torchvision (fp32 and fp16)"},
               "models": {}, "misses": []}
    for name in models:
        print(f"== {name}", flush=True)
        try:
            summary["models"][name], misses = compare_model(args, name)
        except Exception as e:  # noqa: BLE001 - one model's failure must not stop the other
            summary["models"][name] = {"error": f"{type(e).__name__}: {e}"}
            misses = [f"{name}: {type(e).__name__}: {e}"]
        summary["misses"] += misses
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=2)
    print(json.dumps(summary, indent=2))
    return 1 if summary["misses"] else 0


if __name__ == "__main__":
    sys.exit(main())
