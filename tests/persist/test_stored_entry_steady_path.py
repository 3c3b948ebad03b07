"""A stored entry's steady call tests what the converted entry tests, inline, and still misses on what it must.

Why (issue 24, "per-call time no worse than today"): an entry built from a stored conversion
(runtime/warm_start.py) asked Python helpers on every call whether its module checks still held
(`__fj_known`) and whether its words had moved (`Stamp.unchanged`), called `__fj_guards` from the entry,
checked a decorated forward's defaults (behind its closure cell) and the kwargs keys in Python, and read
the graph's parameters one subscript each: 2-5 us a call more than the converted entry
(bench/stored_entry_overhead.py). Now the module watch's counter and the roots' ids, and the stamp's words,
are compared inline (one native call for the words), and what is read through the closure cell is versioned.
The steady-call test below failed before (`__fj_known` and `unchanged` ran on every call).

The stale-entry tests hold the fast paths to the semantics: a changed closure cell, default, kwargs key,
module attribute, another module object, or a dead root whose id a new module takes, each gives eager's
result (a miss, or the module checks run again for the new objects), never the old entry's.
Built in this process from the record's JSON, the graph standing in for its library
(as tests/persist/test_stored_entry_words.py does).
"""
import functools
import json

import torch

import framejit
from framejit.backends import inductor_aoti
from framejit.convert.codegen import MISS
from framejit.runtime import warm_start


def _decorate(inner):
    @functools.wraps(inner)
    def wrapper(self, *args, **kwargs):
        return inner(self, *args, **kwargs)
    return wrapper


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.register_buffer("offset", torch.arange(4.0))

    def _forward(self, x, scale=2.0):
        return self.proj(x) * scale + self.offset

    forward = _decorate(_forward)


def _other_forward(self, x, scale=2.0):
    return self.proj(x) * scale - self.offset


def _stored_entry(monkeypatch, model, x):
    """The entry a later process builds from `model`'s first conversion (called as `model(x=x)`), as a call
    `entry(module, **kwargs)` (the closure passed as the entry's first argument)."""
    graphs = []

    def backend(gm, example_inputs):
        def run(*inputs):
            return gm(*inputs)
        run.framejit_aoti_key = f"graph{len(graphs)}"
        graphs.append(run)
        return run
    compiled = framejit.compile(model, backend=backend)
    with torch.no_grad():
        compiled(x=x)
    fn = type(model).forward
    assert fn.__code__.co_freevars
    result = compiled.forward._framejit_state.results[0]
    record = json.loads(json.dumps(warm_start.plan_of(fn, result, (model,), {"x": x})))
    monkeypatch.setattr(inductor_aoti, "load_stored", lambda store, key: (graphs[int(key[5:])], True))
    with torch.no_grad():
        entry = warm_start._build(fn, record, None, (model,), {"x": x}).entry

    def call(module, **kwargs):
        with torch.no_grad():
            return entry(fn.__closure__, module, **kwargs)
    call.env = entry.__globals__
    call.record = record
    return call


def _eager(module, **kwargs):
    with torch.no_grad():
        return module(**kwargs)


def _model(seed=0):
    torch.manual_seed(seed)
    return Scaled().eval()


class _Counting:
    """Stands in for an object of the entry's namespace and counts the calls made through it."""

    def __init__(self, target, counts, name):
        self._target, self._counts, self._name = target, counts, name

    def __call__(self, *args):
        self._counts[self._name] = self._counts.get(self._name, 0) + 1
        return self._target(*args)

    def __getattr__(self, attr):
        found = getattr(self._target, attr)
        if callable(found):
            return _Counting(found, self._counts, f"{self._name}.{attr}")
        return found


def test_a_steady_call_asks_no_python_helper(monkeypatch):
    model, x = _model(), torch.randn(3, 4)
    call = _stored_entry(monkeypatch, model, x)
    expected = _eager(model, x=x)
    assert torch.equal(call(model, x=x), expected)          # the first call pins and stamps
    counts = {}
    env = call.env
    for name in ("__fj_known", "__fj_st", "__fj_guards", "__fj_tree", "__fj_stamped"):
        env[name] = _Counting(env[name], counts, name)
    for _ in range(3):
        assert torch.equal(call(model, x=x), expected)
    assert counts == {}
    stamp = env["__fj_st"]._target
    assert stamp.native is (env["__fj_unchanged"](*env["__fj_sw"]))    # the inline test is the stamp's own


def test_the_decorated_originals_defaults_are_versioned_through_the_closure_cell(monkeypatch):
    model, x = _model(), torch.randn(3, 4)
    call = _stored_entry(monkeypatch, model, x)
    stamp = call.env["__fj_st"]
    assert any("__defaults__" in item[1] for item in stamp.items)
    assert call(model, x=x) is not MISS and call(model, x=x) is not MISS
    saved = Scaled._forward.__defaults__
    try:
        Scaled._forward.__defaults__ = (3.0,)
        assert call(model, x=x) is MISS
        assert torch.equal(_eager(model, x=x), model.proj(x).detach() * 3.0 + model.offset)
    finally:
        Scaled._forward.__defaults__ = saved
    assert torch.equal(call(model, x=x), _eager(model, x=x))      # put back: it hits again


