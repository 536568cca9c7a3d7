#!/usr/bin/env python3
"""The Python baseline of the detection flow, written as a competent user writes it without fovea
(issue 19's peer, as baseline_seed.py is the segmentation flow's):

    N x cv2.VideoCapture, read round robin -> batches of frames -> resize + normalize on the GPU
    (torch) -> the detector in PyTorch -> boxes: DetectNet_v2's decode (src/post/detect_post.h's
    formula) or torchvision's own SSD postprocess -> torchvision.ops.batched_nms -> cv2.rectangle /
    cv2.putText -> cv2.VideoWriter (mp4v), one file per source

--null skips the drawing and the encoding (fovea's null sink with the OSD off). Models, as
export_torchvision.py builds them, with compare_torch.build's seeded weights (those of the ONNX
files that compare_torch.export_dynamic writes and detect_bench.sh hands fovea):
  detectnet_resnet34             960x544, pixels / 255, coverage > conf, class-aware NMS
  ssdlite320_mobilenet_v3_large  320x320, ssd300_vgg16 300x300: the SSD transform's normalization,
                                 torchvision's postprocess_detections with --conf/--iou/--top-k
Prints one JSON line: frames (all sources), seconds (from the first read to the last write), fps.

    python3 bench/pipeline/baseline_detect.py clip.mp4 --sources 8 --batch 8 --fp16 --null
"""

import argparse
import json
import math
import os
import sys
import time

import cv2
import numpy as np
import torch
import torchvision
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import compare_torch  # noqa: E402  (the seeded models fovea runs from the exported ONNX files)
import export_torchvision as tv_export  # noqa: E402

MODELS = tv_export.GRID_DETECTION + tv_export.DETECTION
DEVICE = "cuda"
# DetectNet_v2's box decode, PeopleNet's values (detect_post.h: norm 35, offset 0.5).
DETECTNET_NORM = 35.0
DETECTNET_OFFSET = 0.5


class Detector:
    """The network and its box decode: frames [n, 3, h, w] (RGB, 0..255) to per-frame detections
    (boxes [k, 4] in frame pixels, scores [k], classes [k]) on the CPU."""

    def __init__(self, name, dtype, conf, iou, top_k):
        self.name, self.dtype, self.conf, self.iou, self.top_k = name, dtype, conf, iou, top_k
        _, _, self.height, self.width = tv_export.INPUT_SHAPES[name]
        net, _ = compare_torch.build(name)
        self.net = net.to(DEVICE, dtype).eval()
        if dtype == torch.float16:
            self.net = self.net.to(memory_format=torch.channels_last)
        self.mean = torch.zeros(1, 3, 1, 1, device=DEVICE)
        self.std = torch.full((1, 3, 1, 1), 1.0 / 255.0, device=DEVICE)  # DetectNet: pixels / 255
        if name in tv_export.DETECTION:
            # The SSD object supplies the transform's normalization, the anchors and the
            # postprocess; the seeded backbone and head replace its own.
            self.ssd = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None).eval()
            self.ssd.backbone, self.ssd.head = net.backbone, net.head
            self.ssd.score_thresh, self.ssd.nms_thresh, self.ssd.detections_per_img = conf, iou, top_k
            t = self.ssd.transform
            self.mean = torch.tensor(t.image_mean, device=DEVICE).view(1, 3, 1, 1) * 255.0
            self.std = torch.tensor(t.image_std, device=DEVICE).view(1, 3, 1, 1) * 255.0
            self.anchors = self.default_boxes()

    def default_boxes(self):
        """SSD.forward's anchors for the input size (the same for every frame)."""
        x = torch.zeros(1, 3, self.height, self.width, device=DEVICE, dtype=self.dtype)
        with torch.inference_mode():
            features = self.ssd.backbone(x)
        features = [f.float() for f in features.values()]
        image_list = torchvision.models.detection.image_list.ImageList(x.float(), [(self.height, self.width)])
        return self.ssd.anchor_generator(image_list, features)[0]

    def preprocess(self, frames):
        """BGR uint8 frames -> the network input: upload, RGB, bilinear resize, normalize."""
        x = torch.from_numpy(np.stack(frames)).to(DEVICE, non_blocking=True)
        x = x.permute(0, 3, 1, 2)[:, [2, 1, 0]].float()
        x = F.interpolate(x, size=(self.height, self.width), mode="bilinear", align_corners=False)
        x = ((x - self.mean) / self.std).to(self.dtype)
        return x.contiguous(memory_format=torch.channels_last) if self.dtype == torch.float16 else x

    def __call__(self, frames):
        frame_h, frame_w = frames[0].shape[:2]
        with torch.inference_mode():
            outputs = self.net(self.preprocess(frames))
            if self.name in tv_export.DETECTION:
                return self.ssd_detections(outputs, len(frames), frame_w, frame_h)
            return self.detectnet_detections(outputs, frame_w, frame_h)

    def ssd_detections(self, outputs, n, frame_w, frame_h):
        heads = {"bbox_regression": outputs[0].float(), "cls_logits": outputs[1].float()}
        sizes = [(self.height, self.width)] * n
        dets = self.ssd.postprocess_detections(heads, [self.anchors] * n, sizes)  # batched_nms inside
        dets = self.ssd.transform.postprocess(dets, sizes, [(frame_h, frame_w)] * n)
        return [(d["boxes"].cpu(), d["scores"].cpu(), d["labels"].cpu()) for d in dets]

    def detectnet_detections(self, outputs, frame_w, frame_h):
        coverage, bbox = (o.float() for o in outputs)
        n, classes, grid_h, grid_w = coverage.shape
        stride_x = math.ceil(self.width / grid_w)  # DeepStream's DIVIDE_AND_ROUND_UP
        stride_y = math.ceil(self.height / grid_h)
        cx = (torch.arange(grid_w, device=DEVICE) * stride_x + DETECTNET_OFFSET) / DETECTNET_NORM
        cy = (torch.arange(grid_h, device=DEVICE) * stride_y + DETECTNET_OFFSET) / DETECTNET_NORM
        o = bbox.view(n, classes, 4, grid_h, grid_w)
        boxes = torch.stack([(o[:, :, 0] - cx) * -DETECTNET_NORM,
                             (o[:, :, 1] - cy[:, None]) * -DETECTNET_NORM,
                             (o[:, :, 2] + cx) * DETECTNET_NORM,
                             (o[:, :, 3] + cy[:, None]) * DETECTNET_NORM], dim=-1)  # [n, C, H, W, 4]
        boxes = boxes * torch.tensor([frame_w / self.width, frame_h / self.height] * 2, device=DEVICE)
        boxes[..., 0::2] = boxes[..., 0::2].clamp(0, frame_w)
        boxes[..., 1::2] = boxes[..., 1::2].clamp(0, frame_h)
        keep = coverage > self.conf
        image, cls = keep.nonzero(as_tuple=True)[:2]
        boxes, scores = boxes[keep], coverage[keep]
        # One NMS call for the batch: boxes of different frames or classes never suppress each other.
        kept = torchvision.ops.batched_nms(boxes, scores, image * classes + cls, self.iou)
        boxes, scores, image, cls = boxes[kept].cpu(), scores[kept].cpu(), image[kept].cpu(), cls[kept].cpu()
        results = []
        for i in range(n):
            mine = (image == i).nonzero(as_tuple=True)[0][: self.top_k]  # kept is ordered by score
            results.append((boxes[mine], scores[mine], cls[mine]))
        return results


