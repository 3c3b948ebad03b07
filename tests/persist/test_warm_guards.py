"""A stored conversion's text is checked before it is compiled, and its digests do not depend on the process.

Paths may name only the frame's parameters, its globals, the fixed objects and getattr/type/len/tuple/id; the
result line only graph outputs and literals. Code digests sort frozenset constants (their order follows string
hashing, randomized per process: before that, torch.nn.Conv2d's fingerprint differed between two processes
and no stored conversion of a model with a Conv2d ever loaded)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from framejit.persist.conversions import class_fingerprint, code_digest
from framejit.persist.warm_guards import NotLoadable, check_path, check_return, render_check, ClassCheck

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", [
    "x", "self._modules['a']._parameters['w']", "getattr(__fj_fixed_0, '__closure__')[0].cell_contents",
    "not (self._forward_hooks or self._forward_pre_hooks)", "('forward' in self.__dict__)",
    "len({id(self._modules['a']), id(self._modules['b'])}) == 2", "__fj_g['SCALE']",
])
def test_paths_a_conversion_makes_are_accepted(path):
    assert check_path(path, {"x", "self"}, 1) == path


@pytest.mark.parametrize("path", [
    "__import__('os').system('true')", "open('/etc/passwd')", "x.__class__.__subclasses__()", "y", "__fj_fixed_3",
    "(lambda: 1)()", "[a for a in x]", "x + 1", "getattr(x, 'f')()",
])
def test_anything_else_is_refused(path):
    with pytest.raises(NotLoadable):
        check_path(path, {"x", "self"}, 1)


def test_result_lines():
    assert check_return("return (__fj_o0, [__fj_o1, 3], {'a': None})", 2)
    for bad in ("return __fj_o2", "return f(__fj_o0)", "x = 1", "return __fj_o0.sum()"):
        with pytest.raises(NotLoadable):
            check_return(bad, 2)


def test_checks_mean_what_the_guards_did():
    classes = [ClassCheck([torch.Tensor.__module__, torch.Tensor.__qualname__, class_fingerprint(torch.Tensor)])]
    env = {}
    text = render_check(["tensor", "x", [0, "float32", "cpu", [2, 3], [3, 1], False]], env, classes)
    assert eval(text, env, {"x": torch.zeros(2, 3)})
    assert not eval(text, env, {"x": torch.zeros(3, 2)})
    assert not eval(text, env, {"x": torch.zeros(2, 3, dtype=torch.float64)})
    assert not eval(text, env, {"x": torch.zeros(3, 2).t()})                 # same shape, other strides
    assert not eval(text, env, {"x": torch.nn.Parameter(torch.zeros(2, 3))})
    with torch.inference_mode():
        inference = torch.zeros(2, 3)
    assert not eval(text, env, {"x": inference})     # a record without the field: not an inference tensor
    for field, normal in ((True, False), (False, True)):
        text = render_check(["tensor", "x", [0, "float32", "cpu", [2, 3], [3, 1], False, field]], env, classes)
        assert eval(text, env, {"x": inference}) is field and eval(text, env, {"x": torch.zeros(2, 3)}) is normal
    const = render_check(["const", "v", ["int", 1]], env, classes)
    assert eval(const, env, {"v": 1}) and not eval(const, env, {"v": True}) and not eval(const, env, {"v": 1.0})
    with pytest.raises(NotLoadable):
        render_check(["exec", "v", 1], env, classes)


def test_digests_are_the_same_in_every_process():
    script = ("import torch; from framejit.persist.conversions import class_fingerprint as f, code_digest as d; "
              "print(f(torch.nn.Conv2d), f(torch.nn.BatchNorm2d), d(torch.nn.Conv2d._conv_forward.__code__))")
    outs = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                           env=dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED=str(seed))).stdout
            for seed in (1, 2, 3)}
    assert len(outs) == 1, outs
    assert outs.pop().split()[-1] == code_digest(torch.nn.Conv2d._conv_forward.__code__)
