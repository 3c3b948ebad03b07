"""A stored conversion's text is checked before it is compiled, and its digests do not depend on the process.

Paths may name only the frame's parameters, its globals, the fixed objects and getattr/hasattr/type/len/tuple/id;
the body only graph outputs, its temporaries, the stored constants, fixed objects and parameters. Code digests sort frozenset constants (their order follows string
hashing, randomized per process: before that, torch.nn.Conv2d's fingerprint differed between two processes
and no stored conversion of a model with a Conv2d ever loaded)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from framejit.persist.conversions import class_fingerprint, code_digest
from framejit.persist.warm_guards import NotLoadable, check_body, check_path, render_check, ClassCheck, Same

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", [
    "x", "self._modules['a']._parameters['w']", "getattr(__fj_fixed_0, '__closure__')[0].cell_contents",
    "not (self._forward_hooks or self._forward_pre_hooks)", "('forward' in self.__dict__)",
    "len({id(self._modules['a']), id(self._modules['b'])}) == 2", "__fj_g['SCALE']",
    "hasattr(self, 'config')", "__fj_fixed_0(type(self), 'forward')",
    "__fj_b['dict'].__getitem__(__fj_fixed_0['REGISTRY'], 'GPT2Model')",
])
def test_paths_a_conversion_makes_are_accepted(path):
    assert check_path(path, {"x", "self"}, 1) == path


@pytest.mark.parametrize("path", [
    "__import__('os').system('true')", "open('/etc/passwd')", "x.__class__.__subclasses__()", "y", "__fj_fixed_3",
    "(lambda: 1)()", "[a for a in x]", "x + 1", "getattr(x, 'f')()", "x.__class__.__subclasses__()",
    "x.f(1)", "__fj_c0(x)",
])
def test_anything_else_is_refused(path):
    with pytest.raises(NotLoadable):
        check_path(path, {"x", "self"}, 1)


def test_bodies():
    """The body after the guards: graph outputs, temporaries, stored constants, fixed objects, parameters."""
    body = ["try:", "    __fj_call__", "except Exception:", "    return __fj_c1(self, x)",
            "__fj_v0 = __fj_c2(__fj_c3)", "__fj_c4(__fj_v0, '__dict__', {'logits': __fj_o0, 'k': [__fj_o1]})",
            "__fj_c4(__fj_fixed_0['_active'], 'compiling', False)", "return (__fj_v0, [__fj_o1, 3], {'a': None})"]
    assert check_body(body, 2, {"self", "x"}, 1, {"__fj_c1", "__fj_c2", "__fj_c3", "__fj_c4"}) == body
    for bad in (["__fj_call__", "return __fj_o2"], ["__fj_call__", "return __fj_c9"], ["return __fj_o0"],
                ["__fj_call__", "return __import__('os')"], ["__fj_call__", "return __fj_fixed_1"],
                ["__fj_call__", "return __fj_m[0]"], ["__fj_call__", "__fj_call__", "return 1"]):
        with pytest.raises(NotLoadable):
            check_body(bad, 2, {"self", "x"}, 1, {"__fj_c1"})


def test_objects_with_no_name_are_checked_by_what_they_are():
    """An ID_MATCH on a function reached through a closure (a decorated forward's original), a tuple of
    defaults, a registry dict: compared by code, by items, by type, in another process."""
    def f(a, b=2):
        return a + b

    def g(a, b=2):
        return a - b
    from framejit.persist.conversions import code_digest
    env = {"__fj_fixed_0": torch.relu}
    same_f = Same(["func", f.__module__, f.__qualname__, code_digest(f.__code__)], env)
    assert same_f(f) and not same_f(g) and not same_f(torch.relu)
    defaults = Same(["tuple", [["atom", ["int", 0]], ["single", "None"], ["fixed", 0], ["atom", ["dtype", "float32"]]]],
                    env)
    assert defaults((0, None, torch.relu, torch.float32))
    assert not defaults((0, None, torch.tanh, torch.float32)) and not defaults((False, None, torch.relu, torch.float32))
    assert not defaults((0, None, torch.relu)) and not defaults([0, None, torch.relu, torch.float32])
    registry = Same(["mutable", "dict"], env)
    assert registry({}) and registry({"a": 1}) and not registry([])
    with pytest.raises(NotLoadable):
        Same(["pickle", "..."], env)


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


def test_an_argument_tensor_checked_natively_means_the_same():
    """A stored entry's argument tensor check as the converted entry's one native call (tensor_words)."""
    from framejit.runtime.warm_start import _native_tensor
    classes = [ClassCheck([torch.Tensor.__module__, torch.Tensor.__qualname__, class_fingerprint(torch.Tensor)])]
    env = {}
    text = render_check(["tensor", "x", [0, "float32", "cpu", [2, 3], [3, 1], False]], env, classes, _native_tensor)
    if _native_tensor(torch.float32, torch.device("cpu"), (2, 3), (3, 1), False) is not None:
        assert "stride" not in text                                           # the native call was chosen
    assert eval(text, env, {"x": torch.zeros(2, 3)})
    for other in (torch.zeros(3, 2), torch.zeros(2, 3, dtype=torch.float64), torch.zeros(3, 2).t(),
                  torch.nn.Parameter(torch.zeros(2, 3)), torch.zeros(2, 3, requires_grad=True), torch.zeros(2, 3, 1)):
        assert not eval(text, env, {"x": other})
    with torch.inference_mode():
        inference = torch.zeros(2, 3)
    assert not eval(text, env, {"x": inference})              # a record of a normal tensor refuses an inference one
    text = render_check(["tensor", "x", [0, "float32", "cpu", [2, 3], [3, 1], False, True]], env, classes,
                        _native_tensor)
    assert eval(text, env, {"x": inference}) and not eval(text, env, {"x": torch.zeros(2, 3)})
