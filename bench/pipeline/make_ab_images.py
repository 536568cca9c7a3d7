#!/usr/bin/env python3
"""Synthetic image folders for images_bench.sh (issue 21), deterministic for a seed:

  - pix2pix "AB" JPEGs (--count, default 2000): each 2W x H (512x256 for --size 256x256), A on the
    left is a synthetic scene, B on the right its edge map (dark edges on white, the Sobel magnitude
    of A's shapes before the noise): the layout of pix2pix's aligned datasets, and what
    `fovea images --split-ab a` and baseline_images.py split;
  - "photos" (--photos, default 0): JPEGs of --photo-size (1920x1080) with more and larger objects,
    for the detector case.

A scene is a two-colour gradient, a low-frequency wave texture, random ellipses, rectangles and
triangles, and Gaussian noise, so that the JPEGs do not compress trivially: their size per pixel is
close to a camera's at that quality (the decode ceilings in MB/s depend on it). JPEG quality 95,
4:2:0, baseline (not progressive: the GPU decoders' fast path). Each image's random stream is seeded
by (seed, kind, index), so the files do not depend on --jobs or on which other images were made.

    python3 bench/pipeline/make_ab_images.py OUT_DIR --count 2000 [--size 256x256] [--seed 0]
    python3 bench/pipeline/make_ab_images.py OUT_DIR --count 0 --photos 500 [--photo-size 1920x1080]

Writes OUT_DIR/ab_00000.jpg... and OUT_DIR/photo_00000.jpg...; prints one JSON line (counts, bytes,
seconds).
"""

import argparse
import io
import json
import multiprocessing
import os
import statistics
import sys
import time

import numpy as np
from PIL import Image, ImageDraw

JPEG_QUALITY = 95
JPEG_SUBSAMPLING = 2  # PIL's code for 4:2:0
NOISE_SIGMA = 6.0  # 0..255 scale: sensor-like grain
# Gaussian noise by table: a uniform byte -> the normal quantile of its bin, rounded. Much cheaper
# than float noise on 1080p frames, and the same on every machine.
NOISE_TABLE = np.array([round(statistics.NormalDist(0.0, NOISE_SIGMA).inv_cdf((i + 0.5) / 256)) for i in range(256)],
                       np.int16)
BACKGROUND_SCALE = 4  # the smooth background is drawn at 1/4 size, then scaled up
KIND_AB, KIND_PHOTO = 0, 1
PREFIX = {KIND_AB: "ab", KIND_PHOTO: "photo"}


