#!/usr/bin/env python3
"""Export real vision models to ONNX with seeded random weights, plus PyTorch reference outputs.

Runs on the GPU machine (PyTorch, torchvision, onnx and onnxruntime are installed there); everything
here runs on the CPU in float32, so the references carry no TF32 or cuDNN algorithm noise.

For each model it writes, under --out:
  <model>.onnx            one self-contained file (opset 17, TorchScript exporter, constants folded)
  <model>.input.npy       the seeded float32 input
  <model>.output_<i>.npy  PyTorch's float32 outputs for that input, in the ONNX output order
  manifest.json           input/output names and shapes, versions, PyTorch (and onnxruntime) CPU
                          latency at a fixed thread count, and any export error

fovea's CPU executor is then checked against the .npy references (compare_outputs.py).
"""

import argparse
import collections
import json
import os
import platform
import statistics
import sys
import time
import traceback

import numpy as np
import torch
import torchvision
from torch import nn

SEGMENTATION = ["fcn_resnet50", "fcn_resnet101", "deeplabv3_resnet50"]
CLASSIFICATION = ["resnet18", "resnet50", "mobilenet_v3_large"]
DETECTION = ["ssd300_vgg16", "ssdlite320_mobilenet_v3_large"]
GRID_DETECTION = ["detectnet_resnet34"]
GENERATOR = ["unet_256"]
ALL_MODELS = SEGMENTATION + CLASSIFICATION + DETECTION + GRID_DETECTION + GENERATOR

INPUT_SHAPES = {
    **{m: (1, 3, 520, 520) for m in SEGMENTATION},
    **{m: (1, 3, 224, 224) for m in CLASSIFICATION},
    "ssd300_vgg16": (1, 3, 300, 300),
    "ssdlite320_mobilenet_v3_large": (1, 3, 320, 320),
    "detectnet_resnet34": (1, 3, 544, 960),
    "unet_256": (1, 3, 256, 256),
}

# Seeds per purpose, reset per model, so a model's weights and input do not depend on which other
# models were exported before it (--models picks any subset).
WEIGHT_SEED = 0
BATCHNORM_SEED = 1
INPUT_SEED = 2


# --- pix2pix U-Net generator ---------------------------------------------------------------------
# The architecture of pytorch-CycleGAN-and-pix2pix (models/networks.py, UnetGenerator and
# UnetSkipConnectionBlock), written out here because that repository is not installed anywhere.
# unet_256 there is UnetGenerator(3, 3, num_downs=8, ngf=64, norm_layer=BatchNorm2d,
# use_dropout=True).


class UnetSkipConnectionBlock(nn.Module):
    """One level of the U-Net: down (conv), the inner levels, up (transposed conv), and a skip."""

    def __init__(self, outer_nc, inner_nc, input_nc=None, submodule=None, outermost=False,
                 innermost=False, norm_layer=nn.BatchNorm2d, use_dropout=False):
        super().__init__()
        self.outermost = outermost
        # BatchNorm has its own shift, so the convolutions before it carry no bias (as upstream).
        use_bias = norm_layer == nn.InstanceNorm2d
        if input_nc is None:
            input_nc = outer_nc
        downconv = nn.Conv2d(input_nc, inner_nc, kernel_size=4, stride=2, padding=1, bias=use_bias)
        # inplace=True as upstream: the LeakyReLU overwrites this block's input, so the skip
        # connection concatenates LeakyReLU(x), not x. Keeping it reproduces the published network.
        downrelu = nn.LeakyReLU(0.2, True)
        downnorm = norm_layer(inner_nc)
        uprelu = nn.ReLU(True)
        upnorm = norm_layer(outer_nc)

        if outermost:
            upconv = nn.ConvTranspose2d(inner_nc * 2, outer_nc, kernel_size=4, stride=2, padding=1)
            model = [downconv, submodule, uprelu, upconv, nn.Tanh()]
        elif innermost:
            upconv = nn.ConvTranspose2d(inner_nc, outer_nc, kernel_size=4, stride=2, padding=1,
                                        bias=use_bias)
            model = [downrelu, downconv, uprelu, upconv, upnorm]
        else:
            upconv = nn.ConvTranspose2d(inner_nc * 2, outer_nc, kernel_size=4, stride=2, padding=1,
                                        bias=use_bias)
            model = [downrelu, downconv, downnorm, submodule, uprelu, upconv, upnorm]
            if use_dropout:
                model += [nn.Dropout(0.5)]
        self.model = nn.Sequential(*model)

    def forward(self, x):
        if self.outermost:
            return self.model(x)
        return torch.cat([x, self.model(x)], 1)


