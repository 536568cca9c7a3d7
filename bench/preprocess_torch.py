#!/usr/bin/env python3
"""PyTorch peer of bench/preprocess_bench: the same batch (8 x NV12 1920x1080 -> 3x544x960 FP16
NCHW) as the equivalent sequence of eager PyTorch ops on device tensors: NV12 -> RGB (nearest
chroma, BT.601 limited, clamped), F.interpolate bilinear (half-pixel, no antialias, as fovea's
OpenCV geometry), normalize, permute/contiguous, half. Timed with CUDA events after warm-up.

With --fovea-json (written by `preprocess_bench --json`) it also prints fovea's speedup, so one
device call runs both:
  build/bench/preprocess_bench --json /tmp/pre.json && python bench/preprocess_torch.py --fovea-json /tmp/pre.json
"""
import argparse
import json

import torch
import torch.nn.functional as F


def nv12_to_rgb_nhwc(nv12: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """[N, H*3/2, W] uint8 -> [N, H, W, 3] float on the 0..255 scale (BT.601 limited range)."""
    y = nv12[:, :height, :].float()
    uv = nv12[:, height:, :].view(nv12.shape[0], height // 2, width // 2, 2).float()
    uv = uv.repeat_interleave(2, dim=1).repeat_interleave(2, dim=2)  # nearest chroma
    luma = (y - 16.0) * (255.0 / 219.0)
    cb = (uv[..., 0] - 128.0) * (255.0 / 224.0)
    cr = (uv[..., 1] - 128.0) * (255.0 / 224.0)
    r = luma + 1.402 * cr
    g = luma - 0.344136 * cb - 0.714136 * cr
    b = luma + 1.772 * cb
    return torch.stack((r, g, b), dim=-1).clamp_(0.0, 255.0)


def preprocess(nv12, height, width, out_h, out_w, mean, std):
    rgb = nv12_to_rgb_nhwc(nv12, height, width)
    nchw = rgb.permute(0, 3, 1, 2)
    resized = F.interpolate(nchw, size=(out_h, out_w), mode="bilinear", align_corners=False, antialias=False)
    normalized = (resized / 255.0 - mean) / std
    return normalized.contiguous().half()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--in-size", default="1920x1080")
    parser.add_argument("--out-size", default="960x544")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--fovea-json", help="result of preprocess_bench --json, to print the speedup")
    args = parser.parse_args()
    width, height = map(int, args.in_size.split("x"))
    out_w, out_h = map(int, args.out_size.split("x"))
    device = torch.device("cuda")
    nv12 = torch.randint(0, 256, (args.batch, height * 3 // 2, width), dtype=torch.uint8, device=device)
    mean = torch.tensor([0.485, 0.456, 0.406], device=device).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device=device).view(1, 3, 1, 1)

    with torch.no_grad():
        for _ in range(5):
            out = preprocess(nv12, height, width, out_h, out_w, mean, std)
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.iters):
            out = preprocess(nv12, height, width, out_h, out_w, mean, std)
        stop.record()
        torch.cuda.synchronize()
    ms = start.elapsed_time(stop) / args.iters
    assert out.shape == (args.batch, 3, out_h, out_w) and out.dtype == torch.float16
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}: {args.batch} x NV12 {width}x{height} -> "
          f"f16 NCHW 3x{out_h}x{out_w}: {ms:.4f} ms/batch")
    if args.fovea_json:
        with open(args.fovea_json) as f:
            fovea = json.load(f)
        speedup = ms / fovea["preprocess_ms"]
        print(f"fovea fused preprocess: {fovea['preprocess_ms']:.4f} ms/batch, {speedup:.1f}x faster than PyTorch "
              f"(target >= 10x); {100 * fovea['ratio_to_copy']:.1f}% of copy bandwidth (target >= 70%)")


if __name__ == "__main__":
    main()
