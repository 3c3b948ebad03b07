"""torchvision's models through framejit, where torchvision imports (torch 2.14.1 + torchvision 0.29.1,
`make test-torch TORCH=2.14.1`); skipped elsewhere (the 2.13.0 CPU wheel has no working torchvision).

Why this exists: issue 25's torchvision rows (bench/zoo_ecosystem_vision.py) in the suite, small inputs:
swin_t in training (a stochastic-depth float per block, usage logging in every op; once 17 graphs and
the recompile limit), vit_b_16, a segmenter, one graph each as torch.compile; a detector (data-dependent
box counts: breaks for torch.compile too) with no more graphs than torch.compile's 20. The constructs
themselves are tested without torchvision in tests/translate/lookasides/test_torch_queries.py.
"""
import pytest
import torch

import framejit
from tests.differential import check, randn

torchvision = pytest.importorskip("torchvision", exc_type=ImportError)


def _built(make):
    torch.manual_seed(0)
    return make()


def test_swin_t_training_step_is_one_graph_with_per_block_drop_path():
    model = _built(lambda: torchvision.models.SwinTransformer(          # swin_t's classes, smaller
        patch_size=[4, 4], embed_dim=24, depths=[2, 2], num_heads=[2, 2], window_size=[4, 4],
        stochastic_depth_prob=0.2)).train()
    check(model, randn(2, 3, 32, 32), graphs=1)


def test_vision_transformer_is_one_graph():
    model = _built(lambda: torchvision.models.VisionTransformer(        # vit_b_16's classes, smaller
        image_size=32, patch_size=16, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64)).eval()
    with torch.no_grad():
        check(model, randn(1, 3, 32, 32), graphs=1)


def test_lraspp_segmenter_is_one_graph():
    from torchvision.models import segmentation
    model = _built(lambda: segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                  num_classes=3)).eval()
    with torch.no_grad():
        check(model, randn(1, 3, 64, 64), graphs=1)


def test_fasterrcnn_equals_eager_with_no_more_graphs_than_torch_compile():
    from torchvision.models import detection
    model = _built(lambda: detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, min_size=64, max_size=64, num_classes=3)).eval()
    counter = framejit.backends.CompileCounter()
    with torch.no_grad():
        check(model, [randn(3, 64, 64)], backend=counter)
    assert counter.frame_count <= 20, counter.frame_count     # torch.compile: 20 graphs (bench, 2.14.1)