def test_a_changed_closure_cell_misses(monkeypatch):
    model, x = _model(), torch.randn(3, 4)
    call = _stored_entry(monkeypatch, model, x)
    assert call(model, x=x) is not MISS and call(model, x=x) is not MISS
    cell = Scaled.forward.__closure__[0]
    saved = cell.cell_contents
    try:
        cell.cell_contents = _other_forward
        assert call(model, x=x) is MISS
    finally:
        cell.cell_contents = saved
    assert torch.equal(call(model, x=x), _eager(model, x=x))


def test_other_kwargs_keys_miss(monkeypatch):
    model, x = _model(), torch.randn(3, 4)
    call = _stored_entry(monkeypatch, model, x)
    assert call(model, x=x) is not MISS
    assert call(model, x=x, scale=2.0) is MISS
    assert call(model, scale=2.0, x=x) is MISS
    assert torch.equal(call(model, x=x), _eager(model, x=x))


def test_a_changed_module_attribute_or_another_module_gives_eagers_result(monkeypatch):
    model, x = _model(), torch.randn(3, 4)
    call = _stored_entry(monkeypatch, model, x)
    assert call(model, x=x) is not MISS
    other = _model(seed=1)
    assert torch.equal(call(other, x=x), _eager(other, x=x))      # its own parameters, not model's
    assert torch.equal(call(model, x=x), _eager(model, x=x))
    model.proj = torch.nn.Linear(4, 4)                             # same structure, other weights
    assert torch.equal(call(model, x=x), _eager(model, x=x))
    model.proj = torch.nn.Linear(4, 5)                             # another structure: a miss
    assert call(model, x=x) is MISS


def test_a_new_module_at_a_dead_roots_address_is_checked_again(monkeypatch):
    """A new module is not watched: nothing bumps the module watch's counter when it is made. The pin's
    fast state must not take it for the dead root whose id it has."""
    keep, x = _model(), torch.randn(3, 4)
    call = _stored_entry(monkeypatch, keep, x)
    reused = 0
    for seed in range(1, 30):
        first = _model(seed)
        assert torch.equal(call(first, x=x), _eager(first, x=x))
        old_id = id(first)
        del first                               # freed now (no collection: it would take the address)
        second = Scaled.__new__(Scaled)         # the object first, where `first` was; then its state
        reused += id(second) == old_id
        torch.manual_seed(seed + 100)
        second.__init__()
        second.eval()
        assert torch.equal(call(second, x=x), _eager(second, x=x))
        del second
    assert reused, "no address was reused: the test did not test anything"


def test_the_stamp_reads_each_word_once(monkeypatch):
    """Checks on one module's globals, or one class, share their words: the stamp compares each once (GPT-2's
    stored stamp was 395 words, 66 distinct, against the converted entry's 83)."""
    model, x = _model(), torch.randn(3, 4)
    call = _stored_entry(monkeypatch, model, x)
    assert call(model, x=x) is not MISS and call(model, x=x) is not MISS
    addresses = call.env["__fj_sw"][0]
    words = [addresses[i:i + 8] for i in range(0, len(addresses), 8)]
    assert words and len(set(words)) == len(words)


def test_the_dispatcher_inlines_a_stored_entry(monkeypatch):
    """A warm process's first miss takes the stored entry (runtime/compiled.py); the dispatcher then inlines
    it as it inlines a converted entry, instead of calling it from its loop (a Python call, and *args/**kwargs
    packed again: 0.3-0.7 us a call). The member cache is read through the pin's holder, so the dispatcher's
    copy of the names is never stale: another module object, or a module changed, gives eager's result."""
    model, x = _model(), torch.randn(3, 4)
    call = _stored_entry(monkeypatch, model, x)         # the record, and the graph standing in for its library
    built = []

    def load(fn, opts, args, kwargs):
        result = warm_start._build(fn, call.record, None, args, kwargs)
        built.append(result)
        return result
    monkeypatch.setattr(warm_start, "load", load)
    framejit.reset()
    compiled = framejit.compile(model, backend="eager")
    for _ in range(3):
        assert torch.equal(_eager(compiled, x=x), _eager(model, x=x))
    assert len(built) == 1 and compiled.forward._framejit_state.conversions == 0
    dispatcher_names = compiled.__call__.__code__.co_names + compiled.forward.__code__.co_names
    assert "__fj_pf" in dispatcher_names and "__fj_mc" in dispatcher_names
    other = _model(seed=1)
    compiled_other = framejit.compile(other, backend="eager")
    assert torch.equal(_eager(compiled_other, x=x), _eager(other, x=x))
    assert torch.equal(_eager(compiled, x=x), _eager(model, x=x))
    model.proj = torch.nn.Linear(4, 4)
    assert torch.equal(_eager(compiled, x=x), _eager(model, x=x))
    assert len(built) == 1