def draw(frame, boxes, scores, classes):
    for (x1, y1, x2, y2), score, cls in zip(boxes.tolist(), scores.tolist(), classes.tolist()):
        p1, p2 = (int(x1), int(y1)), (int(x2), int(y2))
        cv2.rectangle(frame, p1, p2, (0, 255, 0), 2)
        cv2.putText(frame, f"{cls} {score:.2f}", (p1[0], max(p1[1] - 4, 12)), cv2.FONT_HERSHEY_SIMPLEX, 0.5,
                    (0, 255, 0), 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("clip", help="the video every source reads")
    parser.add_argument("--sources", type=int, default=1, help="copies of the clip decoded side by side")
    parser.add_argument("--batch", type=int, default=1, help="frames per network call")
    parser.add_argument("--model", default="detectnet_resnet34", choices=MODELS)
    parser.add_argument("--frames", type=int, default=0, help="frames per source (0: all)")
    parser.add_argument("--null", action="store_true", help="no drawing and no video out")
    parser.add_argument("--out", help="folder for the videos (source<i>.mp4); required without --null")
    parser.add_argument("--fp16", action="store_true", help="half precision, channels-last")
    parser.add_argument("--conf", type=float, default=0.4)
    parser.add_argument("--iou", type=float, default=0.5)
    parser.add_argument("--top-k", type=int, default=100)
    args = parser.parse_args()
    if not args.null and not args.out:
        parser.error("--out is required without --null")
    dtype = torch.float16 if args.fp16 else torch.float32
    torch.backends.cudnn.benchmark = True  # fixed input shapes
    detector = Detector(args.model, dtype, args.conf, args.iou, args.top_k)

    captures = [cv2.VideoCapture(args.clip) for _ in range(args.sources)]
    if not all(c.isOpened() for c in captures):
        sys.exit(f"{args.clip}: cannot open")
    fps = captures[0].get(cv2.CAP_PROP_FPS) or 30.0
    frame_w = int(captures[0].get(cv2.CAP_PROP_FRAME_WIDTH))
    frame_h = int(captures[0].get(cv2.CAP_PROP_FRAME_HEIGHT))
    writers = []
    if not args.null:
        os.makedirs(args.out, exist_ok=True)
        writers = [cv2.VideoWriter(os.path.join(args.out, f"source{i}.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), fps,
                                   (frame_w, frame_h)) for i in range(args.sources)]

    # Untimed: CUDA context, cuDNN's algorithm choice for the full batch.
    detector([np.zeros((frame_h, frame_w, 3), np.uint8)] * args.batch)
    torch.cuda.synchronize()

    done = detections = 0
    pending = []  # (source, frame)

    def process():
        nonlocal done, detections
        results = detector([frame for _, frame in pending])
        for (source, frame), (boxes, scores, classes) in zip(pending, results):
            detections += len(scores)
            if writers:
                draw(frame, boxes, scores, classes)
                writers[source].write(frame)
        done += len(pending)
        pending.clear()

    start = time.perf_counter()
    live = list(range(args.sources))
    read = [0] * args.sources
    while live:
        for source in list(live):
            ok, frame = (False, None) if args.frames and read[source] == args.frames else captures[source].read()
            if not ok:
                live.remove(source)
                continue
            read[source] += 1
            pending.append((source, frame))
            if len(pending) == args.batch:
                process()
    if pending:
        process()
    for writer in writers:
        writer.release()
    elapsed = time.perf_counter() - start
    print(json.dumps({"model": args.model, "sources": args.sources, "batch": args.batch,
                      "precision": "fp16" if args.fp16 else "fp32", "sink": "null" if args.null else "mp4v",
                      "frames": done, "seconds": round(elapsed, 3), "fps": round(done / elapsed, 2),
                      "detections": detections}))


if __name__ == "__main__":
    main()
