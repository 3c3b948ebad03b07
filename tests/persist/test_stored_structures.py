"""A stored conversion of a frame with a closure, side effects and a structured result is written down and
built again from its JSON, in this process (cheap: the graph stands in for its library), and gives eager's
result; a call it does not fit (another structure, other shapes, a changed decorated function) is refused.

The families (issue 24, GPT-2 and llama with their KV cache): transformers' forwards are decorated
(`(self, *args, **kwargs)` wrappers whose closure holds the original), they write to a module-level
collector, and return a ModelOutput holding a DynamicCache built in the entry; a user's decorated forward
takes structures (a dict of tensors, a list) and returns a dict with None, tuples and lists. Before the
stored record held the entry's whole body, its constants by name and a check for objects with no name
(persist/warm_guards.py's Same), every one of these was "not storable": `plan_of` raised for a closure.
The fresh-process version with real libraries is tests/persist/test_stored_conversions.py (make test-aoti).
"""
import functools
import json

import pytest
import torch

import framejit
from framejit.backends import inductor_aoti
from framejit.convert.codegen import MISS
from framejit.persist.warm_guards import NotLoadable
from framejit.runtime import warm_start

transformers = pytest.importorskip("transformers")


def _library_stand_in(graphs):
    """A backend whose graphs carry a library key, as inductor_aoti's loaded libraries do."""
    def backend(gm, example_inputs):
        def run(*inputs):
            return gm(*inputs)
        run.framejit_aoti_key = f"graph{len(graphs)}"
        graphs.append(run)
        return run
    return backend


def _record_and_builder(compiled, fn, call_args, monkeypatch, graphs):
    """The record of `compiled`'s first conversion after a JSON round trip, and `build(args)`: the entry
    a later process would build from it for a call with `args` (NotLoadable when it does not fit)."""
    result = compiled.forward._framejit_state.results[0]
    record = json.loads(json.dumps(warm_start.plan_of(fn, result, call_args[0], call_args[1])))
    monkeypatch.setattr(inductor_aoti, "load_stored", lambda store, key: (graphs[int(key[5:])], True))

    def build(f, args, kwargs):
        entry = warm_start._build(f, record, None, args, kwargs).entry
        lead = (f.__closure__,) if f.__code__.co_freevars else ()
        return lambda *a, **k: entry(*lead, *a, **k)
    return record, build


def _gpt2(layers=2):
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=layers, n_head=2,
                                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
                                     eos_token_id=0)
    return transformers.GPT2LMHeadModel(config).eval()


def test_a_transformers_forward_with_its_cache(monkeypatch):
    model, graphs = _gpt2(), []
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(1))
    fn = type(model).forward
    assert fn.__code__.co_freevars                      # the decorator's wrapper: a closure
    compiled = framejit.compile(model, backend=_library_stand_in(graphs))
    with torch.no_grad():
        compiled(input_ids=ids)
        _, build = _record_and_builder(compiled, fn, ((model,), {"input_ids": ids}), monkeypatch, graphs)
        entry = build(fn, (model,), {"input_ids": ids})
        got, expected = entry(model, input_ids=ids), model(input_ids=ids)
    assert got is not MISS and type(got) is type(expected)
    assert torch.equal(got.logits, expected.logits)
    assert type(got.past_key_values) is type(expected.past_key_values)
    for mine, eager in zip(got.past_key_values.layers, expected.past_key_values.layers):
        assert torch.equal(mine.keys, eager.keys) and torch.equal(mine.values, eager.values)
        assert mine.keys.stride() == eager.keys.stride()
    assert list(got.keys()) == list(expected.keys())
    # another structure (3 layers), other shapes, grad mode on: the stored checks refuse them
    with torch.no_grad(), pytest.raises(NotLoadable):
        build(fn, (_gpt2(3),), {"input_ids": ids})
    with torch.no_grad(), pytest.raises(NotLoadable):
        build(fn, (model,), {"input_ids": ids[:, :5]})
    with pytest.raises(NotLoadable):
        build(fn, (model,), {"input_ids": ids})


def _decorate(inner):
    @functools.wraps(inner)
    def wrapper(self, *args, **kwargs):
        return inner(self, *args, **kwargs)
    return wrapper


class Mixer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def _forward(self, batch, scale=2.0):
        h = self.proj(batch["x"]) * scale
        return {"h": h, "none": None, "pair": (h.sum(), [batch["y"] + 1, 3])}


def _mixer_class(body):
    cls = type("DecoratedMixer", (Mixer,), {"forward": _decorate(body)})
    cls.__qualname__ = "DecoratedMixer"
    return cls


def test_a_decorated_forward_taking_and_returning_structures(monkeypatch):
    cls = _mixer_class(Mixer._forward)
    torch.manual_seed(0)
    model, graphs = cls().eval(), []
    batch = {"x": torch.randn(3, 4), "y": torch.randn(3)}
    fn = cls.forward
    compiled = framejit.compile(model, backend=_library_stand_in(graphs))
    with torch.no_grad():
        compiled(batch)
        _, build = _record_and_builder(compiled, fn, ((model, batch), {}), monkeypatch, graphs)
        fresh = {"x": torch.randn(3, 4), "y": torch.randn(3)}
        got, expected = build(fn, (model, batch), {})(model, fresh), model(fresh)
    assert set(got) == set(expected) and got["none"] is None
    assert torch.equal(got["h"], expected["h"]) and torch.equal(got["pair"][0], expected["pair"][0])
    assert type(got["pair"]) is tuple and type(got["pair"][1]) is list and got["pair"][1][1] == 3
    assert torch.equal(got["pair"][1][0], expected["pair"][1][0])
    # the decorated function's original changed (another body under the same wrapper): refused
    def other(self, batch, scale=2.0):
        h = self.proj(batch["x"]) * scale + 1
        return {"h": h, "none": None, "pair": (h.sum(), [batch["y"] + 1, 3])}
    other.__qualname__ = Mixer._forward.__qualname__
    changed = _mixer_class(other)
    changed_model = changed()
    changed_model.load_state_dict(model.state_dict())
    with torch.no_grad(), pytest.raises(NotLoadable):
        build(changed.forward, (changed_model, batch), {})
    # another key in the input structure: refused
    with torch.no_grad(), pytest.raises(NotLoadable):
        build(fn, (model, {**batch, "z": torch.randn(3)}), {})
