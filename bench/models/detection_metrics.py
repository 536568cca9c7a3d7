#!/usr/bin/env python3
"""Detection metrics without numpy or torch, so they run (and are tested) anywhere:

  iou(a, b)                         intersection over union of two corner boxes [x1, y1, x2, y2]
  greedy_match(dets, refs, t)       each detection, best score first, takes the unmatched reference
                                    of its class with the highest IoU >= t (COCOeval's matching)
  mean_average_precision(dets, gts) COCO's mAP@0.5:0.95: per class with ground truth and per IoU
                                    threshold 0.5:0.05:0.95, the 101-point interpolated AP; averaged
  load_metadata(path)               fovea's --metadata JSON Lines: {(source_id, frame): objects}

A detection is a dict {"box": [x1, y1, x2, y2], "class_id": int, "score": float} (fovea's metadata
objects as they are); a ground-truth box has no score. Frames are dicts {frame key: [boxes]}.

The arithmetic follows pycocotools' COCOeval (evaluateImg, accumulate) for boxes with no crowd or
ignore flags and the 'all' area range: per image and class the best max_dets detections count, IoU
in continuous coordinates (no +1 pixel), a match needs IoU >= t, precision is made monotone from
the right and sampled at recall 0, 0.01, ..., 1 (0 where that recall is never reached). The
thresholds are numpy.linspace's values, so results agree with pycocotools to the last bit.

  python3 detection_metrics.py --self-test
"""

import argparse
import json
import os
import sys
import tempfile


def linspace(start, stop, num):
    """numpy.linspace(start, stop, num) element for element: start + i * step, the last one stop."""
    step = (stop - start) / (num - 1)
    return [start + i * step for i in range(num - 1)] + [stop]


COCO_IOU_THRESHOLDS = linspace(0.5, 0.95, 10)
COCO_RECALL_POINTS = linspace(0.0, 1.0, 101)


