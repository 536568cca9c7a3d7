#!/usr/bin/env python3
"""Models no issue names, as a user brings them, through fovea against PyTorch on the GPU machine:

  brought_models.py --fovea FOVEA --out DIR [--models a,b] [--speed] [--before OLD_FOVEA]

Each model is built with seeded weights (no download): Hugging Face's SegFormer-B0, DETR-R50 (timm
backbone) and ViT-base, timm's DeiT-S and ConvNeXt-nano, torchvision's Swin-V2-T, MaxViT-T, MNASNet,
RegNetX-400MF, MobileNet-V3-S and R3D-18 (video), exported with the TorchScript exporter (opset 17),
and torchvision and Hugging Face models exported by the dynamo exporter with a dynamic batch (PyTorch
2.9's default). Check (always): `fovea model run` on the CPU (fp32) and on CUDA (fp32, fp16) on one
seeded batch of 2, each output as max|d| / max|ref| against PyTorch float32 (TF32 off). With
--speed: `fovea model bench --precision fp16` at the batch (8 at 512x512 for SegFormer and DETR, 64
at 224x224 otherwise) against PyTorch eager float16 channels-last (compare_torch.torch_perf), and
with --before, the same bench of an earlier fovea binary, the two alternating over two rounds.
A model that fails anywhere is recorded with its error; the others go on.
Results: DIR/brought.json, one line per model on stdout.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import traceback

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import calibrate_batchnorm_, rel_error, torch_perf  # noqa: E402


class Outputs(torch.nn.Module):
    """A model's dict or ModelOutput as a tuple of the named tensors (one tensor alone as itself)."""

    def __init__(self, net, keys):
        super().__init__()
        self.net, self.keys = net, keys

    def forward(self, x):
        out = self.net(x)
        got = [out[k] for k in self.keys]
        return tuple(got) if len(got) > 1 else got[0]


def torchvision_model(name):
    torch.manual_seed(0)
    if name.startswith(("deeplabv3", "fcn", "lraspp")):
        net = torchvision.models.get_model(name, weights=None, weights_backbone=None, aux_loss=False)
        return Outputs(net.eval(), ["out"]).eval()
    net = torchvision.models.get_model(name, weights=None).eval()
    for module in net.modules():  # heads torchvision starts at zero would compare nothing
        if isinstance(module, torch.nn.Linear) and not module.weight.any():
            torch.nn.init.normal_(module.weight, std=0.02)
    return net


def hugging_face_model(kind):
    import transformers as t
    torch.manual_seed(0)
    if kind == "segformer":
        net, keys = t.SegformerForSemanticSegmentation(t.SegformerConfig(num_labels=19)), ["logits"]
    elif kind == "detr":
        config = t.DetrConfig(use_timm_backbone=True, use_pretrained_backbone=False, backbone="resnet50")
        net, keys = t.DetrForObjectDetection(config), ["logits", "pred_boxes"]
    else:
        net, keys = t.ViTForImageClassification(t.ViTConfig(num_labels=1000)), ["logits"]
    return Outputs(net.eval(), keys).eval()


def timm_model(name):
    import timm
    torch.manual_seed(0)
    return timm.create_model(name, pretrained=False).eval()


# name: (builder, side, speed batch, exporter)
MODELS = {
    "hf_segformer": (lambda: hugging_face_model("segformer"), 512, 8, "torchscript"),
    "hf_detr": (lambda: hugging_face_model("detr"), 512, 8, "torchscript"),
    "hf_vit": (lambda: hugging_face_model("vit"), 224, 64, "torchscript"),
    "timm_deit_s": (lambda: timm_model("deit_small_patch16_224"), 224, 64, "torchscript"),
    "timm_convnext_nano": (lambda: timm_model("convnext_nano"), 224, 64, "torchscript"),
    "tv_swin_v2_t": (lambda: torchvision_model("swin_v2_t"), 256, 64, "torchscript"),
    "tv_maxvit_t": (lambda: torchvision_model("maxvit_t"), 224, 64, "torchscript"),
    "tv_mnasnet1_0": (lambda: torchvision_model("mnasnet1_0"), 224, 64, "torchscript"),
    "tv_regnet_x_400mf": (lambda: torchvision_model("regnet_x_400mf"), 224, 64, "torchscript"),
    "tv_mobilenet_v3_small": (lambda: torchvision_model("mobilenet_v3_small"), 224, 64, "torchscript"),
    "tv_r3d_18": (lambda: torchvision_model("r3d_18"), 112, 8, "torchscript"),
    "dyn_resnet18": (lambda: torchvision_model("resnet18"), 224, 64, "dynamo"),
    "dyn_vit_b_16": (lambda: torchvision_model("vit_b_16"), 224, 64, "dynamo"),
    "dyn_swin_t": (lambda: torchvision_model("swin_t"), 224, 64, "dynamo"),
    "dyn_convnext_tiny": (lambda: torchvision_model("convnext_tiny"), 224, 64, "dynamo"),
    "dyn_efficientnet_b0": (lambda: torchvision_model("efficientnet_b0"), 224, 64, "dynamo"),
    "dyn_deeplabv3_mobilenet": (lambda: torchvision_model("deeplabv3_mobilenet_v3_large"), 256, 8, "dynamo"),
    "dyn_hf_segformer": (lambda: hugging_face_model("segformer"), 512, 8, "dynamo"),
}
CHECK_BATCH = 2


