#!/usr/bin/env python3
"""Trained weights for export_torchvision's models, without downloading any.

The float16 criterion of the CUDA executor (issue 5: segmentation argmax agreeing on 99.5% of
pixels, outputs within 2e-2 of float32) is about trained networks: their class scores are far apart
where the input is clear. Seeded random weights give near-ties everywhere, so float16 rounding
flips the argmax on a third of the pixels, for PyTorch as for fovea. torchvision's pretrained
weights cannot be downloaded on the GPU machine, so each network is trained here, briefly and from
scratch, on a synthetic task it can learn in a few hundred steps:

  images   up to four filled rectangles and ellipses on a textured background; a shape's kind
           (1..20) sets its colour and whether it is a rectangle or an ellipse;
  segment  the kind of every pixel (0: background), for the 21-class segmentation heads;
  classify the kind of the largest shape (0..19 of the 1000 logits);
  detect   every shape's box and kind, through torchvision's own SSD loss (anchor matching), or
           for the DetectNet-style grid detector (export_torchvision.DetectNetV2, here with a class
           per kind) DetectNet_v2's coverage and box targets on its grid (detectnet_targets).

The U-Net generator is not trained (its criterion, the output error, holds with random weights).

  trained(name) -> (model in eval mode, output names), as export_torchvision.build(name); None for
                   the U-Net (the caller keeps its seeded weights)
  FOVEA_TRAINED_CACHE=DIR  keeps each trained state in DIR/NAME-STEPSsteps.pt and reuses it, so a
                   GPU call can train while it builds (`python3 train_synthetic.py NAME...`) and
                   the accuracy scripts then start from the trained weights
  test_input(name) -> one seeded synthetic image batch at INPUT_SHAPES[name], as the model's input
"""

import math
import os
import sys

import torch
import torchvision

import export_torchvision as tv_export

KINDS = 20
STEPS = 300
# SSD300's VGG-16 has no BatchNorm and learns slowly from scratch: after 300 steps its loss was 5.5
# and its mAP 3.5 points (call 74), too weak a network for the int8 comparison to mean anything.
DETECTOR_STEPS = {"ssd300_vgg16": 1500, "detectnet_resnet34": 1000}
# DetectNet_v2's box encoding as DeepStream's parser, and fovea's `detectnet` parser, decode it with
# PeopleNet's values (post/detect_post.h), and the side of the pictures the grid detector trains at.
DETECTNET_NORM = 35.0
DETECTNET_OFFSET = 0.5
DETECTNET_SIDE = 384
TRAIN_SEED = 3
TEST_SEED = 4
# ImageNet's normalization, which torchvision's classification and segmentation models expect.
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def palette():
    """A distinct colour per kind (index 0 unused): hues around the circle at two brightnesses."""
    colours = [(0.0, 0.0, 0.0)]
    for k in range(KINDS):
        hue = (k % 10) / 10.0
        value = 0.95 if k < 10 else 0.55
        rgb = [value * (0.5 + 0.5 * math.cos(2 * math.pi * (hue - shift))) for shift in (0.0, 1 / 3, 2 / 3)]
        colours.append(tuple(rgb))
    return torch.tensor(colours)


def synthetic_batch(n, h, w, generator, device):
    """Images in [0, 1] [n, 3, h, w], labels [n, h, w] (kind per pixel), and per image the shapes'
    boxes [k, 4] (x1, y1, x2, y2 in pixels) and kinds [k]."""
    colours = palette().to(device)
    g = generator
    images = torch.rand(n, 3, h, w, generator=g, device=device) * 0.25 + 0.1  # textured background
    labels = torch.zeros(n, h, w, dtype=torch.long, device=device)
    ys = torch.arange(h, device=device).view(h, 1).float()
    xs = torch.arange(w, device=device).view(1, w).float()
    boxes, kinds = [], []
    for i in range(n):
        count = int(torch.randint(1, 5, (1,), generator=g, device=device))
        image_boxes, image_kinds = [], []
        for _ in range(count):
            kind = int(torch.randint(1, KINDS + 1, (1,), generator=g, device=device))
            size = torch.rand(2, generator=g, device=device) * 0.35 + 0.15
            centre = torch.rand(2, generator=g, device=device) * (1 - size) + size / 2
            cx, cy = float(centre[0]) * w, float(centre[1]) * h
            rx, ry = float(size[0]) * w / 2, float(size[1]) * h / 2
            if kind % 2 == 0:
                inside = ((xs - cx).abs() <= rx) & ((ys - cy).abs() <= ry)
            else:
                inside = ((xs - cx) / rx) ** 2 + ((ys - cy) / ry) ** 2 <= 1.0
            shade = torch.rand(1, generator=g, device=device) * 0.1 - 0.05
            images[i][:, inside] = (colours[kind].view(3, 1) + shade).clamp(0, 1)
            labels[i][inside] = kind
            image_boxes.append([cx - rx, cy - ry, cx + rx, cy + ry])
            image_kinds.append(kind)
        boxes.append(torch.tensor(image_boxes, device=device).clamp(min=0).clamp(max=max(w, h) - 1))
        kinds.append(torch.tensor(image_kinds, device=device))
    return images, labels, boxes, kinds