def parse_size(text):
    """'WxH' -> (w, h)."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: expected WIDTHxHEIGHT, e.g. 256x256") from None
    if w < 8 or h < 8:
        raise argparse.ArgumentTypeError(f"{text}: at least 8x8")
    return w, h


def random_colour(rng):
    return tuple(int(v) for v in rng.integers(0, 256, 3))


def background(rng, w, h):
    """A linear gradient between two colours in a random direction plus two low-frequency waves, as a
    PIL image: drawn at 1/BACKGROUND_SCALE of the size (it is smooth) and scaled up bilinearly."""
    sw, sh = max(w // BACKGROUND_SCALE, 2), max(h // BACKGROUND_SCALE, 2)
    y, x = np.mgrid[0:sh, 0:sw].astype(np.float32)
    angle = rng.uniform(0, 2 * np.pi)
    t = x * np.cos(angle) + y * np.sin(angle)
    t = (t - t.min()) / max(float(t.max() - t.min()), 1.0)
    c0, c1 = (np.array(random_colour(rng), np.float32) for _ in range(2))
    image = c0 * (1 - t[..., None]) + c1 * t[..., None]
    for _ in range(2):
        fx, fy = rng.uniform(0.5, 4.0, 2) * 2 * np.pi / np.array([sw, sh], np.float32)
        wave = np.sin(x * fx + y * fy + rng.uniform(0, 2 * np.pi)) * rng.uniform(8, 20)
        image += wave[..., None]
    small = Image.fromarray(np.clip(image, 0, 255).astype(np.uint8))
    return small.resize((w, h), Image.BILINEAR)


def draw_shapes(rng, canvas, count, min_frac, max_frac):
    """`count` ellipses, rectangles and triangles, each min_frac..max_frac of the shorter side."""
    w, h = canvas.size
    draw = ImageDraw.Draw(canvas)
    side = min(w, h)
    for _ in range(count):
        sw, sh = (rng.uniform(min_frac, max_frac, 2) * side).astype(int) + 2
        x0, y0 = int(rng.integers(-sw // 2, w - sw // 2)), int(rng.integers(-sh // 2, h - sh // 2))
        box = (x0, y0, x0 + int(sw), y0 + int(sh))
        shape = rng.integers(0, 3)
        outline = random_colour(rng) if rng.uniform() < 0.5 else None
        if shape == 0:
            draw.ellipse(box, fill=random_colour(rng), outline=outline, width=2)
        elif shape == 1:
            draw.rectangle(box, fill=random_colour(rng), outline=outline, width=2)
        else:
            points = [(int(rng.integers(box[0], box[2])), int(rng.integers(box[1], box[3]))) for _ in range(3)]
            draw.polygon(points, fill=random_colour(rng), outline=outline)


def scene(rng, w, h, shapes, min_frac, max_frac):
    """(noisy scene, clean scene) as uint8 H x W x 3 arrays."""
    canvas = background(rng, w, h)
    draw_shapes(rng, canvas, shapes, min_frac, max_frac)
    clean = np.asarray(canvas)
    noisy = clean.astype(np.int16)
    noisy += NOISE_TABLE[rng.integers(0, 256, clean.shape, dtype=np.uint8)]
    return np.clip(noisy, 0, 255).astype(np.uint8), clean


def edge_map(rgb):
    """Dark edges on white: 255 - the Sobel gradient magnitude of the luma, scaled and clipped."""
    luma = rgb.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
    p = np.pad(luma, 1, mode="edge")
    gx = (p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[1:-1, :-2] + p[2:, :-2])
    gy = (p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[:-2, 1:-1] + p[:-2, 2:])
    edges = 255 - np.clip(np.hypot(gx, gy) * 0.5, 0, 255)
    return np.repeat(edges.astype(np.uint8)[..., None], 3, axis=2)


def make_image(kind, index, seed, size):
    """The image's pixels: AB (A | edges of A) or a photo."""
    rng = np.random.default_rng([seed, kind, index])
    w, h = size
    if kind == KIND_AB:
        a, clean = scene(rng, w, h, shapes=int(rng.integers(4, 10)), min_frac=0.1, max_frac=0.5)
        return np.concatenate([a, edge_map(clean)], axis=1)
    photo, _ = scene(rng, w, h, shapes=int(rng.integers(3, 9)), min_frac=0.08, max_frac=0.45)
    return photo


def write_image(job):
    """Makes and writes one image; returns its size in bytes."""
    kind, index, seed, size, out_dir = job
    buffer = io.BytesIO()
    Image.fromarray(make_image(kind, index, seed, size)).save(
        buffer, format="JPEG", quality=JPEG_QUALITY, subsampling=JPEG_SUBSAMPLING, progressive=False)
    path = os.path.join(out_dir, f"{PREFIX[kind]}_{index:05d}.jpg")
    with open(path, "wb") as f:
        f.write(buffer.getvalue())
    return buffer.tell()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--count", type=int, default=2000, help="AB images (default 2000)")
    parser.add_argument("--size", type=parse_size, default=(256, 256),
                        help="each half's WIDTHxHEIGHT (default 256x256: 512x256 files)")
    parser.add_argument("--photos", type=int, default=0, help="1080p-style photos (default 0)")
    parser.add_argument("--photo-size", type=parse_size, default=(1920, 1080), help="default 1920x1080")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="processes (default: the cores)")
    args = parser.parse_args()
    if args.count < 0 or args.photos < 0 or args.count + args.photos == 0:
        parser.error("nothing to make: --count and --photos are >= 0, one of them > 0")
    os.makedirs(args.out_dir, exist_ok=True)
    jobs = ([(KIND_AB, i, args.seed, args.size, args.out_dir) for i in range(args.count)] +
            [(KIND_PHOTO, i, args.seed, args.photo_size, args.out_dir) for i in range(args.photos)])
    start = time.perf_counter()
    with multiprocessing.Pool(max(1, args.jobs)) as pool:
        sizes = pool.map(write_image, jobs, chunksize=8)
    ab_bytes, photo_bytes = sum(sizes[:args.count]), sum(sizes[args.count:])
    print(json.dumps({"out_dir": args.out_dir, "seed": args.seed,
                      "ab": {"count": args.count, "size": f"{2 * args.size[0]}x{args.size[1]}",
                             "bytes": ab_bytes, "mean_bytes": round(ab_bytes / max(args.count, 1))},
                      "photos": {"count": args.photos, "size": f"{args.photo_size[0]}x{args.photo_size[1]}",
                                 "bytes": photo_bytes, "mean_bytes": round(photo_bytes / max(args.photos, 1))},
                      "seconds": round(time.perf_counter() - start, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
