#!/usr/bin/env python3
"""The Python baseline of the image-folder flow (issue 21's peer), written as the pix2pix tutorial's
seed code runs a generator over a folder, one image at a time:

    PIL open -> convert("RGB") -> the A half of the AB image -> torchvision transforms (Resize to the
    network's 256x256, ToTensor, Normalize 0.5/0.5) -> the U-Net in PyTorch -> denormalize
    ((x + 1) / 2 * 255, clamp, round, uint8) -> PIL save PNG

The model is compare_torch.build's unet_256 (export_torchvision's pix2pix U-Net with the seeded,
calibrated weights), the network of the ONNX file that compare_torch.export_dynamic writes and
images_bench.sh hands fovea, so both run the same network. --fp16 runs it in half precision,
channels-last, with cudnn.benchmark on (as a user tuning it would). The stages are timed as the
tutorial profiles them: load (open + decode), preprocess (split, transforms, upload), infer (the
network, synchronized), save (denormalize, download, PNG encode and write; --null skips the encode
and the write). The first image runs once untimed first (CUDA context, cuDNN's algorithm choice).

Prints one JSON line: images, seconds (first load to last save), images_per_second, stage_ms (mean
per image).

    python3 bench/pipeline/baseline_images.py AB_DIR --model unet_256 --out OUT --fp16 [--limit 500]
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
from PIL import Image
from torchvision import transforms

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import compare_torch  # noqa: E402  (the seeded models fovea runs from the exported ONNX files)
import export_torchvision as tv_export  # noqa: E402

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
STAGES = ("load", "preprocess", "infer", "save")


def list_images(folder):
    """Every image under `folder`, recursively, in sorted order (fovea's order)."""
    paths = []
    for root, _, files in os.walk(folder):
        paths += [os.path.join(root, f) for f in files if f.lower().endswith(IMAGE_SUFFIXES)]
    return sorted(paths)


class Generator:
    """The U-Net and its pix2pix transforms: an AB image to the generated image (PIL in, PIL out)."""

    def __init__(self, name, device, dtype):
        self.device, self.dtype = device, dtype
        _, _, height, width = tv_export.INPUT_SHAPES[name]
        net, _ = compare_torch.build(name)
        self.net = net.to(device, dtype).eval()
        self.channels_last = dtype == torch.float16
        if self.channels_last:
            self.net = self.net.to(memory_format=torch.channels_last)
        self.transform = transforms.Compose([
            transforms.Resize((height, width), interpolation=transforms.InterpolationMode.BICUBIC),
            transforms.ToTensor(),
            transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
        ])

    def preprocess(self, ab):
        """The A half (left) of the AB image -> the network input [1, 3, H, W] on the device."""
        w, h = ab.size
        x = self.transform(ab.crop((0, 0, w // 2, h))).unsqueeze(0).to(self.device, self.dtype)
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last else x

    def infer(self, x):
        with torch.inference_mode():
            y = self.net(x)
        if self.device == "cuda":
            torch.cuda.synchronize()  # so that the GPU's time is counted here, not in the download
        return y

    @staticmethod
    def to_image(y):
        """tanh output [1, 3, H, W] -> uint8 RGB: (x + 1) / 2 * 255, clamped, rounded to nearest."""
        pixels = (y[0].float().cpu().numpy().transpose(1, 2, 0) + 1.0) / 2.0 * 255.0
        return Image.fromarray(np.rint(np.clip(pixels, 0.0, 255.0)).astype(np.uint8))


def output_path(out_dir, in_dir, path):
    """OUT/<the input's path under IN, with .png>: the output tree mirrors the input's."""
    return os.path.join(out_dir, os.path.splitext(os.path.relpath(path, in_dir))[0] + ".png")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", help="folder of AB images (recursive)")
    parser.add_argument("--model", default="unet_256", choices=tv_export.GENERATOR)
    parser.add_argument("--out", help="folder for the PNGs; required without --null")
    parser.add_argument("--null", action="store_true", help="no PNG encode and no write")
    parser.add_argument("--fp16", action="store_true", help="half precision, channels-last")
    parser.add_argument("--limit", type=int, default=0, help="the first N images only (0: all)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: to test the script")
    args = parser.parse_args()
    if not args.null and not args.out:
        parser.error("--out is required without --null")
    paths = list_images(args.dir)
    if args.limit:
        paths = paths[: args.limit]
    if not paths:
        sys.exit(f"{args.dir}: no images")
    if args.out:
        if os.path.realpath(args.out) == os.path.realpath(args.dir):
            sys.exit(f"--out {args.out} is the input folder")
        os.makedirs(args.out, exist_ok=True)
    dtype = torch.float16 if args.fp16 else torch.float32
    torch.backends.cudnn.benchmark = True  # one input shape
    generator = Generator(args.model, args.device, dtype)

    # Untimed: CUDA context, cuDNN's algorithm choice, the allocator's first blocks.
    with Image.open(paths[0]) as first:
        generator.to_image(generator.infer(generator.preprocess(first.convert("RGB"))))

    totals = dict.fromkeys(STAGES, 0.0)
    start = time.perf_counter()
    for path in paths:
        t0 = time.perf_counter()
        with Image.open(path) as image:
            ab = image.convert("RGB")
        t1 = time.perf_counter()
        x = generator.preprocess(ab)
        t2 = time.perf_counter()
        y = generator.infer(x)
        t3 = time.perf_counter()
        out = generator.to_image(y)
        if not args.null:
            target = output_path(args.out, args.dir, path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            out.save(target)
        t4 = time.perf_counter()
        for stage, seconds in zip(STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            totals[stage] += seconds
    elapsed = time.perf_counter() - start
    print(json.dumps({"model": args.model, "device": args.device, "precision": "fp16" if args.fp16 else "fp32",
                      "sink": "null" if args.null else "png", "images": len(paths), "seconds": round(elapsed, 3),
                      "images_per_second": round(len(paths) / elapsed, 2),
                      "stage_ms": {s: round(t / len(paths) * 1e3, 3) for s, t in totals.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