def normalized(images):
    return (images - MEAN.to(images.device)) / STD.to(images.device)


def largest_kind(labels):
    """Per image, the kind covering the most pixels (0-based for the classifier's logits)."""
    counts = torch.stack([torch.bincount(l.flatten(), minlength=KINDS + 1)[1:] for l in labels])
    return counts.argmax(dim=1)


def cached(name, steps, model, train):
    """The model trained by train(model), or its state from FOVEA_TRAINED_CACHE when an earlier
    process trained it for the same number of steps; in eval mode on the CPU."""
    folder = os.environ.get("FOVEA_TRAINED_CACHE")
    path = os.path.join(folder, f"{name}-{steps}steps.pt") if folder else None
    if path and os.path.exists(path):
        model.load_state_dict(torch.load(path, map_location="cpu"))
        print(f"  {name}: trained weights from {path}", flush=True)
    else:
        train(model)
        if path:
            os.makedirs(folder, exist_ok=True)
            torch.save(model.state_dict(), path + ".part")
            os.replace(path + ".part", path)  # whole files only, for a reader in another process
    return model.eval().cpu()


def train_dense(model, name, batch, size, loss_of):
    return cached(name, STEPS, model, lambda m: train_dense_steps(m, name, batch, size, loss_of))


def train_dense_steps(model, name, batch, size, loss_of):
    device = "cuda"
    model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    g = torch.Generator(device=device).manual_seed(TRAIN_SEED)
    for step in range(STEPS):
        images, labels, _, _ = synthetic_batch(batch, size, size, g, device)
        loss = loss_of(model(normalized(images)), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 100 == 0 or step == STEPS - 1:
            print(f"  {name} step {step}: loss {loss.item():.4f}", flush=True)


def train_detector(name):
    """The whole torchvision SSD trained with its own loss, then the exported backbone + head."""
    torch.manual_seed(tv_export.WEIGHT_SEED)
    ssd = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None)
    return cached(name, DETECTOR_STEPS.get(name, STEPS), ssd, lambda m: train_detector_steps(m, name))


def train_detector_steps(ssd, name):
    size = tv_export.INPUT_SHAPES[name][2]
    device = "cuda"
    ssd.to(device).train()
    optimizer = torch.optim.AdamW(ssd.parameters(), lr=5e-4, weight_decay=1e-4)
    g = torch.Generator(device=device).manual_seed(TRAIN_SEED)
    steps = DETECTOR_STEPS.get(name, STEPS)
    for step in range(steps):
        images, _, boxes, kinds = synthetic_batch(16, size, size, g, device)
        targets = [{"boxes": b, "labels": k} for b, k in zip(boxes, kinds)]
        losses = ssd(list(images), targets)
        loss = sum(losses.values())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 100 == 0 or step == steps - 1:
            print(f"  {name} step {step}: loss {loss.item():.4f}", flush=True)


