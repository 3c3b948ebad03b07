"""Buffers checked through their TensorImpl words (translate/guards/tensor_words.py): every metadata change is noticed,
nothing else makes the check run, and the layout probe agrees with what torch reports."""
import pytest
import torch
from torch import nn

import framejit
from framejit.translate.guards import dict_versions, tensor_words

pytestmark = pytest.mark.skipif(tensor_words._LAYOUT is None, reason="TensorImpl layout not recognised")


@pytest.fixture(autouse=True, params=["native", "ctypes"])
def reader(monkeypatch, request):
    if request.param == "native" and dict_versions._native_gather is None:
        pytest.skip("framejit/_words.c is not built")
    if request.param == "ctypes":
        monkeypatch.setattr(dict_versions, "_native_gather", None)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)
        self.register_buffer("scale", torch.arange(1.0, 5.0))

    def forward(self, x):
        return self.lin(x) * self.scale


def _compiled(m):
    counter = framejit.CompileCounter()
    return framejit.compile(m, backend=counter), counter


def _same(cm, m, x):
    got, want = cm(x), m(x)
    assert got.dtype == want.dtype and got.shape == want.shape and got.requires_grad == want.requires_grad
    torch.testing.assert_close(got.detach(), want.detach())


def test_a_buffer_is_not_checked_call_by_call():
    m = Scaled()
    cm, _ = _compiled(m)
    x = torch.randn(2, 4)
    _same(cm, m, x)
    code = "\n".join(framejit.explain(m)(x).transformed_code)
    per_call = code.split("return __fj_MISS")[0]                 # the guard expression
    assert per_call.count(".is_cpu") == 1, code                 # x only; the buffer is in the words


@pytest.mark.parametrize("change", [
    lambda b: b.unsqueeze_(0),
    lambda b: b.resize_(2, 2),
    lambda b: b.as_strided_((2,), (2,)),
    lambda b: b.as_strided_((3,), (1,), 1),
    lambda b: b.set_(torch.full((4,), 3.0)),
    lambda b: setattr(b, "data", torch.arange(1.0, 5.0, dtype=torch.float64)),
    lambda b: b.requires_grad_(),
], ids=["unsqueeze_", "resize_", "as_strided_", "storage_offset", "set_", "data_dtype", "requires_grad_"])
def test_each_metadata_change_of_a_buffer_is_noticed(change):
    m = Scaled()
    cm, counter = _compiled(m)
    x = torch.randn(2, 4)
    _same(cm, m, x)
    _same(cm, m, x)                           # stamped
    before = framejit.translate.guards.guard_set.TensorMeta.of(m.scale)
    with torch.no_grad():
        change(m.scale)
    meta_changed = framejit.translate.guards.guard_set.TensorMeta.of(m.scale) != before
    if m.scale.shape == (2, 2):
        x = torch.randn(2, 2, 4)[:, :, :4]
        m.lin = nn.Linear(4, 2)
    try:
        eager = m(x)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            cm(x)
        return
    got = cm(x)
    assert got.dtype == eager.dtype and got.shape == eager.shape and got.requires_grad == eager.requires_grad
    torch.testing.assert_close(got.detach(), eager.detach())
    assert counter.frame_count == (2 if meta_changed else 1)   # the graph was made for the old metadata


def test_values_written_in_place_need_no_recompile():
    m = Scaled()
    cm, counter = _compiled(m)
    x = torch.randn(2, 4)
    _same(cm, m, x)
    with torch.no_grad():
        m.scale.mul_(2)
        m.scale[0] = 7.0
    _same(cm, m, x)
    assert counter.frame_count == 1


def test_a_buffer_with_autograd_meta_keeps_working_without_a_stamp():
    m = Scaled()
    cm, counter = _compiled(m)
    x = torch.randn(2, 4)
    m.scale.requires_grad_()                  # autograd meta now: requires_grad lives outside the words
    _same(cm, m, x)
    m.scale.requires_grad_(False)
    _same(cm, m, x)
    m.scale.requires_grad_(True)              # flips inside the meta: only the full check can see it
    _same(cm, m, x)


def test_the_probed_layout_reads_what_torch_reports():
    for shape, make in [((3, 5, 7), torch.zeros), ((4,), torch.ones), ((), torch.zeros), ((2, 3), torch.empty)]:
        t = make(shape)
        found = tensor_words.tensor_words(t)
        assert found is not None
        roles = [role for _, role in found]
        words = [reader.value for reader, _ in found]
        assert words[roles.index("dims")] == len(shape)
        assert words[roles.index("meta")] == 0
        assert tensor_words.stamp_allowed(words, list(enumerate(roles)))
    assert tensor_words.tensor_words(nn.Parameter(torch.zeros(2))) is None       # not a plain tensor
    big = torch.zeros(1, 1, 1, 1, 1, 2)
    found = tensor_words.tensor_words(big)
    words = [reader.value for reader, _ in found]
    assert not tensor_words.stamp_allowed(words, list(enumerate(role for _, role in found)))


def _native_input_check(t):
    found = tensor_words.input_check(framejit.translate.guards.guard_set.TensorMeta.of(t))
    if found is None:
        pytest.skip("no native tensor check here")
    return found


def test_the_native_input_check_says_yes_only_for_the_same_metadata(reader):
    check, spec = _native_input_check(torch.randn(2, 5))
    assert check(torch.randn(2, 5), spec)
    with torch.inference_mode():
        inference = torch.randn(2, 5)
    for other in [torch.randn(2, 6), torch.randn(2, 5).double(), torch.randn(5, 2).t(),
                  torch.randn(2, 5, requires_grad=True), nn.Parameter(torch.randn(2, 5)), "x", None,
                  inference, torch.randn(3, 5)[1:]]:
        assert not check(other, spec), other          # not shown equal: the plain checks decide
    check, spec = _native_input_check(torch.zeros(1, 16, dtype=torch.long))
    assert check(torch.ones(1, 16, dtype=torch.long), spec)
    assert not check(torch.ones(1, 16, dtype=torch.int32), spec)
    assert tensor_words.input_check(framejit.translate.guards.guard_set.TensorMeta.of(torch.randn(2, requires_grad=True))) is None


def test_inputs_the_native_check_cannot_vouch_for_still_hit_and_real_changes_recompile(reader):
    _native_input_check(torch.randn(2, 4))
    counter = framejit.CompileCounter()
    f = framejit.compile(lambda x: x * 2 + 1, backend=counter)
    x = torch.randn(2, 4)
    torch.testing.assert_close(f(x), x * 2 + 1)
    with torch.inference_mode():
        y = torch.randn(2, 4)
    view = torch.randn(3, 4)[1:]
    for same_meta in (torch.randn(2, 4), view):
        torch.testing.assert_close(f(same_meta), same_meta * 2 + 1)
    assert counter.frame_count == 1
    # an inference tensor is a change (eager refuses to write it outside inference mode: guards/kinds/tensors.py)
    for changed in (torch.randn(4, 2).t(), torch.randn(2, 4).double(), torch.randn(3, 4), y):
        torch.testing.assert_close(f(changed), changed * 2 + 1)
    assert counter.frame_count == 5
    torch.testing.assert_close(f(y), y * 2 + 1)           # and its own entry is hit
    assert counter.frame_count == 5
