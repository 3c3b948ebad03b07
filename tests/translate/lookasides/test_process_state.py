"""Differential tests: reads of process state are capture constants, guarded by value
(translate/lookasides/process_state.py).

Environment reads in every spelling (`os.environ.get/[]/in`, `os.getenv`), `sys` facts (structseqs
indexed and unpacked), pure queries of the process (`os.cpu_count()`, `platform.python_version()`),
queries whose answer can change (`sys.getrecursionlimit()`, `torch.distributed.is_initialized()`,
`is_fx_tracing()`, `torch.autograd._is_checkpoint_valid()`) and library helpers marked as compile-time
constants (transformers' `is_torch_distributed_available()`, an lru_cache'd marked function of our own):
each in one graph, and a change of the answer between calls is a recompile with the new answer, never a
stale graph. Writing the environment inside the frame stays exact.
"""
import functools
import os
import platform
import sys

import pytest
import torch

import framejit
from tests.differential import CASE_FIELDS, case, check, randn, run_case

x2 = randn(2, seed=1)
ONE = dict(graphs=1, breaks=0)
VAR = "FRAMEJIT_TEST_PROCESS_STATE"


def env_get(x):
    return x + (1 if os.environ.get(VAR, "0") == "1" else 2)


def env_subscript(x):
    return x * len(os.environ["PATH"])


def env_contains(x):
    return x + (VAR in os.environ) + ("PATH" not in os.environ)


def env_getenv(x):
    return x + (os.getenv(VAR) is None) + len(os.getenv("PATH", ""))


def env_missing_key_raises(x):
    return x + len(os.environ[VAR + "_NEVER_SET"])


def sys_facts(x):
    major, minor, *_ = sys.version_info
    return x + sys.version_info[0] + sum(sys.version_info[:2]) + major + minor + sys.flags.optimize + \
        (sys.maxsize > 2 ** 32) + (sys.platform == "linux")


def pure_queries(x):
    return x + os.cpu_count() + len(platform.python_version()) + len(sys.getdefaultencoding())


def changing_queries(x):
    return x + (sys.getrecursionlimit() > 10) + torch.distributed.is_initialized() + \
        torch.autograd._is_checkpoint_valid() + torch.distributed.is_available()


def fx_tracing(x):
    import torch.fx._symbolic_trace as symbolic_trace
    return x + 1 if not symbolic_trace.is_fx_tracing() else x


@functools.lru_cache
def _marked_helper(n):
    return n * 2


_marked_helper.__wrapped__._dynamo_marked_constant = True


def marked_constant(x):
    return x + _marked_helper(3)


def hf_distributed_available(x):
    from transformers.utils import is_torch_distributed_available
    return x + 1 if is_torch_distributed_available() else x - 1


@pytest.mark.parametrize(CASE_FIELDS, [
    case(env_get, x2, **ONE),
    case(env_subscript, x2, **ONE),
    case(env_contains, x2, **ONE),
    case(env_getenv, x2, **ONE),
    case(env_missing_key_raises, x2),
    case(sys_facts, x2, **ONE),
    case(pure_queries, x2, **ONE),
    case(changing_queries, x2, **ONE),
    case(fx_tracing, x2, **ONE),
    case(marked_constant, x2, **ONE),
    case(hf_distributed_available, x2, **ONE),
])
def test_process_state_reads(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def test_an_environment_change_between_calls_recompiles_with_the_new_value(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    counter = framejit.backends.CompileCounter()
    compiled = framejit.compile(env_get, backend=counter)
    assert torch.equal(compiled(x2), env_get(x2))
    assert torch.equal(compiled(x2), x2 + 2) and counter.frame_count == 1
    monkeypatch.setenv(VAR, "1")
    assert torch.equal(compiled(x2), x2 + 1) and counter.frame_count == 2
    monkeypatch.delenv(VAR)
    assert torch.equal(compiled(x2), x2 + 2) and counter.frame_count == 2     # the first entry again
    monkeypatch.setenv(VAR, "0")                   # present, with the value that means the same
    assert torch.equal(compiled(x2), x2 + 2) and counter.frame_count == 3


def test_a_changing_query_is_guarded_by_its_answer():
    counter = framejit.backends.CompileCounter()

    def f(x):
        return x + sys.getrecursionlimit()

    compiled = framejit.compile(f, backend=counter)
    before = sys.getrecursionlimit()
    try:
        assert torch.equal(compiled(x2), x2 + before)
        sys.setrecursionlimit(before + 7)
        assert torch.equal(compiled(x2), x2 + before + 7) and counter.frame_count == 2
    finally:
        sys.setrecursionlimit(before)


def set_then_read_environment(x):
    os.environ[VAR] = "1"
    y = x + (1 if os.environ.get(VAR) == "1" else 2)
    del os.environ[VAR]
    return y + (VAR in os.environ)


def test_writing_the_environment_in_the_frame_stays_exact(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    check(set_then_read_environment, x2)
    assert VAR not in os.environ


def test_the_environment_guard_is_named_in_words(monkeypatch):
    monkeypatch.setenv(VAR, "1")
    report = framejit.explain(env_get)(x2)
    assert any(f"os.environ.get({VAR!r})" in g for g in report.guards), report.guards
