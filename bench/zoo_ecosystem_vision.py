"""torchvision and timm entries of bench/zoo_ecosystem.py: classifiers, a training step, detectors, segmenters.

Why this exists: torchvision is the library a new user compiles first, and its models carry the
constructs issue 25 names (torch's usage logger called from every constructor and op, per-layer
stochastic-depth floats, nn.MultiheadAttention, detectors whose box count depends on tensor values).
torchvision imports only where torch has its C++ ops (torch 2.14.1 + torchvision 0.29.1 here, see the
Makefile's test-torch target); elsewhere these entries are listed as skipped. Kept apart from
zoo_ecosystem_models.py so that file stays one size and other rows merge cleanly; importing this
module registers its entries there.
"""
from __future__ import annotations

import torch

from bench.zoo_ecosystem_models import entry, randn


def _tv(name, family="torchvision", size=64, train=False, **kw):
    tag = f"torchvision_{name}" + ("_train" if train else "")

    @entry(tag, family, lambda s: (randn(s, 2 if train else 1, 3, size, size),), train=train, needs="torchvision")
    def _b():
        import torchvision
        model = getattr(torchvision.models, name)(**kw)
        return model.train() if train else model


_tv("swin_t")
_tv("swin_t", train=True)       # stochastic depth active: a drop-path float per block
_tv("vit_b_16", image_size=64)
_tv("vit_b_16", train=True, image_size=64)
_tv("resnet18")


def _images(seed, size=96):
    """A detector's input: a list of images of one size."""
    return ([randn(seed, 3, size, size)],)


def _detector(name, **kw):
    @entry(f"torchvision_{name}", "torchvision detection", _images, needs="torchvision")
    def _b():
        from torchvision.models import detection
        return getattr(detection, name)(weights=None, weights_backbone=None, **kw)


_detector("fasterrcnn_mobilenet_v3_large_320_fpn", min_size=96, max_size=96)
_detector("ssdlite320_mobilenet_v3_large", num_classes=5)
_detector("retinanet_resnet50_fpn", min_size=96, max_size=96, num_classes=5)


def _segmenter(name, **kw):
    @entry(f"torchvision_{name}", "torchvision segmentation", lambda s: (randn(s, 1, 3, 64, 64),),
           needs="torchvision")
    def _b():
        from torchvision.models import segmentation
        return getattr(segmentation, name)(weights=None, weights_backbone=None, **kw)


_segmenter("deeplabv3_mobilenet_v3_large", num_classes=5)
_segmenter("fcn_resnet50", num_classes=5, aux_loss=True)
_segmenter("lraspp_mobilenet_v3_large", num_classes=5)


@entry("timm_vit_tiny", "timm", lambda s: (randn(s, 1, 3, 32, 32),), needs="timm")
def _b():
    import timm
    return timm.create_model("vit_tiny_patch16_224", img_size=32, pretrained=False)


@entry("timm_vit_tiny_train", "timm", lambda s: (randn(s, 2, 3, 32, 32),), train=True, needs="timm")
def _b():
    import timm
    return timm.create_model("vit_tiny_patch16_224", img_size=32, pretrained=False, drop_path_rate=0.1).train()


@entry("timm_convnext_atto", "timm", lambda s: (randn(s, 1, 3, 64, 64),), needs="timm")
def _b():
    import timm
    return timm.create_model("convnext_atto", pretrained=False)
