#!/usr/bin/env python3
"""torchvision peer of bench/nms_bench.cpp: the same input (the .npy files nms_bench writes), the
standard torchvision path per image (scores > 0.05 over the 80 non-background classes,
torchvision.ops.batched_nms(boxes, scores, labels, 0.5), keep the top 200), timed with CUDA
synchronization. Also compares the kept detections with fovea's (nms_fovea.npy).

    build/bench/nms_bench OUT && python3 bench/nms_torch.py OUT
"""
import sys
import time

import numpy as np
import torch
import torchvision

SCORE_THRESHOLD = 0.05
IOU_THRESHOLD = 0.5
TOP_K = 200
WARMUP = 10
ITERATIONS = 50


def torchvision_nms(boxes, scores):
    """boxes [N, B, 4], scores [N, B, C] on the GPU; returns per image (box index, class, score)."""
    results = []
    for n in range(boxes.shape[0]):
        s = scores[n, :, 1:]  # class 0 is background
        mask = s > SCORE_THRESHOLD
        box_idx, cls = mask.nonzero(as_tuple=True)
        cand_scores = s[box_idx, cls]
        keep = torchvision.ops.batched_nms(boxes[n, box_idx], cand_scores, cls, IOU_THRESHOLD)[:TOP_K]
        results.append((box_idx[keep], cls[keep] + 1, cand_scores[keep]))
    return results


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    boxes = torch.from_numpy(np.load(f"{out}/nms_boxes.npy")).cuda()
    scores = torch.from_numpy(np.load(f"{out}/nms_scores.npy")).cuda()
    for _ in range(WARMUP):
        torchvision_nms(boxes, scores)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(ITERATIONS):
        results = torchvision_nms(boxes, scores)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - start) * 1000 / ITERATIONS
    print(f"torchvision batched_nms: {ms:.4f} ms per batch (mean of {ITERATIONS}; torch {torch.__version__}, "
          f"torchvision {torchvision.__version__}, {torch.cuda.get_device_name()})")

    fovea = np.load(f"{out}/nms_fovea.npy")
    fovea_sets = [set() for _ in range(boxes.shape[0])]
    for row in fovea:
        fovea_sets[int(row[0])].add((int(row[2]), int(row[1])))
    same = total_tv = total_fovea = 0
    for n, (box_idx, cls, _) in enumerate(results):
        tv = set(zip(box_idx.tolist(), cls.tolist()))
        same += len(tv & fovea_sets[n])
        total_tv += len(tv)
        total_fovea += len(fovea_sets[n])
    print(f"detections: torchvision {total_tv}, fovea {total_fovea}, in both {same} "
          f"(differences come from equal-score order at the top-{TOP_K} cut, or IoU rounding)")


if __name__ == "__main__":
    main()
