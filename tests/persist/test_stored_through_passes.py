"""A graph behind output_strides' wrapper (backends/passes/output_strides.py) can be stored as a conversion.

Why: the inductor pipeline wraps every graph with a fresh tensor output (resnet's logits, GPT-2's) in
output_strides' wrapper, outermost, over the callable that carries the library's key
(inductor_aoti.tagged / _keyed). runtime/warm_start.plan_of looks for that key on the entry's `__fj_graph`
and through `framejit_wraps`; the wrapper had no such link, so such frames were "not one stored library"
and converted again in every process (failed before). A library restrides its own outputs
(inductor_aoti._restrided), so the stored entry calls it directly. Built in this process from the record's
JSON, the keyed graph standing in for its library (as test_stored_entry_words.py does).
"""
import json

import torch

import framejit
from framejit.backends import inductor_aoti
from framejit.backends.passes import output_strides
from framejit.convert.codegen import MISS
from framejit.runtime import warm_start


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.lin(x)).t().contiguous()      # a fresh output: output_strides wraps the graph


def test_a_graph_behind_the_output_strides_wrapper_is_stored(monkeypatch):
    libraries = []

    def library_stand_in(gm, example_inputs):
        def run(*inputs):
            return gm(*inputs)
        run.framejit_aoti_key = f"graph{len(libraries)}"
        libraries.append(run)
        return run

    def backend(gm, example_inputs):        # the inductor pipeline's outermost pass over a keyed callable
        return output_strides.apply(gm, example_inputs, library_stand_in)
    plans = []

    def remember(fn, result, opts, args, kwargs):      # where the runtime writes it down: before the first call
        plans.append(json.loads(json.dumps(warm_start.plan_of(fn, result, args, kwargs))))
    monkeypatch.setattr(warm_start, "remember", remember)
    torch.manual_seed(0)
    model, x = Head().eval(), torch.randn(2, 4)
    compiled = framejit.compile(model, backend=backend)
    with torch.no_grad():
        expected = model(x)
        assert torch.equal(compiled(x), expected)
    fn = type(model).forward
    record, = plans
    assert record["graph"] == "graph0"
    monkeypatch.setattr(inductor_aoti, "load_stored", lambda store, key: (libraries[int(key[5:])], True))
    with torch.no_grad():
        entry = warm_start._build(fn, record, None, (model, x), {}).entry
        got = entry(model, x)
    assert got is not MISS and torch.equal(got, expected) and got.stride() == expected.stride()