def area(box):
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def iou(a, b):
    """0 for disjoint boxes and for two empty ones."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    return inter / (area(a) + area(b) - inter)


def by_score(detections):
    """Indices of `detections`, highest score first, ties in input order (COCOeval's mergesort)."""
    return sorted(range(len(detections)), key=lambda i: -detections[i]["score"])


def greedy_match(detections, references, threshold):
    """Matches within one frame: {detection index: reference index} for the matched detections.

    Detections go best score first; each takes, among the references of its class not taken yet,
    the one with the highest IoU, if that IoU >= threshold (ties: the later reference, as COCOeval).
    """
    taken = set()
    matches = {}
    for d in by_score(detections):
        det = detections[d]
        best, best_iou = None, threshold
        for r, ref in enumerate(references):
            if r in taken or ref["class_id"] != det["class_id"]:
                continue
            overlap = iou(det["box"], ref["box"])
            if overlap >= best_iou:
                best, best_iou = r, overlap
        if best is not None:
            taken.add(best)
            matches[d] = best
    return matches


def interpolated_ap(hits, positives):
    """101-point AP from hits (True: true positive), ordered by score, and the ground-truth count."""
    precision, recall = [], []
    tp = fp = 0
    for hit in hits:
        tp += hit
        fp += not hit
        precision.append(tp / (tp + fp))
        recall.append(tp / positives)
    for i in range(len(precision) - 1, 0, -1):  # monotone: the best precision at any higher recall
        precision[i - 1] = max(precision[i - 1], precision[i])
    total, i = 0.0, 0
    for point in COCO_RECALL_POINTS:  # searchsorted(recall, point, 'left'): recall is non-decreasing
        while i < len(recall) and recall[i] < point:
            i += 1
        total += precision[i] if i < len(recall) else 0.0
    return total / len(COCO_RECALL_POINTS)


def mean_average_precision(detections, truths, thresholds=COCO_IOU_THRESHOLDS, max_dets=100):
    """{"map": mean over classes and thresholds, "ap_per_class": {class: AP over thresholds},
    "ap50": mean AP at the first threshold, "classes": the classes that have ground truth}.

    detections, truths: {frame key: [boxes]}; a frame missing from `detections` has none. Classes
    with detections but no ground truth are left out (COCO: no category without ground truth).
    """
    classes = sorted({t["class_id"] for boxes in truths.values() for t in boxes})
    frames = sorted(set(truths) | set(detections), key=str)
    ap_per_class, ap50 = {}, []
    for c in classes:
        positives = sum(1 for boxes in truths.values() for t in boxes if t["class_id"] == c)
        per_threshold = []
        for t in thresholds:
            scored = []  # (score, hit), frame by frame, each frame's best first
            for frame in frames:
                gts = [g for g in truths.get(frame, []) if g["class_id"] == c]
                dets = [d for d in detections.get(frame, []) if d["class_id"] == c]
                dets = [dets[i] for i in by_score(dets)[:max_dets]]
                matches = greedy_match(dets, gts, t)
                scored += [(d["score"], i in matches) for i, d in enumerate(dets)]
            order = sorted(range(len(scored)), key=lambda i: -scored[i][0])  # stable, as mergesort
            per_threshold.append(interpolated_ap([scored[i][1] for i in order], positives))
        ap_per_class[c] = sum(per_threshold) / len(per_threshold)
        ap50.append(per_threshold[0])
    mean = sum(ap_per_class.values()) / len(classes) if classes else 0.0
    return {"map": mean, "ap50": sum(ap50) / len(ap50) if ap50 else 0.0,
            "ap_per_class": ap_per_class, "classes": classes}


def load_metadata(path, inferred_only=True):
    """fovea's --metadata JSON Lines as {(source_id, frame): objects}; frames the detector skipped
    ("inferred": false, tracked only) are left out unless inferred_only is False. A frame listed
    twice is an error: the flow emits each frame once."""
    frames = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            if inferred_only and not record.get("inferred", True):
                continue
            key = (record["source_id"], record["frame"])
            if key in frames:
                raise ValueError(f"{path}:{number}: source {key[0]} frame {key[1]} appears twice")
            frames[key] = record.get("objects", [])
    return frames


# --- self-test: cases small enough to compute by hand ---------------------------------------------


def box(x1, y1, x2, y2, class_id=1, score=None):
    b = {"box": [x1, y1, x2, y2], "class_id": class_id}
    if score is not None:
        b["score"] = score
    return b


def close(a, b):
    return abs(a - b) <= 1e-12


def self_test():
    checks = []

    def check(name, ok):
        checks.append((name, ok))
        print(f"{'ok  ' if ok else 'FAIL'} {name}")

    # IoU
    check("iou identical = 1", close(iou([0, 0, 10, 10], [0, 0, 10, 10]), 1.0))
    check("iou half overlap = 50/150", close(iou([0, 0, 10, 10], [5, 0, 15, 10]), 1 / 3))
    check("iou contained = 25/100", close(iou([0, 0, 10, 10], [0, 0, 5, 5]), 0.25))
    check("iou touching = 0", iou([0, 0, 10, 10], [10, 0, 20, 10]) == 0.0)
    check("iou disjoint = 0", iou([0, 0, 1, 1], [5, 5, 6, 6]) == 0.0)
    check("iou empty boxes = 0", iou([3, 3, 3, 3], [3, 3, 3, 3]) == 0.0)
    check("iou fractional", close(iou([0.5, 0.5, 2.5, 2.5], [1.5, 1.5, 3.5, 3.5]), 1 / 7))

    # Thresholds as numpy.linspace gives them
    check("10 IoU thresholds 0.5..0.95", len(COCO_IOU_THRESHOLDS) == 10 and COCO_IOU_THRESHOLDS[0] == 0.5
          and COCO_IOU_THRESHOLDS[-1] == 0.95 and close(COCO_IOU_THRESHOLDS[3], 0.65))
    check("101 recall points, 0.5 exact", len(COCO_RECALL_POINTS) == 101 and COCO_RECALL_POINTS[50] == 0.5)

    # Greedy matching
    refs = [box(0, 0, 10, 10), box(20, 0, 30, 10)]
    dets = [box(0, 0, 10, 9, score=0.5), box(0, 0, 10, 10, score=0.9)]
    check("higher score takes the reference", greedy_match(dets, refs, 0.5) == {1: 0})
    check("other class never matches",
          greedy_match([box(0, 0, 10, 10, class_id=2, score=1)], refs, 0.5) == {})
    check("below threshold no match", greedy_match([box(0, 0, 10, 4, score=1)], refs, 0.5) == {})
    check("IoU exactly at threshold matches", greedy_match([box(0, 0, 10, 5, score=1)], refs, 0.5) == {0: 0})
    overlapping = [box(0, 0, 10, 10), box(2, 0, 12, 10)]
    check("best IoU reference wins", greedy_match([box(2, 0, 12, 10, score=1)], overlapping, 0.5) == {0: 1})
    check("taken reference goes to the next best",
          greedy_match([box(2, 0, 12, 10, score=1), box(2, 0, 12, 10, score=0.5)], overlapping, 0.5)
          == {0: 1, 1: 0})

    # AP: one perfect detection
    truths = {0: [box(0, 0, 100, 100)]}
    check("perfect detection: mAP 1",
          close(mean_average_precision({0: [box(0, 0, 100, 100, score=0.9)]}, truths)["map"], 1.0))
    check("no detection: mAP 0", mean_average_precision({}, truths)["map"] == 0.0)
    # IoU 0.78: a true positive at 0.5, 0.55, ..., 0.75 (6 of 10 thresholds)
    check("IoU 0.78: mAP 0.6",
          close(mean_average_precision({0: [box(0, 0, 100, 78, score=0.9)]}, truths)["map"], 0.6))
    # Two ground truths over two frames; TP (0.9), FP (0.8), TP (0.7): precision 1, 1/2, 2/3 at
    # recall 1/2, 1/2, 1; interpolated 1, 2/3, 2/3; recall points 0..0.5 (51) give 1, 0.51..1 (50)
    # give 2/3: AP = (51 + 50 * 2/3) / 101 at every threshold.
    truths2 = {0: [box(0, 0, 10, 10)], 1: [box(0, 0, 10, 10)]}
    dets2 = {0: [box(0, 0, 10, 10, score=0.9), box(50, 50, 60, 60, score=0.8)], 1: [box(0, 0, 10, 10, score=0.7)]}
    expected = (51 + 50 * 2 / 3) / 101
    result = mean_average_precision(dets2, truths2)
    check(f"TP, FP, TP: AP {expected:.6f}", close(result["map"], expected) and close(result["ap50"], expected))
    # The FP ranked last instead: precision 1, 1, 2/3 -> every recall point reached at precision 1.
    dets3 = {0: [box(0, 0, 10, 10, score=0.9), box(50, 50, 60, 60, score=0.1)], 1: [box(0, 0, 10, 10, score=0.7)]}
    check("TP, TP, FP: AP 1", close(mean_average_precision(dets3, truths2)["map"], 1.0))
    # A duplicate of a matched box is a false positive.
    dets4 = {0: [box(0, 0, 10, 10, score=0.9), box(0, 0, 10, 10, score=0.95)]}
    check("duplicate: TP then FP, AP 1 at recall 1",
          close(mean_average_precision(dets4, {0: [box(0, 0, 10, 10)]})["map"], 1.0))
    # Two classes, one found, one missed: mAP 0.5; a class without ground truth does not count.
    truths5 = {0: [box(0, 0, 10, 10, class_id=1), box(20, 20, 30, 30, class_id=2)]}
    dets5 = {0: [box(0, 0, 10, 10, class_id=1, score=0.9), box(0, 0, 10, 10, class_id=3, score=0.99)]}
    result5 = mean_average_precision(dets5, truths5)
    check("two classes, one found: mAP 0.5, classes [1, 2]",
          close(result5["map"], 0.5) and result5["classes"] == [1, 2])
    # max_dets per frame and class: with max_dets=1 only the best (a FP) counts.
    dets6 = {0: [box(50, 50, 60, 60, score=0.9), box(0, 0, 10, 10, score=0.5)]}
    check("max_dets=1 keeps only the best-scored",
          mean_average_precision(dets6, {0: [box(0, 0, 10, 10)]}, max_dets=1)["map"] == 0.0)
    check("max_dets=2 counts both: precision 1/2 at recall 1, AP 0.5",
          close(mean_average_precision(dets6, {0: [box(0, 0, 10, 10)]}, max_dets=2)["map"], 0.5))

    # Metadata JSON Lines
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "meta.jsonl")
        with open(path, "w") as f:
            f.write(json.dumps({"v": 1, "source": "a", "source_id": 0, "frame": 0, "pts_us": 0, "batch": 0,
                                "inferred": True, "objects": [{"box": [1, 2, 3, 4], "class_id": 5, "score": 0.5}]}) + "\n")
            f.write(json.dumps({"v": 1, "source": "a", "source_id": 0, "frame": 1, "pts_us": None, "batch": 0,
                                "inferred": False, "objects": []}) + "\n\n")
            f.write(json.dumps({"v": 1, "source": "b", "source_id": 1, "frame": 0, "pts_us": 0, "batch": 0,
                                "inferred": True, "objects": []}) + "\n")
        frames = load_metadata(path)
        check("metadata: inferred frames by (source, frame)",
              sorted(frames) == [(0, 0), (1, 0)] and frames[(0, 0)][0]["class_id"] == 5)
        check("metadata: all frames when asked", len(load_metadata(path, inferred_only=False)) == 3)
        with open(path, "a") as f:
            f.write(json.dumps({"source_id": 1, "frame": 0, "inferred": True, "objects": []}) + "\n")
        try:
            load_metadata(path)
            check("metadata: a frame twice is refused", False)
        except ValueError:
            check("metadata: a frame twice is refused", True)

    failed = sum(1 for _, ok in checks if not ok)
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--self-test", action="store_true", help="run the hand-computed cases")
    args = parser.parse_args()
    if not args.self_test:
        parser.print_help()
        return 2
    return self_test()


if __name__ == "__main__":
    sys.exit(main())
