"""The public surface: compile() forms, module wrapper behaviour, disable/reset, bad arguments."""
import copy
import functools
import threading
import warnings

import pytest
import torch

import framejit
from framejit.examples import MLP, TransformerBlock


def add_relu(x, y):
    """docstring kept"""
    return torch.relu(x + y)


def test_compile_forms_keep_name_doc_and_wrapped():
    c1 = framejit.compile(add_relu)
    c2 = framejit.compile(backend="eager")(add_relu)

    @framejit.compile
    def c3(x, y):
        return x - y

    x, y = torch.randn(3), torch.randn(3)
    assert torch.equal(c1(x, y), add_relu(x, y))
    assert torch.equal(c2(x, y), add_relu(x, y))
    assert torch.equal(c3(x, y), x - y)
    assert c1.__name__ == "add_relu" and c1.__doc__ == "docstring kept" and c1.__wrapped__ is add_relu


def test_unknown_backend_lists_known_ones():
    with pytest.raises(ValueError, match="unknown backend 'nope'.*eager"):
        framejit.compile(add_relu, backend="nope")


@pytest.mark.parametrize("bad", [3, "x", None])
def test_bad_arguments_are_clear(bad):
    with pytest.raises(TypeError):
        framejit.compile(bad if bad is not None else 5)
    with pytest.raises(TypeError, match="fullgraph"):
        framejit.compile(add_relu, fullgraph="yes")
    with pytest.raises(TypeError, match="backend"):
        framejit.compile(add_relu, backend=42)


def test_bad_config_value():
    with pytest.raises((ValueError, TypeError)):
        framejit.compile(add_relu, recompile_limit=0)


def test_user_callable_backend_and_register_backend():
    seen = []

    def mine(gm, example_inputs):
        seen.append(len(example_inputs))
        return gm.forward

    framejit.register_backend("test_mine", mine)
    x, y = torch.randn(2), torch.randn(2)
    assert torch.equal(framejit.compile(add_relu, backend="test_mine")(x, y), add_relu(x, y))
    assert seen == [2]
    with pytest.raises(TypeError):
        framejit.register_backend("bad", 3)


def test_module_wrapper_behaves_like_the_original():
    torch.manual_seed(0)
    m = MLP()
    cm = framejit.compile(m)
    x = torch.randn(4, 32)
    assert isinstance(cm, MLP) and type(cm).__name__ == "MLP"
    assert torch.allclose(cm(x), m(x))
    assert list(cm.state_dict()) == list(m.state_dict())
    assert cm.fc1 is m.fc1 and cm.fc1.weight is m.fc1.weight
    assert [p is q for p, q in zip(cm.parameters(), m.parameters())] == [True] * 4
    cm.eval()
    assert m.training is False          # one shared state
    cm.train()
    assert m.training is True
    cm.extra = 5
    assert m.extra == 5
    with torch.no_grad():
        m.fc2.bias.add_(1.0)
    assert torch.allclose(cm(x), m(x))  # in-place parameter updates are seen, no recompile needed


def test_module_parameter_changes_are_seen():
    m = MLP()
    counter = framejit.CompileCounter()
    cm = framejit.compile(m, backend=counter)
    x = torch.randn(4, 32)
    cm(x)
    cm(x)
    assert counter.frame_count == 1
    m.fc1.weight = torch.nn.Parameter(torch.randn(64, 32))     # same metadata: a graph input, no recompile
    assert torch.allclose(cm(x), m(x))
    m.fc1.weight = torch.nn.Parameter(torch.randn(64, 32).double().float()[:, :32].contiguous())
    assert torch.allclose(cm(x), m(x))
    for p in m.parameters():
        p.requires_grad_(False)
    out = cm(x)
    assert torch.allclose(out, m(x)) and out.requires_grad == m(x).requires_grad == False  # noqa: E712
    m.fc2 = torch.nn.Linear(64, 3)                              # a submodule swapped: new shapes
    assert cm(x).shape == (4, 3)
    assert counter.frame_count >= 2