class UnetGenerator(nn.Module):
    """Built from the innermost level outwards; num_downs=8 takes 256x256 down to 1x1."""

    def __init__(self, input_nc, output_nc, num_downs, ngf=64, norm_layer=nn.BatchNorm2d,
                 use_dropout=False):
        super().__init__()
        block = UnetSkipConnectionBlock(ngf * 8, ngf * 8, norm_layer=norm_layer, innermost=True)
        for _ in range(num_downs - 5):
            block = UnetSkipConnectionBlock(ngf * 8, ngf * 8, submodule=block, norm_layer=norm_layer,
                                            use_dropout=use_dropout)
        block = UnetSkipConnectionBlock(ngf * 4, ngf * 8, submodule=block, norm_layer=norm_layer)
        block = UnetSkipConnectionBlock(ngf * 2, ngf * 4, submodule=block, norm_layer=norm_layer)
        block = UnetSkipConnectionBlock(ngf, ngf * 2, submodule=block, norm_layer=norm_layer)
        self.model = UnetSkipConnectionBlock(output_nc, ngf, input_nc=input_nc, submodule=block,
                                             outermost=True, norm_layer=norm_layer)

    def forward(self, x):
        return self.model(x)


def pix2pix_init_(net, gain=0.02):
    """Upstream's default init_weights(init_type='normal', init_gain=0.02)."""
    for m in net.modules():
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
            nn.init.normal_(m.weight, 0.0, gain)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0.0)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.normal_(m.weight, 1.0, gain)
            nn.init.constant_(m.bias, 0.0)


# --- DetectNet_v2-style grid detector (PeopleNet's architecture) --------------------------------
# NVIDIA's PeopleNet is DetectNet_v2 on a ResNet-34: the trunk to stride 16, then two 1x1
# convolutions over the 34x60 grid of a 544x960 frame, per class a coverage (sigmoid) and four box
# offsets. PeopleNet's classes are person, bag and face. Its weights are not public, so the
# torchvision ResNet-34 trunk stands in with seeded weights: the shapes, and so the speed, are the same.


class DetectNetV2(nn.Module):
    CLASSES = 3
    STRIDE = 16  # the trunk's: one grid cell per 16x16 pixels

    def __init__(self, classes=CLASSES):
        super().__init__()
        r = torchvision.models.resnet34(weights=None)
        self.trunk = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, r.layer1, r.layer2, r.layer3)
        channels = 256  # layer3's output
        self.coverage = nn.Conv2d(channels, classes, kernel_size=1)
        self.bbox = nn.Conv2d(channels, 4 * classes, kernel_size=1)

    def heads(self, x):
        """The coverage logits (before their sigmoid, for a training loss) and the box offsets."""
        features = self.trunk(x)
        return self.coverage(features), self.bbox(features)

    def forward(self, x):
        coverage, bbox = self.heads(x)
        return torch.sigmoid(coverage), bbox


# --- wrappers: one tensor (or a tuple of tensors) out, nothing torchvision-specific around it ----