def input_shape(name, side, batch):
    # R3D-18 reads clips: 8 frames of side x side.
    return (batch, 3, 8, side, side) if name == "tv_r3d_18" else (batch, 3, side, side)


def export(net, shape, path, exporter):
    x = torch.randn(*shape)
    if exporter == "torchscript":
        torch.onnx.export(net, (x,), path, dynamo=False, opset_version=17, input_names=["input"],
                          do_constant_folding=True, dynamic_axes={"input": {0: "batch"}})
        return exporter
    batch = torch.export.Dim("batch", min=1, max=1024)
    torch.onnx.export(net, (x,), path, dynamo=True, input_names=["input"], external_data=False,
                      dynamic_shapes=({0: batch},))
    return "dynamo, dynamic batch"


def fovea_outputs(fovea, path, x_path, device, precision, out_dir):
    """fovea's outputs (sorted by name) or an error string."""
    os.makedirs(out_dir, exist_ok=True)
    cmd = [fovea, "model", "run", path, "--device", device, "--precision", precision, "--input",
           f"input={x_path}", "--output-dir", out_dir]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "timeout 300 s"
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
        return f"exit {proc.returncode}: {' | '.join(lines[-2:])[:600]}"
    names = sorted(f for f in os.listdir(out_dir) if f.endswith(".npy"))
    return [np.load(os.path.join(out_dir, f)) for f in names]


def check(fovea, net, name, path, shape, work):
    """max|d| / max|ref| per output, per device and precision (outputs matched by shape)."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    x_path = os.path.join(work, name + "_input.npy")
    np.save(x_path, x.numpy())
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.inference_mode():
        ref = net.float().cuda()(x.cuda())
    refs = [r.float().cpu().numpy() for r in (ref if isinstance(ref, tuple) else (ref,))]
    net.cpu()
    errors = {}
    for device, precision in [("cpu", "fp32"), ("cuda", "fp32"), ("cuda", "fp16")]:
        key = f"{device} {precision}"
        got = fovea_outputs(fovea, path, x_path, device, precision, os.path.join(work, name, key.replace(" ", "_")))
        if isinstance(got, str):
            errors[key] = got
            continue
        per_output = []
        for r in refs:
            same_shape = [g for g in got if g.shape == r.shape]
            per_output.append(min(rel_error(r, g) for g in same_shape) if same_shape
                              else f"no output of shape {list(r.shape)}")
        errors[key] = per_output if len(per_output) > 1 else per_output[0]
    return errors


def bench(fovea, path, shape, tag):
    batch = shape[0]
    dims = "x".join(str(d) for d in shape)
    cmd = [fovea, "model", "bench", path, "--precision", "fp16", "--batch", str(batch), "--shape",
           f"input={dims}", "--seconds", "1.5", "--engine-cache", f"/tmp/brought_engines_{tag}", "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return json.loads(proc.stdout)[0]["items_per_second"] if proc.returncode == 0 else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fovea", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--speed", action="store_true", help="also time fovea and PyTorch at the batch")
    parser.add_argument("--before", help="an earlier fovea binary, timed beside --fovea")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    work = os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)
    results = []
    for name in args.models.split(","):
        builder, side, batch, exporter = MODELS[name]
        entry = {"model": name}
        start = time.perf_counter()
        try:
            net = builder()
            if len(input_shape(name, side, 1)) == 4:
                calibrate_batchnorm_(net, input_shape(name, side, 1))
            path = os.path.join(work, name + ".onnx")
            entry["exporter"] = export(net, input_shape(name, side, 1), path, exporter)
            entry["check"] = check(args.fovea, net, name, path, input_shape(name, side, CHECK_BATCH), work)
            if args.speed and len(input_shape(name, side, 1)) != 4:
                entry["speed"] = "not timed: torch_perf feeds images, not clips"
            elif args.speed:
                shape = input_shape(name, side, batch)
                entry["torch_fp16"] = torch_perf(net, batch, side, side, 20, 1.5)["items_per_second"]
                rounds = [{"after": bench(args.fovea, path, shape, "after"),
                           "before": bench(args.before, path, shape, "before") if args.before else None}
                          for _ in range(2)]
                entry["fovea_fp16"] = rounds
        except Exception as e:  # noqa: BLE001 - a model that fails is a result, not the end of the run
            entry["error"] = f"{type(e).__name__}: {str(e)[:400]}"
            traceback.print_exc()
        entry["seconds"] = round(time.perf_counter() - start, 1)
        results.append(entry)
        print(json.dumps(entry), flush=True)
        torch.cuda.empty_cache()
        with open(os.path.join(args.out, "brought.json"), "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