def test_deepcopy_of_compiled_module_works():
    cm = framejit.compile(MLP())
    x = torch.randn(2, 32)
    cm(x)
    other = copy.deepcopy(cm)
    assert torch.allclose(other(x), cm(x))


def test_pickling_a_compiled_module_saves_the_module_it_was_made_from(tmp_path):
    import pickle
    torch.manual_seed(0)
    model = MLP()
    cm = framejit.compile(model)
    x = torch.randn(2, 32)
    cm(x)
    loaded = pickle.loads(pickle.dumps(cm))
    assert type(loaded) is MLP and loaded is not model
    torch.testing.assert_close(loaded(x), model(x))
    torch.save(cm, tmp_path / "model.pt")
    again = torch.load(tmp_path / "model.pt", weights_only=False)
    assert type(again) is MLP
    torch.testing.assert_close(again(x), model(x))


def test_disable():
    @framejit.disable
    def helper(x):
        return x * 2

    assert framejit.compile(helper) is helper

    def caller(x):
        return helper(x) + 1

    out = framejit.explain(caller)(torch.ones(2))
    assert torch.equal(out.result, torch.full((2,), 3.0))
    assert out.graph_break_count == 1


def test_reset_recompiles():
    counter = framejit.CompileCounter()
    f = framejit.compile(add_relu, backend=counter)
    x = torch.randn(3)
    f(x, x)
    framejit.reset()
    f(x, x)
    assert counter.frame_count == 2


def test_fullgraph_raises_unsupported_with_source_line():
    def f(x):
        y = x + 1
        print("no")
        return y

    with pytest.raises(framejit.Unsupported, match=r"print\(\)(.|\n)*line \d+, in f(.|\n)*print\(\"no\"\)(.|\n)*\^\^\^"):
        framejit.compile(f, fullgraph=True)(torch.ones(1))


def test_threads_share_one_conversion_and_agree():
    counter = framejit.CompileCounter()
    f = framejit.compile(add_relu, backend=counter)
    x, y = torch.randn(16), torch.randn(16)
    expected = add_relu(x, y)
    errors = []

    def work():
        for _ in range(50):
            if not torch.equal(f(x, y), expected):
                errors.append("mismatch")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert counter.frame_count == 1