class SegmentationOut(nn.Module):
    """torchvision's segmentation models return {'out': ..., 'aux': ...}; ONNX wants tensors."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class SSDBackboneHead(nn.Module):
    """SSD without GeneralizedRCNNTransform (resize, normalization), anchors or postprocessing.

    Mirrors the first half of torchvision's SSD.forward: backbone features, then the head, whose
    outputs are per-anchor box regressions [N, A, 4] and class logits [N, A, num_classes].
    """

    def __init__(self, ssd):
        super().__init__()
        self.backbone = ssd.backbone
        self.head = ssd.head

    def forward(self, x):
        features = self.backbone(x)
        if isinstance(features, torch.Tensor):
            features = collections.OrderedDict([("0", features)])
        head = self.head(list(features.values()))
        return head["bbox_regression"], head["cls_logits"]


def build(name):
    """The model in eval mode, and its ONNX output names."""
    torch.manual_seed(WEIGHT_SEED)
    tv = torchvision.models
    if name in SEGMENTATION:
        ctor = getattr(tv.segmentation, name)
        return SegmentationOut(ctor(weights=None, weights_backbone=None, aux_loss=False)), ["out"]
    if name in CLASSIFICATION:
        return getattr(tv, name)(weights=None), ["logits"]
    if name in DETECTION:
        ssd = getattr(tv.detection, name)(weights=None, weights_backbone=None)
        return SSDBackboneHead(ssd), ["bbox_regression", "cls_logits"]
    if name == "detectnet_resnet34":
        return DetectNetV2(), ["output_cov", "output_bbox"]
    if name == "unet_256":
        net = UnetGenerator(3, 3, 8, ngf=64, norm_layer=nn.BatchNorm2d, use_dropout=True)
        pix2pix_init_(net)
        return net, ["output"]
    raise ValueError(f"unknown model {name}")


def randomize_batchnorm_(model):
    """Give every BatchNorm non-trivial statistics.

    A freshly constructed BatchNorm has mean 0, variance 1, scale 1 and shift 0, so in eval mode it
    is (almost) the identity, and a mistake in how fovea folds or applies it would go unseen. The
    ranges are those of trained networks' layers, and keep activations in a sane range.
    """
    g = torch.Generator().manual_seed(BATCHNORM_SEED)
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            c = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=g) * 1.5 + 0.5)
                if m.affine:
                    m.weight.copy_(torch.rand(c, generator=g) * 1.0 + 0.5)
                    m.bias.copy_(torch.randn(c, generator=g) * 0.1)


def time_ms(fn, warmup, repeats):
    """First call (cold: allocations, weight packing) and the median of `repeats` after warm-up."""
    start = time.perf_counter()
    result = fn()
    first = (time.perf_counter() - start) * 1e3
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return result, first, statistics.median(times)


def export_onnx(model, x, path, output_names, opset):
    """TorchScript exporter first (what the issue asks for); the dynamo exporter if that is gone."""
    kwargs = dict(input_names=["input"], output_names=output_names, opset_version=opset,
                  do_constant_folding=True)
    try:
        torch.onnx.export(model, (x,), path, dynamo=False, **kwargs)
        return "torchscript"
    except Exception as e:  # noqa: BLE001 - any failure means: try the other exporter, loudly
        print(f"  TorchScript exporter failed ({type(e).__name__}: {e}); trying dynamo=True",
              flush=True)
    # The dynamo exporter writes opset 18 at least; external_data=False keeps one file.
    kwargs["opset_version"] = max(opset, 18)
    del kwargs["do_constant_folding"]
    torch.onnx.export(model, (x,), path, dynamo=True, external_data=False, **kwargs)
    return "dynamo"


def check_onnx(path):
    """The exported file must stand alone: fovea gets one path, and the models are far below 2 GB."""
    import onnx

    proto = onnx.load(path, load_external_data=False)
    external = [t.name for t in proto.graph.initializer
                if t.data_location == onnx.TensorProto.EXTERNAL]
    if external:
        raise RuntimeError(f"{path} keeps {len(external)} initializers in external files")
    onnx.checker.check_model(path)
    ops = collections.Counter(n.op_type for n in proto.graph.node)
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
    return dict(sorted(ops.items())), opset


def onnxruntime_check(path, x, refs, threads, repeats):
    """onnxruntime runs the same file: a second peer, and proof that the export itself is right."""
    try:
        import onnxruntime as ort
    except ImportError:
        return {"skipped": "onnxruntime is not installed"}
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: x}
    outs, first, median = time_ms(lambda: sess.run(None, feed), warmup=1, repeats=repeats)
    errors = [max_rel_error(ref, out) for ref, out in zip(refs, outs)]
    return {"version": ort.__version__, "max_rel_error": max(errors), "first_ms": first,
            "median_ms": median}


def max_rel_error(ref, got):
    """max|got - ref| / max|ref|: the issue's measure (scale-free, and defined where ref is 0)."""
    ref = np.asarray(ref, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    if ref.shape != got.shape:
        return float("inf")
    scale = np.max(np.abs(ref)) if ref.size else 0.0
    diff = np.max(np.abs(got - ref)) if ref.size else 0.0
    return float(diff / scale) if scale > 0 else float(diff)


def export_one(name, out_dir, opset, threads, repeats, plain_batchnorm):
    entry = {"model": name, "input_name": "input", "input_shape": list(INPUT_SHAPES[name])}
    model, output_names = build(name)
    if not plain_batchnorm:
        randomize_batchnorm_(model)
    model.eval()
    entry["parameters"] = sum(p.numel() for p in model.parameters())

    x = torch.randn(*INPUT_SHAPES[name], generator=torch.Generator().manual_seed(INPUT_SEED))
    np.save(os.path.join(out_dir, f"{name}.input.npy"), x.numpy())

    with torch.inference_mode():
        outputs, first, median = time_ms(lambda: model(x), warmup=1, repeats=repeats)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    refs = [o.detach().float().numpy() for o in outputs]
    entry["outputs"] = []
    for i, (oname, ref) in enumerate(zip(output_names, refs)):
        fname = f"{name}.output_{i}.npy"
        np.save(os.path.join(out_dir, fname), ref)
        entry["outputs"].append({"name": oname, "shape": list(ref.shape), "file": fname,
                                 "max_abs": float(np.max(np.abs(ref)))})
    entry["torch_cpu_ms"] = {"threads": threads, "first": first, "median": median,
                             "repeats": repeats}

    path = os.path.join(out_dir, f"{name}.onnx")
    start = time.perf_counter()
    before = set(os.listdir(out_dir))
    entry["exporter"] = export_onnx(model, x, path, output_names, opset)
    extra = sorted(set(os.listdir(out_dir)) - before - {f"{name}.onnx"})
    if extra:
        raise RuntimeError(f"the export wrote more than one file: {extra}")
    entry["export_seconds"] = time.perf_counter() - start
    entry["onnx"] = f"{name}.onnx"
    entry["onnx_bytes"] = os.path.getsize(path)
    entry["onnx_ops"], entry["opset"] = check_onnx(path)
    entry["onnxruntime"] = onnxruntime_check(path, x.numpy(), refs, threads, repeats)
    return entry


def main():
    parser = argparse.ArgumentParser(
        description="Export torchvision models (and the pix2pix U-Net) to ONNX with seeded random "
                    "weights, and save PyTorch's CPU outputs for one seeded input.")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--models", default=",".join(ALL_MODELS),
                        help="comma-separated subset of: " + ", ".join(ALL_MODELS))
    parser.add_argument("--opset", type=int, default=17, help="ONNX opset (default 17)")
    parser.add_argument("--threads", type=int, default=16,
                        help="PyTorch/onnxruntime CPU threads for the timings; run fovea with the "
                             "same FOVEA_CPU_THREADS (default 16, the GPU machine's cores)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed runs after one warm-up; the median is recorded (default 3)")
    parser.add_argument("--plain-batchnorm", action="store_true",
                        help="keep BatchNorm at its freshly constructed identity statistics")
    args = parser.parse_args()

    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in ALL_MODELS]
    if unknown:
        parser.error(f"unknown models: {', '.join(unknown)}")
    os.makedirs(args.out, exist_ok=True)

    # CPU only and float32 throughout: the references must not depend on TF32 or cuDNN choices.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_num_threads(args.threads)

    manifest = {
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "threads": args.threads,
        "seeds": {"weights": WEIGHT_SEED, "batchnorm": None if args.plain_batchnorm else BATCHNORM_SEED,
                  "input": INPUT_SEED},
        "models": [],
    }
    try:
        import onnx
        manifest["onnx"] = onnx.__version__
    except ImportError:
        manifest["onnx"] = None

    failures = 0
    for name in models:
        print(f"{name}:", flush=True)
        start = time.perf_counter()
        try:
            entry = export_one(name, args.out, args.opset, args.threads, args.repeats,
                               args.plain_batchnorm)
            ort = entry["onnxruntime"]
            ort_text = (f", onnxruntime rel err {ort['max_rel_error']:.2e} in {ort['median_ms']:.1f} ms"
                        if "max_rel_error" in ort else "")
            print(f"  {entry['exporter']} opset {entry['opset']}, {entry['onnx_bytes'] / 2**20:.1f} MiB, "
                  f"torch {entry['torch_cpu_ms']['median']:.1f} ms{ort_text}", flush=True)
        except Exception as e:  # noqa: BLE001 - one model's failure must not stop the others
            failures += 1
            traceback.print_exc()
            entry = {"model": name, "error": f"{type(e).__name__}: {e}"}
        entry["seconds"] = time.perf_counter() - start
        manifest["models"].append(entry)
        # Written after every model, so a run cut short still leaves a usable manifest.
        with open(os.path.join(args.out, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=2)
    print(f"exported {len(models) - failures} of {len(models)} models to {args.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
