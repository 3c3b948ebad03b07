"""Library helpers model code calls on its hot path: warnings, once-loggers, inspect.signature, slice,
dict.get/Mapping.get on real mappings, imports inside functions, ModelOutput values.

Each must keep the graph whole where the eager behaviour allows it, and behave exactly as eagerly.
"""
import collections.abc
import sys
import warnings

import pytest
import torch

import framejit
from tests.differential import check, randn

ONE = dict(graphs=1, breaks=0)


def warns(x):
    warnings.warn("careful with x", UserWarning)
    return x + 1


def _caught(fn, calls, action):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        for _ in range(calls):
            fn(randn(3))
    return [(str(w.message), w.category, w.filename, w.lineno) for w in caught if str(w.message) == "careful with x"]


def test_a_warning_under_the_default_filter_is_issued_once_from_the_eager_location():
    eager = _caught(warns, 3, "default")
    framejit.reset()
    compiled = _caught(framejit.compile(warns), 3, "default")
    assert compiled == eager and len(eager) == 1
    explained = framejit.explain(warns)(randn(3))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)


def test_a_warning_under_always_warns_on_every_call_and_error_raises():
    framejit.reset()
    assert len(_caught(framejit.compile(warns), 3, "always")) == 3
    framejit.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="careful"):
            framejit.compile(warns)(randn(3))


def test_transformers_warning_once_is_issued_once_without_a_break(caplog):
    from transformers.utils import logging as hf_logging
    logger = hf_logging.get_logger("framejit.tests.once")

    def fn(x):
        logger.warning_once("framejit-once-message")
        return x * 2
    explained = framejit.explain(fn)(randn(2))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    compiled = framejit.compile(fn)
    for _ in range(3):
        compiled(randn(2))
    fn(randn(2))
    assert [r.getMessage() for r in caplog.records].count("framejit-once-message") == 1


def _chunk(x):
    return x * 2


def test_inspect_signature_parameters_and_slice_are_constants():
    import inspect

    def fn(x, n):
        k = len(inspect.signature(_chunk).parameters)
        return x[slice(-n, None)] * k
    check(fn, randn(5, 2), 2, **ONE)


class Registry(dict):
    def get(self, key):
        return super().get(key) or {}


REGISTRY = Registry(a={"scale": 3.0})


class Interface(collections.abc.Mapping):
    _table = {"double": 2.0}

    def __init__(self):
        self._local = {}

    def __getitem__(self, key):
        if key in self._local:
            return self._local[key]
        return self._table[key]

    def __iter__(self):
        return iter(self._table)

    def __len__(self):
        return len(self._table)


INTERFACE = Interface()


def test_dict_get_through_super_and_mapping_get_with_a_missing_key():
    def fn(x):
        a = REGISTRY.get("a")["scale"]
        b = REGISTRY.get("missing")
        c = INTERFACE.get("double", 1.0) + INTERFACE.get("missing", 10.0)
        return x * a + len(b) + c + ("double" in INTERFACE)
    check(fn, randn(3), **ONE)


def test_a_registry_change_is_noticed():
    def fn(x):
        return x * REGISTRY.get("b").get("scale", 1.0)
    compiled = framejit.compile(fn)
    x = randn(3)
    torch.testing.assert_close(compiled(x), fn(x))
    REGISTRY["b"] = {"scale": 5.0}
    try:
        torch.testing.assert_close(compiled(x), fn(x))
    finally:
        del REGISTRY["b"]


def test_imports_inside_a_function():
    def fn(x):
        import math
        from torch.nn import functional as F
        import torch.nn.functional
        return F.relu(x) * math.pi + torch.nn.functional.gelu(x)
    check(fn, randn(4), **ONE)


def test_importing_a_module_not_imported_yet_is_a_break():
    name = "framejit_tests_never_imported_module"
    assert name not in sys.modules

    def fn(x):
        try:
            import framejit_tests_never_imported_module  # noqa: F401
        except ImportError:
            pass
        return x + 1
    out = framejit.compile(fn)(randn(2))
    torch.testing.assert_close(out, randn(2) + 1)


def test_model_outputs_are_built_read_and_returned():
    from transformers.modeling_outputs import BaseModelOutput, CausalLMOutputWithPast

    def fn(x):
        out = BaseModelOutput(last_hidden_state=x * 2, hidden_states=(x,))
        first, second = out[0], out["hidden_states"][0]
        res = CausalLMOutputWithPast(logits=first + second)
        res["loss"] = res.logits.sum()
        return res, out.to_tuple(), len(out), list(out.keys()), "attentions" in out, out.attentions
    result = check(fn, randn(2, 3), **ONE)
    res = result[0]
    assert type(res) is CausalLMOutputWithPast and list(res.keys()) == ["logits", "loss"]
    assert res[0] is res.logits and res.to_tuple()[1] is res.loss
