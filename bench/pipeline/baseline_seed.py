#!/usr/bin/env python3
"""The Python baseline of the segmentation flow, as users write it today (issue 6's peer):

    OpenCV decode -> PyTorch FCN-ResNet101 (544x960) -> class-8 mask -> 31x31 Gaussian blur of the
    background and composite (OpenCV) -> OpenCV encode

FP32 at batch 1 by default; --fp16 --batch 4 is the tuned variant (channels-last half precision).
The model is compare_torch's FCN-ResNet101 (the same seeded, calibrated weights fovea runs from
the exported ONNX file). Prints the frames per second of the whole loop as its last line.

    python3 bench/pipeline/baseline_seed.py clip.mp4 --out out.mp4 [--fp16 --batch 4] [--frames N]
"""

import argparse
import os
import sys
import time

import cv2
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import compare_torch  # noqa: E402  (the seeded FCN-ResNet101)

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def to_input(frames, width, height, dtype):
    batch = []
    for bgr in frames:
        rgb = cv2.cvtColor(cv2.resize(bgr, (width, height), interpolation=cv2.INTER_LINEAR), cv2.COLOR_BGR2RGB)
        batch.append((rgb.astype(np.float32) / 255.0 - MEAN) / STD)
    x = torch.from_numpy(np.stack(batch)).permute(0, 3, 1, 2).to("cuda", dtype)
    return x.contiguous(memory_format=torch.channels_last) if dtype == torch.float16 else x


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("clip")
    parser.add_argument("--out", required=True)
    parser.add_argument("--model", help="unused: the PyTorch model is built in process (same weights)")
    parser.add_argument("--fp16", action="store_true")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--target-class", type=int, default=8)
    parser.add_argument("--size", default="960x544", help="network input WIDTHxHEIGHT, as fovea takes it")
    parser.add_argument("--blur", type=int, default=31)
    parser.add_argument("--frames", type=int, default=0, help="stop after this many frames (0: all)")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    dtype = torch.float16 if args.fp16 else torch.float32

    model, _ = compare_torch.build("fcn_resnet101")
    model = model.to("cuda", dtype).eval()
    if args.fp16:
        model = model.to(memory_format=torch.channels_last)

    capture = cv2.VideoCapture(args.clip)
    fps = capture.get(cv2.CAP_PROP_FPS) or 30.0
    frame_w = int(capture.get(cv2.CAP_PROP_FRAME_WIDTH))
    frame_h = int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT))
    writer = cv2.VideoWriter(args.out, cv2.VideoWriter_fourcc(*"mp4v"), fps, (frame_w, frame_h))

    def process(frames):
        with torch.inference_mode():
            scores = model(to_input(frames, width, height, dtype))
            scores = scores[0] if isinstance(scores, (tuple, list)) else scores
            masks = (scores.argmax(1) == args.target_class).to(torch.uint8).cpu().numpy()
        for bgr, mask in zip(frames, masks):
            alpha = cv2.resize(mask * 255, (frame_w, frame_h), interpolation=cv2.INTER_LINEAR)
            alpha = (alpha.astype(np.float32) / 255.0)[:, :, None]
            blurred = cv2.GaussianBlur(bgr, (args.blur, args.blur), 0)
            out = (alpha * bgr + (1.0 - alpha) * blurred).astype(np.uint8)
            writer.write(out)

    # One untimed batch: CUDA context, cuDNN's algorithm choice.
    ok, first = capture.read()
    if not ok:
        sys.exit(f"{args.clip}: cannot read a frame")
    process([first])
    torch.cuda.synchronize()

    done = 0
    start = time.perf_counter()
    pending = []
    while args.frames == 0 or done < args.frames:
        ok, frame = capture.read()
        if not ok:
            break
        pending.append(frame)
        if len(pending) == args.batch:
            process(pending)
            done += len(pending)
            pending = []
    if pending:
        process(pending)
        done += len(pending)
    torch.cuda.synchronize()
    writer.release()
    elapsed = time.perf_counter() - start
    print(f"{done / elapsed:.1f} fps ({done} frames, {'fp16' if args.fp16 else 'fp32'} batch {args.batch})")


if __name__ == "__main__":
    main()
