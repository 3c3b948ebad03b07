"""Stores into another module's globals by a function the frame inlines (`global _WARNED; _WARNED = True`
in a library's warn-once helper, torch.backends' flag managers): a side effect replayed after the graph
into that module's dict, seen by later reads in the same frame, and no graph break.

Each case runs eagerly and compiled on the same fresh module state and compares the output, stdout and
the module's globals after each of two calls (the second call takes the other branch of the helper)."""
import contextlib
import io
import types

import torch

import framejit
from tests.differential import compare

LIBRARY = '''
_WARNED = False
_CALLS = 0
_LAST = None
_LOG = []

def warn_once(x):
    global _WARNED
    if not _WARNED:
        _WARNED = True
        _LOG.append("warned once")
        return x * 2
    return x

def count(x):
    global _CALLS, _LAST
    _CALLS += 1
    _LAST = x.shape[0]
    return x + _CALLS

def calls():
    return _CALLS
'''


def _library():
    mod = types.ModuleType("fj_test_library")
    exec(LIBRARY, mod.__dict__)
    return mod


def _state(mod):
    return {k: list(v) if isinstance(v, list) else v for k, v in vars(mod).items()
            if k.startswith("_") and not k.startswith("__")}


def _run_twice(make_fn, compiled):
    mod = _library()
    fn = make_fn(mod)
    counter = framejit.backends.CompileCounter()
    if compiled:
        framejit.reset()
        fn = framejit.compile(fn, backend=counter, fullgraph=True)
    runs = []
    for seed in (0, 1):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            result = fn(torch.randn(3, generator=torch.Generator().manual_seed(seed)))
        runs.append((result, out.getvalue(), _state(mod)))
    return runs, counter.frame_count


def _check(make_fn, graphs):
    eager, _ = _run_twice(make_fn, compiled=False)
    compiled, frames = _run_twice(make_fn, compiled=True)
    for (e_out, e_print, e_state), (c_out, c_print, c_state) in zip(eager, compiled):
        compare(e_out, c_out)
        assert e_print == c_print
        assert e_state == c_state
    assert frames == graphs


def test_warn_once_flag_of_another_module():
    _check(lambda mod: (lambda x: mod.warn_once(x) + mod.warn_once(x)), graphs=2)


def test_counter_of_another_module_read_back_in_the_frame():
    def make(mod):
        def fn(x):
            y = mod.count(x)
            y = mod.count(y)
            return y * mod.calls(), mod._CALLS, mod._LAST
        return fn
    _check(make, graphs=2)          # the second call reads a changed counter: guarded, converted again
