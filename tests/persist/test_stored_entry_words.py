"""An entry built from a stored conversion checks state outside its arguments through version words
(runtime/warm_words.py): after its first call those checks do not run again until a word moved, and a
changed global, registry entry, class attribute or buffer still misses.

Before the words, every check on module globals, class lookups and buffers ran on every call (GPT-2's
stored entry cost 105 us a call against the converted entry's 11: bench/stored_entry_overhead.py); the
steady-state test below failed then (no stamp). Built in this process from the record's JSON, the graph
standing in for its library (as tests/persist/test_stored_structures.py does).
"""
import json

import pytest
import torch

import framejit
from framejit.backends import inductor_aoti
from framejit.convert.codegen import MISS
from framejit.runtime import warm_start



def relu(t):
    return torch.relu(t)


def tanh(t):
    return torch.tanh(t)


def sigmoid(t):
    return torch.sigmoid(t)


SCALE = 2.0
ACT = relu
REGISTRY = {"mix": sigmoid}


class Helper:
    shift = 1.0


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("offset", torch.arange(8.0).reshape(2, 4).clone())   # no view

    def forward(self, x):
        y = ACT(self.lin(x)) * SCALE + Helper.shift
        return REGISTRY["mix"](y) + self.offset.sum(0)


def _stored_entry(monkeypatch, model, x):
    """The entry a later process builds from `model`'s first conversion (the record after a JSON trip)."""
    graphs = []

    def backend(gm, example_inputs):
        def run(*inputs):
            return gm(*inputs)
        run.framejit_aoti_key = f"graph{len(graphs)}"
        graphs.append(run)
        return run
    compiled = framejit.compile(model, backend=backend)
    with torch.no_grad():
        compiled(x)
    fn = type(model).forward
    result = compiled.forward._framejit_state.results[0]
    record = json.loads(json.dumps(warm_start.plan_of(fn, result, (model, x), {})))
    monkeypatch.setattr(inductor_aoti, "load_stored", lambda store, key: (graphs[int(key[5:])], True))
    with torch.no_grad():
        return warm_start._build(fn, record, None, (model, x), {}).entry


def _call(entry, model, x):
    with torch.no_grad():
        return entry(model, x)


def test_checks_outside_the_arguments_run_once_then_only_when_a_word_moves(monkeypatch):
    torch.manual_seed(0)
    model, x = Net().eval(), torch.randn(3, 4)
    entry = _stored_entry(monkeypatch, model, x)
    stamp = entry.__globals__["__fj_st"]
    assert len(stamp.items) >= 5               # the global function, the scale, the registry, the class, the buffer
    got = _call(entry, model, x)
    assert torch.equal(got, model(x)) and stamp.unchanged()
    ran = []
    stamped = entry.__globals__["__fj_stamped"]
    entry.__globals__["__fj_stamped"] = lambda *a: ran.append(1) or stamped(*a)
    for _ in range(3):
        assert torch.equal(_call(entry, model, x), got)
    assert ran == []                           # steady calls: one comparison of words, no checks
    REGISTRY["mix"] = tanh                     # the registry's version moved (and its value is back): the
    REGISTRY["mix"] = sigmoid                  # checks run once, pass, restamp
    assert torch.equal(_call(entry, model, x), got) and ran == [1] and stamp.unchanged()
    assert torch.equal(_call(entry, model, x), got) and ran == [1]


def test_grad_mode_and_the_default_dtype_still_miss(monkeypatch):
    """Checked on every call (fused into one native call where _words.c can read them)."""
    torch.manual_seed(0)
    model, x = Net().eval(), torch.randn(3, 4)
    entry = _stored_entry(monkeypatch, model, x)
    assert _call(entry, model, x) is not MISS
    with torch.enable_grad():
        assert entry(model, x) is MISS
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert _call(entry, model, x) is MISS
    finally:
        torch.set_default_dtype(before)
    assert _call(entry, model, x) is not MISS


@pytest.mark.parametrize("change", ["global function", "global number", "registry entry", "class attribute",
                                    "buffer metadata"])
def test_a_change_outside_the_module_tree_misses(monkeypatch, change):
    torch.manual_seed(0)
    model, x = Net().eval(), torch.randn(3, 4)
    entry = _stored_entry(monkeypatch, model, x)
    assert _call(entry, model, x) is not MISS and _call(entry, model, x) is not MISS     # stamped
    g = globals()
    saved = (g["ACT"], g["SCALE"], REGISTRY["mix"], Helper.shift)
    try:
        if change == "global function":
            monkeypatch.setitem(g, "ACT", tanh)
        elif change == "global number":
            monkeypatch.setitem(g, "SCALE", 3.0)
        elif change == "registry entry":
            REGISTRY["mix"] = tanh
        elif change == "class attribute":
            Helper.shift = 5.0
        else:
            model.offset.t_()                  # in place: same object, other shape and strides
        assert _call(entry, model, x) is MISS
    finally:
        g["ACT"], g["SCALE"], REGISTRY["mix"], Helper.shift = saved
        if change == "buffer metadata":
            model.offset.t_()
    assert torch.equal(_call(entry, model, x), model(x))        # put back: it hits again
