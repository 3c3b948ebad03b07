"""graph/shape_rules.py: each rule's answer equals what torch's fake kernel (and the real op) gives, and a
rule declines (None) wherever its shortcut would not be exact, leaving the op to the fake kernel."""
import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

from framejit.translate.graph.shape_rules import rule_output
from tests.differential import check, randn


def _meta(t):
    return (tuple(t.shape), t.stride(), t.dtype, t.device, t.requires_grad)


def _cases():
    c = 6
    f32 = dict(dtype=torch.float32)
    yield "bn", F.batch_norm, lambda: ((torch.randn(2, c, 5, 5), torch.randn(c), torch.rand(c), torch.randn(c),
                                         torch.randn(c)), dict(training=False))
    yield "bn_1d_no_affine", F.batch_norm, lambda: ((torch.randn(4, c), torch.randn(c), torch.rand(c)), {})
    yield "bn_double", F.batch_norm, lambda: ((torch.randn(2, c, 3, dtype=torch.float64),
                                               torch.randn(c, dtype=torch.float64), torch.rand(c, dtype=torch.float64)), {})
    yield "ln", F.layer_norm, lambda: ((torch.randn(2, 3, c), (c,), torch.randn(c), torch.randn(c)), {})
    yield "ln_permuted_input", F.layer_norm, lambda: ((torch.randn(2, c, 5).transpose(1, 2), (c,), torch.randn(c)), {})
    yield "ln_two_dims", F.layer_norm, lambda: ((torch.randn(2, 3, 4, c), [4, c]), dict(eps=1e-6))
    yield "linear_3d", torch._C._nn.linear, lambda: ((torch.randn(2, 3, c), torch.randn(7, c), torch.randn(7)), {})
    yield "linear_2d_no_bias", F.linear, lambda: ((torch.randn(4, c, **f32), torch.randn(2, c)), {})


@pytest.mark.parametrize("name,op,make", list(_cases()), ids=[c[0] for c in _cases()])
def test_rule_matches_the_fake_kernel_and_the_real_op(name, op, make):
    args, kwargs = make()
    real = op(*args, **kwargs)
    mode = FakeTensorMode()
    with torch.no_grad():
        fakes = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        with mode:
            by_rule = rule_output(op, fakes, kwargs)
            by_kernel = op(*fakes, **kwargs)
    assert by_rule is not None
    assert _meta(by_rule) == _meta(by_kernel) == _meta(real)


def _declines():
    c = 6
    e = torch.empty
    yield "bn_training", F.batch_norm, lambda: ((e(2, c, 3), e(c), e(c)), dict(training=True))
    yield "bn_channels_last", F.batch_norm, lambda: ((e(2, c, 3, 3).to(memory_format=torch.channels_last),
                                                      e(c), e(c)), {})
    yield "bn_wrong_stats", F.batch_norm, lambda: ((e(2, c, 3), e(c + 1), e(c + 1)), {})
    yield "ln_mixed_dtype", F.layer_norm, lambda: ((e(2, c, dtype=torch.float64), (c,), e(c)), {})
    yield "ln_wrong_shape", F.layer_norm, lambda: ((e(2, c), (c + 1,)), {})
    yield "ln_expanded_input", F.layer_norm, lambda: ((e(1, c).expand(3, c), (c,)), {})
    yield "ln_int_shape", F.layer_norm, lambda: ((e(5, c), c), {})        # the real op raises TypeError
    yield "linear_transposed_input", F.linear, lambda: ((e(c, 3).t(), e(2, c)), {})
    yield "linear_mismatch", F.linear, lambda: ((e(3, c), e(2, c + 1)), {})
    yield "linear_int", F.linear, lambda: ((e(3, c, dtype=torch.int64), e(2, c, dtype=torch.int64)), {})


@pytest.mark.parametrize("name,op,make", list(_declines()), ids=[c[0] for c in _declines()])
def test_rule_declines_where_it_would_not_be_exact(name, op, make):
    args, kwargs = make()
    mode = FakeTensorMode()
    with torch.no_grad():
        fakes = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        with mode:
            assert rule_output(op, fakes, kwargs) is None


def test_rule_declines_when_autograd_records():
    mode = FakeTensorMode()
    x, w = mode.from_tensor(torch.randn(3, 4)), mode.from_tensor(torch.randn(2, 4, requires_grad=True))
    with mode, torch.enable_grad():
        assert rule_output(F.linear, [x, w], {}) is None


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.ln = torch.nn.LayerNorm(4)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        y = self.bn(self.conv(x)).permute(0, 2, 3, 1)
        y = self.fc(self.ln(y))
        return y, y.is_contiguous(), y.stride()


with torch.random.fork_rng():
    torch.manual_seed(0)
    MODEL = _Block().eval()


def _inference(x):
    with torch.no_grad():
        return MODEL(x)


def test_inference_model_with_the_ruled_ops_matches_eager():
    check(_inference, randn(2, 3, 5, 5), graphs=1, fullgraph=True)