def detectnet_targets(boxes, kinds, grid_h, grid_w, stride, device):
    """DetectNet_v2's training targets for one picture's shapes (boxes [k, 4] in pixels, kinds [k]):
    coverage [KINDS, gh, gw], 1 in the channel of a shape's kind at the grid cells whose centre lies
    in the middle half of its box (and always at the cell holding the box's centre); bbox
    [4 * KINDS, gh, gw], at those cells the offsets DeepStream's parser turns back into the box:
    o1 = cx - x1 / norm, o2 = cy - y1 / norm, o3 = x2 / norm - cx, o4 = y2 / norm - cy, with
    cx = (gx * stride + offset) / norm (cy likewise). A later shape, drawn over an earlier one,
    takes the cells they share."""
    coverage = torch.zeros(KINDS, grid_h, grid_w, device=device)
    bbox = torch.zeros(4 * KINDS, grid_h, grid_w, device=device)
    gy = torch.arange(grid_h, device=device).view(-1, 1).float()
    gx = torch.arange(grid_w, device=device).view(1, -1).float()
    cell_x, cell_y = (gx + 0.5) * stride, (gy + 0.5) * stride
    cx = (gx * stride + DETECTNET_OFFSET) / DETECTNET_NORM
    cy = (gy * stride + DETECTNET_OFFSET) / DETECTNET_NORM
    for (x1, y1, x2, y2), kind in zip(boxes.tolist(), kinds.tolist()):
        mid_x, mid_y = (x1 + x2) / 2, (y1 + y2) / 2
        inside = ((cell_x - mid_x).abs() <= (x2 - x1) / 4) & ((cell_y - mid_y).abs() <= (y2 - y1) / 4)
        inside[min(int(mid_y // stride), grid_h - 1), min(int(mid_x // stride), grid_w - 1)] = True
        c = kind - 1
        coverage[:, inside] = 0
        coverage[c][inside] = 1
        offsets = (cx - x1 / DETECTNET_NORM, cy - y1 / DETECTNET_NORM, x2 / DETECTNET_NORM - cx,
                   y2 / DETECTNET_NORM - cy)
        for k, offset in enumerate(offsets):
            bbox[4 * c + k][inside] = offset.expand(grid_h, grid_w)[inside]
    return coverage, bbox


def train_grid_detector(name):
    """The DetectNet-style model with a class per kind, trained on pictures of DETECTNET_SIDE
    (pixels / 255 in, as the flows' `--normalize none` gives them)."""
    torch.manual_seed(tv_export.WEIGHT_SEED)
    model = tv_export.DetectNetV2(classes=KINDS)
    return cached(name, DETECTOR_STEPS[name], model, lambda m: train_grid_detector_steps(m, name))


def train_grid_detector_steps(model, name):
    device = "cuda"
    model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    g = torch.Generator(device=device).manual_seed(TRAIN_SEED)
    grid = DETECTNET_SIDE // model.STRIDE
    # Few cells are positive in each class's channel: weigh them up, as DetectNet_v2's cost does.
    positive_weight = torch.tensor(10.0, device=device)
    for step in range(DETECTOR_STEPS[name]):
        images, _, boxes, kinds = synthetic_batch(16, DETECTNET_SIDE, DETECTNET_SIDE, g, device)
        targets = [detectnet_targets(b, k, grid, grid, model.STRIDE, device) for b, k in zip(boxes, kinds)]
        coverage = torch.stack([t[0] for t in targets])
        bbox = torch.stack([t[1] for t in targets])
        coverage_logits, bbox_out = model.heads(images)
        coverage_loss = torch.nn.functional.binary_cross_entropy_with_logits(
            coverage_logits, coverage, pos_weight=positive_weight)
        covered = coverage.repeat_interleave(4, dim=1)  # each class's four offsets where it covers
        box_loss = (torch.nn.functional.smooth_l1_loss(bbox_out, bbox, reduction="none") * covered).sum()
        loss = coverage_loss + box_loss / covered.sum().clamp(min=1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 100 == 0 or step == DETECTOR_STEPS[name] - 1:
            print(f"  {name} step {step}: loss {loss.item():.4f}", flush=True)


def trained(name):
    """The model trained on the synthetic task, in eval mode, and its ONNX output names; None for a
    model this does not train."""
    torch.backends.cuda.matmul.allow_tf32 = True  # training only; the comparisons turn TF32 off
    torch.backends.cudnn.allow_tf32 = True
    if name in tv_export.DETECTION:
        # eval() on the wrapper too: export restores its mode, training, onto every child otherwise.
        return tv_export.SSDBackboneHead(train_detector(name)).eval(), ["bbox_regression", "cls_logits"]
    if name in tv_export.GRID_DETECTION:
        return train_grid_detector(name), ["output_cov", "output_bbox"]
    if name in tv_export.SEGMENTATION:
        model, outputs = tv_export.build(name)
        return train_dense(model, name, 8, 256, torch.nn.functional.cross_entropy), outputs
    if name in tv_export.CLASSIFICATION:
        model, outputs = tv_export.build(name)
        loss = lambda logits, labels: torch.nn.functional.cross_entropy(logits, largest_kind(labels))  # noqa: E731
        return train_dense(model, name, 32, 224, loss), outputs
    return None


def test_input(name):
    """One seeded synthetic image at the model's export shape, normalized as the model expects."""
    n, _, h, w = tv_export.INPUT_SHAPES[name]
    g = torch.Generator(device="cpu").manual_seed(TEST_SEED)
    images, _, _, _ = synthetic_batch(n, h, w, g, "cpu")
    if name in tv_export.DETECTION:
        torch.manual_seed(tv_export.WEIGHT_SEED)
        ssd = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None)
        return torch.stack([ssd.transform.normalize(image) for image in images])
    if name == "unet_256":
        return images * 2 - 1  # the generator's [-1, 1] range
    if name in tv_export.GRID_DETECTION:
        return images  # pixels / 255, the flows' `--normalize none`
    return normalized(images)


if __name__ == "__main__":
    if not os.environ.get("FOVEA_TRAINED_CACHE") or len(sys.argv) < 2:
        sys.exit("usage: FOVEA_TRAINED_CACHE=DIR train_synthetic.py NAME... (trains each into DIR)")
    for model_name in sys.argv[1:]:
        if trained(model_name) is None:
            sys.exit(f"train_synthetic.py: {model_name} is not trained on the synthetic task")
