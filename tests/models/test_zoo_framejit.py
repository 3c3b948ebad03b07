"""Every model of bench/zoo.py through framejit (eager backend): graphs, breaks, outputs, gradients.

Why this exists: real transformers models are where a frontend meets config lookups, decorated
forwards, ModelOutput dataclasses, mask helpers, hooks and in-place buffers all at once. For each zoo
model this checks that framejit captures it as one graph with no break (or exactly the count in
EXPECTED, with the reason), that the eval forward matches eager, and that training through the compiled
model (dropout is 0 in the zoo) gives eager's gradients for every parameter and float input and the same
losses over a few SGD steps, without recompiling (an optimizer step changes values, not guards).
"""
import copy

import pytest
import torch
import transformers

import framejit
from bench import zoo

ATOL = 1e-5

# (graphs, breaks, why) for models that do not capture as one graph with no break.
EXPECTED = {
    # MixtralExperts' reference expert loop iterates over `nonzero()` of the routing mask: a data-dependent
    # shape, a break by design (torch.compile breaks there too). The break is deep inside inlined code,
    # so translation restarts and breaks at the root frame's `func(self, *args, **kwargs)` (transformers'
    # can_return_tuple wrapper), and the callee runs through its compiled wrapper (convert/callees.py). Each
    # wrapper on the way splits at its call of the next one (MixtralForCausalLM.forward at
    # `self.model(...)`, transformers' config-defaults and output-capturing wrappers, whose calls sit in
    # try blocks). MixtralModel.forward breaks at `decoder_layer(...)` inside its layer loop: it runs as
    # plain Python with that call routed through the layer's compiled forward, which splits around the
    # MoE block. MixtralExperts.forward splits at its nonzero() (inside `with torch.no_grad()`: the
    # break re-enters the grad-mode block for real); the rest, a loop over the hit experts with a
    # branch on a tensor, runs as plain Python. The second layer's compiled forward, MoE block and experts
    # hit the first layer's shared entries (translate/guards/instance_guards.py): 6 graphs in all, 11
    # breaks (9 and 16 when each layer instance converted on its own; torch.compile: 11 graphs, 7 breaks).
    "mixtral": (6, 11, "nonzero() and a tensor branch in the expert loop; the layer loop runs as plain Python "
                       "with compiled layers"),
}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models on a shared 2-core machine: intra-op threads only add contention."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


MODELS = zoo.names()


def output_tensors(output):
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (list, tuple)):
        return [t for item in output for t in output_tensors(item)]
    if isinstance(output, transformers.Cache):          # llama_kv's returned DynamicCache
        return [t for layer in output.layers for t in (layer.keys, layer.values)]
    return []


def assert_same_outputs(actual, expected):
    assert type(actual) is type(expected)
    if isinstance(expected, dict):
        assert list(actual.keys()) == list(expected.keys())
    got, want = output_tensors(actual), output_tensors(expected)
    assert len(got) == len(want) and want
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("name", MODELS)
def test_eval_forward_matches_eager_in_one_graph(name):
    entry = zoo.get(name)
    model = entry.build()
    inputs = entry.inputs()
    with torch.no_grad():
        expected = model(**inputs)
        explained = framejit.explain(model)(**inputs)
        graphs, breaks, why = EXPECTED.get(name, (1, 0, ""))
        assert (explained.graph_count, explained.graph_break_count) == (graphs, breaks), str(explained)
        assert not explained.eager_reasons or name in EXPECTED, explained.eager_reasons
        if name in EXPECTED:
            assert all("graph break inside" in b.reason or "data-dependent" in b.reason or
                       "needs the value" in b.reason for b in explained.break_reasons), str(explained)
        assert_same_outputs(explained.result, expected)
        counter = framejit.CompileCounter()
        compiled = framejit.compile(model, backend=counter)
        compiled(**inputs)
        assert_same_outputs(compiled(**inputs), expected)      # second call: a cache hit, same result
        assert counter.frame_count == graphs


@pytest.mark.parametrize("name", MODELS)
def test_training_gradients_and_sgd_steps_match_eager(name):
    entry = zoo.get(name)
    eager_model = entry.build().train()
    compiled_model = copy.deepcopy(eager_model)
    counter = framejit.CompileCounter()
    compiled = framejit.compile(compiled_model, backend=counter)
    inputs = entry.inputs()

    def fresh():
        return {k: v.clone().requires_grad_(v.is_floating_point()) for k, v in inputs.items()}
    eager_inputs, compiled_inputs = fresh(), fresh()

    eager_loss = entry.loss(eager_model(**eager_inputs))
    compiled_loss = entry.loss(compiled(**compiled_inputs))
    torch.testing.assert_close(compiled_loss, eager_loss, atol=ATOL, rtol=1e-4)
    eager_loss.backward()
    compiled_loss.backward()
    for (pname, p), (_, q) in zip(eager_model.named_parameters(), compiled_model.named_parameters()):
        assert (p.grad is None) == (q.grad is None), pname
        if p.grad is not None:
            torch.testing.assert_close(q.grad, p.grad, atol=ATOL, rtol=1e-4, msg=pname)
    for key, x in eager_inputs.items():
        if x.requires_grad:
            torch.testing.assert_close(compiled_inputs[key].grad, x.grad, atol=ATOL, rtol=1e-4, msg=key)
    frames = counter.frame_count
    assert frames == EXPECTED.get(name, (1, 0, ""))[0]

    sgd_eager = torch.optim.SGD(eager_model.parameters(), lr=0.1)
    sgd_compiled = torch.optim.SGD(compiled_model.parameters(), lr=0.1)
    for _ in range(3):
        losses = []
        for model, opt in ((eager_model, sgd_eager), (compiled, sgd_compiled)):
            opt.zero_grad()
            loss = entry.loss(model(**fresh()))
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        torch.testing.assert_close(losses[1], losses[0], atol=1e-4, rtol=1e-4)
    assert counter.frame_count == frames, "an optimizer step made framejit recompile"
    assert type(compiled).forward._framejit_state.conversions == 1