def test_internal_failure_falls_back_with_warning_and_record(tmp_path):
    def broken_backend(gm, example_inputs):
        raise RuntimeError("backend exploded")

    f = framejit.compile(add_relu, backend=broken_backend, debug_dir=tmp_path)
    x = torch.randn(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = f(x, x)
    assert torch.equal(out, add_relu(x, x))
    messages = [str(w.message) for w in caught]
    assert any("backend exploded" in m and ".rec" in m for m in messages), messages
    recs = list((tmp_path / "records").glob("*.rec"))
    assert len(recs) == 1
    assert (recs[0].stat().st_mode & 0o777) == 0o600


def test_compiled_module_call_runs_hooks_tracing_and_instance_forward_like_nn_module():
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    compiled = framejit.compile(lin)
    x = torch.randn(2, 3)
    plain = torch.nn.functional.linear(x, lin.weight, lin.bias)
    torch.testing.assert_close(compiled(x), plain)
    seen = []
    handle = compiled.register_forward_pre_hook(lambda mod, args: seen.append(args[0] is x))
    handle2 = compiled.register_forward_hook(lambda mod, args, out: out * 2)
    torch.testing.assert_close(compiled(x), plain * 2)
    assert seen == [True]
    handle.remove()
    handle2.remove()
    torch.testing.assert_close(compiled(x), plain)
    handle = lin.register_forward_hook(lambda mod, args, out: out * 3)     # through the original module
    torch.testing.assert_close(compiled(x), plain * 3)
    handle.remove()
    torch.testing.assert_close(compiled(x), plain)
    glob = torch.nn.modules.module.register_module_forward_hook(lambda mod, args, out: out + 1)
    try:
        torch.testing.assert_close(compiled(x), plain + 1)
    finally:
        glob.remove()
    compiled.forward = lambda x: x * 0                          # an instance-level forward wins
    try:
        torch.testing.assert_close(compiled(x), x * 0)
    finally:
        del compiled.forward
    torch.testing.assert_close(compiled(x), plain)


def _passes_through(forward):
    """A transformers-style decorator: the forward that runs takes (self, *args, **kwargs)."""
    @functools.wraps(forward)
    def wrapper(self, *args, **kwargs):
        return forward(self, *args, **kwargs)
    return wrapper


class PassThrough(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    @_passes_through
    def forward(self, x, scale=1.0):
        return self.lin(x) * scale


def test_a_module_whose_forward_takes_star_args_dispatches_in_its_own_call_and_keeps_hook_semantics():
    torch.manual_seed(0)
    m = PassThrough()
    compiled = framejit.compile(m)
    assert type(compiled).__call__.__code__.co_filename.startswith("<framejit module call")
    x = torch.randn(2, 3)
    torch.testing.assert_close(compiled(x), m(x))
    torch.testing.assert_close(compiled(x, scale=2.0), m(x, scale=2.0))
    torch.testing.assert_close(compiled(x, 3.0), m(x, 3.0))
    seen = []
    handle = compiled.register_forward_pre_hook(lambda mod, args, kwargs: seen.append((len(args), dict(kwargs))),
                                                with_kwargs=True)
    torch.testing.assert_close(compiled(x, scale=2.0), m(x, scale=2.0))
    assert seen == [(1, {"scale": 2.0}), (1, {"scale": 2.0})]       # the hooks see the call as it was made
    handle.remove()
    torch.testing.assert_close(compiled(x), m(x))
    handle = m.register_forward_hook(lambda mod, args, out: out * 3)   # through the original module
    torch.testing.assert_close(compiled(x), m(x))
    torch.testing.assert_close(compiled(x), m.lin(x) * 3)
    handle.remove()
    torch.testing.assert_close(compiled(x), m.lin(x))
    glob = torch.nn.modules.module.register_module_forward_hook(lambda mod, args, out: out + 1)
    try:
        torch.testing.assert_close(compiled(x), m(x))               # the inner Linear's hook too
    finally:
        glob.remove()
    compiled.forward = lambda x: x * 0
    try:
        torch.testing.assert_close(compiled(x), x * 0)
    finally:
        del compiled.forward
    torch.testing.assert_close(compiled(x), m(x))
    assert framejit.explain(m)(x).graph_count == 1


# --- bad arguments fail where they are given, saying what is expected -----------------------------

SIGNATURE = "backend(gm: torch.fx.GraphModule, example_inputs: list) -> callable"


def one_argument_backend(gm):
    return gm.forward


def three_argument_backend(gm, example_inputs, extra):
    return gm.forward


@pytest.mark.parametrize("backend", [one_argument_backend, three_argument_backend, lambda: None,
                                     lambda gm, *, example_inputs: gm.forward])
def test_a_backend_with_the_wrong_signature_fails_at_compile_and_register(backend):
    with pytest.raises(TypeError, match=r"backend must be callable as " + SIGNATURE.replace("(", r"\(")
                       .replace(")", r"\)") + "; .* cannot take those two arguments"):
        framejit.compile(add_relu, backend=backend)
    with pytest.raises(TypeError, match="backend 'wrong' must be callable as backend\\(gm"):
        framejit.register_backend("wrong", backend)
    with pytest.raises(TypeError, match="backend must be callable as"):
        framejit.explain(add_relu, backend=backend)
    with pytest.raises(TypeError, match="backend must be callable as"):
        framejit.CompileCounter(backend)
    assert "wrong" not in framejit.backends.BACKENDS


def test_backends_of_every_right_shape_are_accepted():
    class Callable:
        def __call__(self, gm, example_inputs, options=None):
            return gm.forward

    for backend in (lambda gm, example_inputs: gm.forward, lambda *args: args[0].forward, Callable(),
                    functools.partial(three_argument_backend, extra=1), framejit.CompileCounter()):
        x, y = torch.randn(2), torch.randn(2)
        assert torch.equal(framejit.compile(add_relu, backend=backend)(x, y), add_relu(x, y))


@pytest.mark.parametrize("returned", [None, 42, "forward"])
def test_a_backend_returning_a_non_callable_is_named_not_a_name_error(returned, tmp_path):
    def backend(gm, example_inputs):
        return returned

    compiled = framejit.compile(add_relu, backend=backend, debug_dir=tmp_path)
    x, y = torch.randn(2), torch.randn(2)
    with pytest.warns(RuntimeWarning, match=r"backend 'backend' returned .*not a callable: a backend is "
                      r"backend\(gm: torch.fx.GraphModule, example_inputs: list\) -> callable") as caught:
        assert torch.equal(compiled(x, y), add_relu(x, y))     # falls back to plain Python, with the reason
    assert not any("__fj_" in str(w.message) for w in caught)


def test_framejit_own_backend_names_cannot_be_replaced():
    with pytest.raises(ValueError, match="'eager' is one of framejit's own backends"):
        framejit.register_backend("eager", lambda gm, example_inputs: gm.forward)
    assert framejit.backends.BACKENDS["eager"] is framejit.backends.registry.eager


def test_unknown_names_suggest_the_close_one():
    with pytest.raises(TypeError, match=r"framejit.compile\(\) got an unexpected keyword argument 'fullgrph' "
                                        r"\(did you mean 'fullgraph'\?\); it takes model, fullgraph, dynamic, backend, mode, options"):
        framejit.compile(add_relu, fullgrph=True)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'recompile_limt' \(did you mean "
                                        r"'recompile_limit'\?\)"):
        framejit.compile(add_relu, config=framejit.Config(), recompile_limt=2)
    with pytest.raises(TypeError, match=r"framejit.explain\(\) got an unexpected keyword argument 'backedn'"):
        framejit.explain(add_relu, backedn="eager")
    with pytest.raises(ValueError, match=r"unknown backend 'inductr' \(did you mean 'inductor'\?\)"):
        framejit.compile(add_relu, backend="inductr")


@pytest.mark.parametrize("target, pattern", [
    (torch.nn.Linear, r"Linear is a class; compile an instance instead: framejit.compile\(Linear\(...\)\)"),
    (dict, "dict is a class"),
    (len, r"a builtin \(C\) function has no Python bytecode"),
    (torch.sin, r"a builtin \(C\) function"),
    ([].append, r"a builtin \(C\) function"),
    (functools.partial(add_relu, 1), r"compile the function it wraps"),
    (staticmethod(add_relu), r"compile the function it wraps"),
    (framejit.CompileCounter(), "expected a Python function, method or nn.Module, got a callable CompileCounter"),
    (3, "expected a Python function, method or nn.Module to compile, got int"),
    ("add_relu", "expected a Python function, method or nn.Module to compile, got str"),
])
def test_what_cannot_be_compiled_is_refused_at_compile_saying_what_to_do(target, pattern):
    with pytest.raises(TypeError, match=r"framejit.compile\(.*\): " + pattern):
        framejit.compile(target)
    with pytest.raises(TypeError, match=r"framejit.compile\(.*\): " + pattern):
        framejit.compile(backend="eager")(target)
    with pytest.raises(TypeError, match=r"framejit.explain\(.*\): " + pattern.replace("framejit.compile", "framejit.explain")):
        framejit.explain(target)


def test_compiling_twice_is_compiling_once():
    x, y = torch.randn(2), torch.randn(2)
    counter = framejit.CompileCounter()
    twice = framejit.compile(framejit.compile(add_relu), backend=counter)
    assert torch.equal(twice(x, y), add_relu(x, y)) and counter.frame_count == 1
    assert twice.__wrapped__ is add_relu
    model = MLP()
    twice_model = framejit.compile(framejit.compile(model))
    assert torch.equal(twice_model(torch.ones(2, 32)), model(torch.ones(2, 32)))


def test_replay_flags_are_checked(tmp_path):
    with pytest.raises(TypeError, match=r"framejit.replay\(run=...\) must be True or False"):
        framejit.replay(tmp_path / "x.rec", run="yes")
