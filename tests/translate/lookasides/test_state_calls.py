"""Differential tests: global torch state set inside a compiled function (translate/lookasides/state_calls.py).

`torch.set_default_dtype`, `torch.manual_seed`, `torch.use_deterministic_algorithms`, the
torch.backends flags and the rest of the family are part of the program: the ops after them see the
new state, and it stays set after the call, on the first call and on the cached ones, with every
backend. The harness compares the global state after each call (tests/differential.py: torch state)
and starts every run from the state the test began in. Translation itself must leave no state
changed (no GlobalStateChanged warning), and guards on state must not make a frame recompile forever.
(A seed call is a graph node, not a break: lookasides/random_seeding.py, tests in test_random_seeding.py.)
"""
import random
import warnings

import pytest
import torch

import framejit
from framejit.observe.conversion import GlobalStateChanged
from tests.differential import CASE_FIELDS, case, check, randn, run_case

x2 = randn(2, seed=1)
g2 = randn(2, seed=2, requires_grad=True)
x22 = randn(2, 2, seed=3)
i3 = torch.arange(3)
BREAKS = dict(breaks=1)


def set_default_dtype(x):
    torch.set_default_dtype(torch.float64)
    return torch.ones(2) + x, torch.tensor([1.5]), i3 / 2, i3 + 0.5


def deterministic(x):
    torch.use_deterministic_algorithms(True, warn_only=True)
    return x + 1, torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()


def printoptions(x):
    torch.set_printoptions(precision=2)
    print(x * 1.23456)
    return x


def seed(x):
    torch.manual_seed(3)
    return torch.rand(2) + x, torch.randn(1)


def threads(x):
    torch.set_num_threads(1)
    return x + torch.get_num_threads()


def matmul_precision(x):
    torch.set_float32_matmul_precision("medium")
    return x @ x.t(), torch.get_float32_matmul_precision()


def default_device(x):
    torch.set_default_device("meta")
    return x + 1, torch.ones(2).device


def cudnn_flag(x):
    torch.backends.cudnn.deterministic = True
    return x * 2, torch.backends.cudnn.deterministic


def mkldnn_flag(x):
    torch.backends.mkldnn.enabled = False
    return torch.nn.functional.linear(x, x), torch.backends.mkldnn.enabled


def private_setter(x):
    torch._C._set_cudnn_enabled(False)             # not in the table: found by watching the state
    return x + 1


def anomaly(x):
    torch.autograd.set_detect_anomaly(True)        # a class: constructing it sets the mode
    return x * 2


def warn_always(x):
    torch.set_warn_always(True)
    return x + 1


def grad_mode_function(x):
    torch.set_grad_enabled(False)
    return x * 2


def _library_helper():
    torch.set_default_dtype(torch.float64)


def setter_in_helper(x):
    _library_helper()
    return torch.zeros(2) + x


def python_random(x):
    random.seed(3)
    return x + random.random()


def seed_in_loop(x):
    for i in range(2):
        torch.manual_seed(i)
        x = x + torch.rand(2)
    return x


def setter_in_no_grad_block(x):
    with torch.no_grad():
        torch.set_default_dtype(torch.float64)
        y = torch.ones(2) + x
    return y


def sets_and_restores(x):
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    y = torch.ones(2) + x
    torch.set_default_dtype(before)
    return y, torch.ones(1)


CASES = [
    case(set_default_dtype, x2, **BREAKS),
    case(set_default_dtype, g2, name="set_default_dtype_aot", backend="aot_eager", grads=True, **BREAKS),
    case(deterministic, x2, **BREAKS),
    case(printoptions, x2, breaks=2),
    case(seed, x2, graphs=1, breaks=0),          # a node in the graph: random_seeding.py
    case(seed, g2, name="seed_aot", backend="aot_eager", grads=True, graphs=1, breaks=0),
    case(threads, x2, **BREAKS),
    case(matmul_precision, x22, **BREAKS),
    case(default_device, x2, **BREAKS),
    case(cudnn_flag, x2, **BREAKS),
    case(mkldnn_flag, x22, **BREAKS),
    case(private_setter, x2, **BREAKS),
    case(anomaly, g2, grads=True),
    case(warn_always, x2, **BREAKS),
    # called as a function, set_grad_enabled is a grad-mode node in the graph (was a break)
    case(grad_mode_function, g2, grads=True, graphs=1, breaks=0),
    case(setter_in_helper, x2),
    case(python_random, x2),
    case(seed_in_loop, x2),
    case(setter_in_no_grad_block, g2, grads=True),
    case(sets_and_restores, x2, breaks=2),
    case(sets_and_restores, g2, name="sets_and_restores_aot", backend="aot_eager", grads=True, breaks=2),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    with warnings.catch_warnings():
        warnings.simplefilter("error", GlobalStateChanged)     # the program's changes are not framejit's
        run_case(fn, args, kwargs, options)


def test_state_left_set_on_purpose_stays_set_and_cached_calls_set_it_again():
    counter = framejit.backends.CompileCounter()

    @framejit.compile(backend=counter)
    def s(x):
        torch.set_default_dtype(torch.float64)
        return torch.ones(2) + x

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", GlobalStateChanged)
            for _ in range(2):
                torch.set_default_dtype(torch.float32)
                out = s(torch.zeros(2, dtype=torch.float64))
                assert torch.get_default_dtype() == torch.float64 and out.dtype == torch.float64
            frames = counter.frame_count
            for _ in range(6):                   # the state stays float64 from here on: no new graphs
                assert s(torch.zeros(2, dtype=torch.float64)).dtype == torch.float64
            assert counter.frame_count == frames
    finally:
        torch.set_default_dtype(torch.float32)


def _int_division(i):
    return i / 2, (i + 0.5).dtype                  # float results in the default dtype


def _factory_device(i):
    return i + 1, torch.zeros(1, dtype=torch.float32).device


def _precision_query(i):
    return i + 1, torch.get_float32_matmul_precision()


def _set_float64():
    torch.set_default_dtype(torch.float64)
    return lambda: torch.set_default_dtype(torch.float32)


def _set_meta():
    torch.set_default_device("meta")
    return lambda: torch.set_default_device(None)


def _set_high():
    torch.set_float32_matmul_precision("high")
    return lambda: torch.set_float32_matmul_precision("highest")


@pytest.mark.parametrize("fn,change", [(_int_division, _set_float64), (_factory_device, _set_meta),
                                       (_precision_query, _set_high)], ids=["dtype", "device", "precision"])
def test_graphs_are_guarded_on_the_state_they_read_implicitly(fn, change):
    compiled = framejit.compile(fn)
    i = torch.arange(3)
    compiled(i)
    undo = change()
    try:
        expected, got = fn(i), compiled(i)
    finally:
        undo()
    for e, g in zip(expected, got):
        if isinstance(e, torch.Tensor):
            assert g.dtype == e.dtype and g.device == e.device and torch.equal(g, e)
        else:
            assert g == e
