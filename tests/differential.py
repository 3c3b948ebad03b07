"""Differential testing: run a function eagerly and through framejit, and demand identical behaviour.

framejit's first promise is that a compiled call is indistinguishable from the eager call. This
module is the one helper every translation test uses to hold it to that promise. `check()` runs
`fn` twice on independent deep copies of the same inputs -- once as plain Python, once through
`framejit.compile` with a compile-counting backend -- and compares, part by part:

  result       the returned value, recursively (tensors by dtype/shape/requires_grad/values)
  exception    the type and message of anything raised
  stdout       everything printed
  inputs       the arguments after the call (in-place mutations)
  globals      the module globals and closure cells the code names, after the call
  identity     which outputs are the same object as each other / as an input, and which tensors
               share storage with which (views stay views, `return y, y` stays one object)
  grads        with grads=True, the .grad of every input leaf after backward() of the outputs
  torch state  global torch/Python state after the call (default dtype, deterministic mode, matmul
               precision, threads, print options, backend flags, ..., and both RNG states: the
               same random numbers must have been drawn, backward included). Every run starts from
               the state check() was called in, which is put back afterwards.

It then calls the compiled function again on fresh copies and demands a cache hit (no new
compile) and the same outcome, and optionally asserts the number of graphs and graph breaks.
Failure messages name the part that differed and the path to it (e.g. `result[1]['a']`).
"""

import contextlib
import copy
import enum
import functools
import io
import sys
import types

import numpy as np
import torch

_SCALAR_TYPES = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device)
_SIMPLE_TYPES = _SCALAR_TYPES + (torch.Tensor, list, tuple, dict, set, frozenset, torch.Size)
_MUTABLE_CONTAINERS = (list, dict, set)
_NOT_PLAIN = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
              torch.nn.Module, enum.Enum, functools.partial)


def identity_mode():
    """True when tests run against the stand-in compiler installed by conftest (no framejit yet)."""
    return getattr(sys.modules.get("framejit"), "IDENTITY_STAND_IN", False)


def randn(*shape, seed=0, dtype=torch.float32, requires_grad=False):
    """A deterministic random tensor: the same seed always gives the same values."""
    gen = torch.Generator().manual_seed(seed)
    t = torch.randn(*shape, generator=gen, dtype=dtype)
    return t.requires_grad_(requires_grad)


def randint(low, high, *shape, seed=0, dtype=torch.int64):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, shape, generator=gen, dtype=dtype)


class DifferentialMismatch(AssertionError):
    """Eager and compiled runs disagreed; the message says which part and where."""


class _CountingBackend:
    """Wraps a user-given callable backend so graph counts can still be asserted."""

    def __init__(self, inner):
        self.inner = inner
        self.frame_count = 0
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.graphs.append(gm)
        return self.inner(gm, example_inputs)


class _Outcome:
    """Everything observable about one call."""

    def __init__(self, args, kwargs):
        self.args = args
        self.kwargs = kwargs
        self.result = None
        self.exc = None
        self.stdout = ""
        self.globals_after = {}
        self.grads = None
        self.torch_state = None


# ---------------------------------------------------------------- watched globals and cells


def _names_read(code, seen):
    """co_names of a code object and every code object nested in it."""
    if code in seen:
        return set()
    seen.add(code)
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const, seen)
    return names


def _watched_globals(fn):
    """Module-global names (of fn and same-module helper functions it names) holding simple values."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return fn, []
    namespace = fn.__globals__
    seen_code = set()
    pending = [code]
    watched = set()
    while pending:
        for name in _names_read(pending.pop(), seen_code):
            if name not in namespace:
                continue
            value = namespace[name]
            if isinstance(value, types.FunctionType) and value.__globals__ is namespace:
                pending.append(value.__code__)
            elif _watchable(value):
                watched.add(name)
    return fn, sorted(watched)


class _StateWatch:
    """The watched globals and closure cells: captured once, restored in place before every run."""

    def __init__(self, fn):
        fn, names = _watched_globals(fn)
        self.namespace = getattr(fn, "__globals__", {})
        self.names = names
        self.cells = []
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if _watchable(value):
                self.cells.append(cell)
        self.global_states = {name: _capture(self.namespace[name], {}) for name in self.names}
        self.cell_states = [_capture(cell.cell_contents, {}) for cell in self.cells]

    def current(self):
        state = {"global " + n: self.namespace.get(n, "<deleted>") for n in self.names}
        for i, cell in enumerate(self.cells):
            try:
                state[f"cell {i}"] = cell.cell_contents
            except ValueError:
                state[f"cell {i}"] = "<empty>"
        return _snapshot(state)

    def restore(self):
        memo = {}
        for name in self.names:
            self.namespace[name] = _restore(self.global_states[name], memo)
        for cell, state in zip(self.cells, self.cell_states):
            cell.cell_contents = _restore(state, memo)


class _TorchState:
    """Global torch/Python state (framejit.observe.global_state's list): captured when check() starts, put
    back before and after every run; each run's state after the call is what gets compared."""

    def __init__(self):
        self.module = None if identity_mode() else __import__("framejit.observe.global_state", fromlist=["STATE"])
        self.start = self.module.global_state_snapshot() if self.module else None

    def current(self):
        if self.module is None:
            return None
        snap = self.module.global_state_snapshot()
        rng = snap.torch_rng_state
        return dict(snap.flags(), **{"Python random state": snap.python_rng_state,
                                    "torch RNG state": hash(bytes(rng.numpy()))})

    def restore(self):
        if self.module is not None:
            self.module.restore_global_state(self.start)


def _plain_object(value):
    """An instance of a user class whose state is its __dict__ (not a module, class, function...)."""
    return (hasattr(value, "__dict__") and not isinstance(value, _NOT_PLAIN)
            and type(value).__module__.split(".")[0] not in ("builtins", "torch"))


def _watchable(value):
    return isinstance(value, _SIMPLE_TYPES) or _plain_object(value)


def _snapshot(value, memo=None):
    """A deep copy for comparison; copes with non-leaf tensors (copied detached, flag kept)."""
    memo = {} if memo is None else memo
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, torch.Tensor):
        copied = value.detach().clone().requires_grad_(value.requires_grad)
    elif type(value) in (list, tuple, set, frozenset):
        copied = type(value)(_snapshot(v, memo) for v in value)
    elif type(value) is dict:
        copied = {k: _snapshot(v, memo) for k, v in value.items()}
    else:
        try:
            copied = copy.deepcopy(value)
        except Exception:  # not copyable: compare the object itself
            copied = value
    memo[id(value)] = copied
    return copied


def _capture(obj, memo):
    """Remember obj's identity and contents, recursively, so _restore can put both back."""
    if id(obj) in memo:
        return memo[id(obj)]
    node = [obj, None]
    memo[id(obj)] = node
    if isinstance(obj, torch.Tensor):
        node[1] = obj.detach().clone()
    elif type(obj) in (list, tuple):
        node[1] = [_capture(item, memo) for item in obj]
    elif type(obj) is dict:
        node[1] = [(key, _capture(item, memo)) for key, item in obj.items()]
    elif type(obj) is set:
        node[1] = list(obj)
    elif _plain_object(obj):
        node[1] = [(key, _capture(item, memo)) for key, item in vars(obj).items()]
    return node


def _restore(node, memo):
    """Put back the captured contents into the captured objects themselves (guards key on identity)."""
    obj, contents = node
    if id(obj) in memo or contents is None:
        return obj
    memo[id(obj)] = obj
    if isinstance(obj, torch.Tensor):
        with torch.no_grad():
            if obj.shape == contents.shape and obj.dtype == contents.dtype:
                obj.copy_(contents)
            else:
                obj.set_(contents.clone())
        obj.grad = None
    elif type(obj) is list:
        obj[:] = [_restore(item, memo) for item in contents]
    elif type(obj) is tuple:
        for item in contents:
            _restore(item, memo)
    elif type(obj) is dict:
        obj.clear()
        obj.update((key, _restore(item, memo)) for key, item in contents)
    elif type(obj) is set:
        obj.clear()
        obj.update(contents)
    else:
        state = vars(obj)
        state.clear()
        state.update((key, _restore(item, memo)) for key, item in contents)
    return obj


# ---------------------------------------------------------------- running one side


def _leaves(obj, path="", out=None):
    """(path, object) for every object inside nested containers, containers included."""
    if out is None:
        out = []
    out.append((path, obj))
    if isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            _leaves(item, f"{path}[{i}]", out)
    elif isinstance(obj, dict):
        for i, (key, item) in enumerate(obj.items()):
            if _object_key(key):
                _leaves(key, f"{path}.keys()[{i}]", out)
            _leaves(item, f"{path}[{key!r}]" if not _object_key(key) else f"{path}.values()[{i}]", out)
    return out


def _object_key(key):
    """A dict key that is an object hashed by identity (a tensor, a user object), not a constant."""
    return isinstance(key, torch.Tensor) or _plain_object(key)


def _tensors(obj):
    return [(p, t) for p, t in _leaves(obj) if isinstance(t, torch.Tensor)]


def _run(fn, args, kwargs, watch, grads, state):
    out = _Outcome(args, kwargs)
    watch.restore()
    state.restore()
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        try:
            out.result = fn(*args, **kwargs)
        except Exception as exc:  # the exception itself is what we compare
            out.exc = exc
    out.stdout = buffer.getvalue()
    out.globals_after = watch.current()
    if grads and out.exc is None:
        outputs = [t for _, t in _tensors(out.result) if t.requires_grad and t.is_floating_point()]
        if outputs:
            sum(t.sum() for t in outputs).backward()
        out.grads = [(p, t.grad) for p, t in _tensors((args, kwargs)) if t.requires_grad]
    out.torch_state = state.current()
    state.restore()
    watch.restore()
    return out


# ---------------------------------------------------------------- comparing


def _fail(part, path, message):
    raise DifferentialMismatch(f"{part}{path}: {message}")


_REVERSED_ITERATORS = (reversed, type(reversed([])))
_DICT_REVERSED_ITERATORS = (type(reversed({})), type(reversed({}.values())), type(reversed({}.items())))
_POSITIONED_ITERATORS = (type(iter(())), type(iter([])), type(iter(range(0)))) + _REVERSED_ITERATORS + \
    _DICT_REVERSED_ITERATORS


def _items_left(it):
    if type(it) in _DICT_REVERSED_ITERATORS:      # listed from a copy; its dict changed size: a marker
        try:
            return it.__reduce__()[1][0]
        except RuntimeError as err:
            return [f"<next() raises RuntimeError: {err}>"]
    state = it.__reduce__()
    if len(state) <= 2:
        return []
    if type(it) in _REVERSED_ITERATORS:           # its index counts down
        return list(state[1][0][state[2]::-1]) if state[2] >= 0 else []
    return list(state[1][0][state[2]:])


def compare(eager, compiled, part="result", path="", atol=1e-6, rtol=1e-5, depth=0):
    """Recursively demand that `compiled` equals `eager`; raise DifferentialMismatch otherwise."""
    if isinstance(eager, torch.Tensor) or isinstance(compiled, torch.Tensor):
        _compare_tensors(eager, compiled, part, path, atol, rtol)
        return
    if isinstance(eager, (np.ndarray, np.generic)) or isinstance(compiled, (np.ndarray, np.generic)):
        _compare_arrays(eager, compiled, part, path, atol, rtol)
        return
    if type(eager) is not type(compiled):
        _fail(part, path, f"type {type(eager).__name__} (eager) != {type(compiled).__name__} "
              f"(compiled): {eager!r} vs {compiled!r}")
    if isinstance(eager, (list, tuple)):
        if len(eager) != len(compiled):
            _fail(part, path, f"length {len(eager)} (eager) != {len(compiled)} (compiled)")
        for i, (a, b) in enumerate(zip(eager, compiled)):
            compare(a, b, part, f"{path}[{i}]", atol, rtol, depth + 1)
    elif isinstance(eager, dict) and any(_object_key(k) for k in (*eager, *compiled)):
        if len(eager) != len(compiled):        # keyed by tensors or objects: keys and values in order
            _fail(part, path, f"length {len(eager)} (eager) != {len(compiled)} (compiled)")
        for i, (a, b) in enumerate(zip(eager.items(), compiled.items())):
            compare(a[0], b[0], part, f"{path}.keys()[{i}]", atol, rtol, depth + 1)
            compare(a[1], b[1], part, f"{path}.values()[{i}]", atol, rtol, depth + 1)
    elif isinstance(eager, dict):
        if list(eager) != list(compiled):
            _fail(part, path, f"keys {list(eager)} (eager) != {list(compiled)} (compiled)")
        for key in eager:
            compare(eager[key], compiled[key], part, f"{path}[{key!r}]", atol, rtol, depth + 1)
    elif _plain_object(eager) and type(eager).__eq__ is object.__eq__ and eager is not compiled:
        if depth > 20:
            return
        compare(vars(eager), vars(compiled), part, f"{path}.__dict__", atol, rtol, depth + 1)
    elif type(eager) in _POSITIONED_ITERATORS and eager is not compiled:
        # a tuple, list or range iterator: by the items it has left (read without advancing it)
        compare(_items_left(eager), _items_left(compiled), part, f"{path}<items left>", atol, rtol, depth + 1)
    elif isinstance(eager, float) and eager != eager:
        if compiled == compiled:
            _fail(part, path, f"nan (eager) != {compiled!r} (compiled)")
    elif eager != compiled:
        _fail(part, path, f"{eager!r} (eager) != {compiled!r} (compiled)")


def _compare_tensors(a, b, part, path, atol, rtol):
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        _fail(part, path, f"{type(a).__name__} (eager) != {type(b).__name__} (compiled)")
    for attr in ("dtype", "shape", "requires_grad", "device", "layout"):
        if getattr(a, attr) != getattr(b, attr):
            _fail(part, path, f"{attr} {getattr(a, attr)} (eager) != {getattr(b, attr)} (compiled)")
    a, b = a.detach(), b.detach()
    if a.is_floating_point() or a.is_complex():
        same = torch.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True)
    else:
        same = torch.equal(a, b)
    if not same:
        _fail(part, path, f"values differ; max abs diff "
              f"{(a.double() - b.double()).abs().max().item() if a.numel() else 0}:\n"
              f"eager={a}\ncompiled={b}")


def _compare_arrays(a, b, part, path, atol, rtol):
    """numpy arrays and scalars: the same type (ndarray, np.float32 ...), dtype, shape and values."""
    if type(a) is not type(b):
        _fail(part, path, f"type {type(a).__name__} (eager) != {type(b).__name__} (compiled): {a!r} vs {b!r}")
    if a.dtype != b.dtype or a.shape != b.shape:
        _fail(part, path, f"dtype/shape {a.dtype} {a.shape} (eager) != {b.dtype} {b.shape} (compiled)")
    if a.dtype.kind in "fc":
        same = np.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True)
    else:
        same = np.array_equal(a, b)
    if not same:
        _fail(part, path, f"values differ:\neager={a!r}\ncompiled={b!r}")


def _identity_pattern(outcome):
    """For each output object: which earlier object (input or output) it is, or shares storage with."""
    labels = {}
    storages = {}
    for path, obj in _leaves((outcome.args, outcome.kwargs), "input"):
        if isinstance(obj, (torch.Tensor, np.ndarray) + _MUTABLE_CONTAINERS) or _plain_object(obj):
            labels.setdefault(id(obj), path)
        if isinstance(obj, torch.Tensor) and obj.numel():
            storages.setdefault(obj.untyped_storage().data_ptr(), path)
    pattern = []
    for path, obj in _leaves(outcome.result, "result"):
        if isinstance(obj, (torch.Tensor, np.ndarray) + _MUTABLE_CONTAINERS) or _plain_object(obj):
            pattern.append((path, "is", labels.setdefault(id(obj), path)))
        if isinstance(obj, torch.Tensor) and obj.numel():
            pattern.append((path, "shares storage with",
                            storages.setdefault(obj.untyped_storage().data_ptr(), path)))
    return pattern


def _compare_outcomes(eager, compiled, atol, label):
    if (eager.exc is None) != (compiled.exc is None):
        _fail(f"{label}exception", "", f"{eager.exc!r} (eager) != {compiled.exc!r} (compiled)")
    if eager.exc is not None:
        if type(eager.exc) is not type(compiled.exc) or str(eager.exc) != str(compiled.exc):
            _fail(f"{label}exception", "", f"{type(eager.exc).__name__}({eager.exc}) (eager) != "
                  f"{type(compiled.exc).__name__}({compiled.exc}) (compiled)")
    else:
        compare(eager.result, compiled.result, f"{label}result", "", atol)
        e_ids, c_ids = _identity_pattern(eager), _identity_pattern(compiled)
        for e, c in zip(e_ids, c_ids):
            if e != c:
                _fail(f"{label}identity", "", f"eager: {e[0]} {e[1]} {e[2]}; "
                      f"compiled: {c[0]} {c[1]} {c[2]}")
    if eager.stdout != compiled.stdout:
        _fail(f"{label}stdout", "", f"{eager.stdout!r} (eager) != {compiled.stdout!r} (compiled)")
    compare(eager.args, compiled.args, f"{label}input args after call", "", atol)
    compare(eager.kwargs, compiled.kwargs, f"{label}input kwargs after call", "", atol)
    compare(eager.globals_after, compiled.globals_after, f"{label}globals after call", "", atol)
    if eager.grads is not None:
        compare(eager.grads, compiled.grads, f"{label}grads", "", max(atol, 1e-5))
    if eager.torch_state is not None:
        for name, value in eager.torch_state.items():
            if compiled.torch_state[name] != value:
                shown = "differs" if "random" in name or "RNG" in name else \
                    f"{value!r} (eager) != {compiled.torch_state[name]!r} (compiled)"
                _fail(f"{label}torch state", f" {name}", shown)


# ---------------------------------------------------------------- the helper


def _framejit():
    import framejit

    if not hasattr(framejit, "compile"):
        raise RuntimeError("framejit.compile does not exist yet; run with FRAMEJIT_TEST_IDENTITY=1 "
                           "to exercise the harness against the identity stand-in")
    return framejit


def check(fn, *args, backend=None, fullgraph=False, graphs=None, breaks=None, grads=False,
          atol=1e-6, **kwargs):
    """Run fn eagerly and compiled on fresh copies of the inputs; assert they behave identically.

    backend:  None (CompileCounter over eager), a backend name, or a callable; always counted.
    graphs:   when given, the number of graphs compiled by the first call.
    breaks:   when given, the graph-break count reported by framejit.explain.
    grads:    backward() through the summed float outputs and compare every input leaf's .grad.
    Returns the result of the first compiled call.
    """
    fj = _framejit()
    fj.reset()
    if backend is None:
        counter = fj.backends.CompileCounter()
    elif isinstance(backend, str):
        counter = fj.backends.CompileCounter(backend)
    else:
        counter = _CountingBackend(backend)
    compiled_fn = fj.compile(fn, backend=counter, fullgraph=fullgraph)
    watch = _StateWatch(fn)
    state = _TorchState()

    def fresh():
        return copy.deepcopy((args, kwargs))

    eager = _run(fn, *fresh(), watch, grads, state)
    first = _run(compiled_fn, *fresh(), watch, grads, state)
    if fullgraph and isinstance(first.exc, fj.Unsupported) and not isinstance(eager.exc, fj.Unsupported):
        raise DifferentialMismatch(f"fullgraph: framejit raised Unsupported: {first.exc}") from first.exc
    _compare_outcomes(eager, first, atol, "")
    for gm in counter.graphs:
        gm.graph.lint()
    frames = counter.frame_count
    if graphs is not None and not identity_mode() and frames != graphs:
        raise DifferentialMismatch(f"graph count: expected {graphs}, framejit compiled {frames}")

    second = _run(compiled_fn, *fresh(), watch, grads, state)
    if counter.frame_count != frames:
        raise DifferentialMismatch(f"cache: the second call compiled {counter.frame_count - frames} "
                                   f"new graph(s) instead of hitting the cache")
    _compare_outcomes(eager, second, atol, "second call: ")

    if breaks is not None and not identity_mode():
        fj.reset()
        watch.restore()
        state.restore()
        explain_args, explain_kwargs = fresh()
        with contextlib.redirect_stdout(io.StringIO()):
            report = fj.explain(fn)(*explain_args, **explain_kwargs)
        watch.restore()
        state.restore()
        if report.graph_break_count != breaks:
            reasons = [f"line {r.line}: {r.reason}" for r in report.break_reasons]
            raise DifferentialMismatch(f"graph breaks: expected {breaks}, explain() reported "
                                       f"{report.graph_break_count}: {reasons}")
    return first.result


def check_together(fns, *args, backend=None, atol=1e-6, **kwargs):
    """check() for several functions compiled into one cache, without a reset between them (closures
    of one code object, equal code objects exec'd into different globals, functions of one decorator):
    each compiled function must behave exactly as its own eager call, on a first and on a second round
    of calls (the second hitting the cache). Returns the compiled functions."""
    fj = _framejit()
    fj.reset()
    if backend is None:
        backend = fj.backends.CompileCounter()
    compiled = [fj.compile(fn, backend=backend) for fn in fns]
    for label in ("", "second round: "):
        for i, (fn, compiled_fn) in enumerate(zip(fns, compiled)):
            watch = _StateWatch(fn)
            state = _TorchState()
            eager = _run(fn, *copy.deepcopy((args, kwargs)), watch, False, state)
            outcome = _run(compiled_fn, *copy.deepcopy((args, kwargs)), watch, False, state)
            _compare_outcomes(eager, outcome, atol, f"{label}function {i} ({getattr(fn, '__qualname__', fn)}): ")
    return compiled


def case(fn, *args, kwargs=None, name=None, xfail=None, **check_options):
    """One parametrized differential case: `fn(*args, **kwargs)` checked with check_options.

    name:  the test id (default: the function's name).
    xfail: the missing framejit feature that makes this case fail (marks it xfail, strict).
    """
    import pytest

    marks = [pytest.mark.xfail(strict=True, reason=f"missing feature: {xfail}")] if xfail else []
    return pytest.param(fn, args, kwargs or {}, check_options, id=name or fn.__name__, marks=marks)


CASE_FIELDS = "fn,args,kwargs,options"


def run_case(fn, args, kwargs, options):
    """The body of every parametrized differential test."""
    return check(fn, *args, **options, **kwargs)


# ---------------------------------------------------------------- several calls with changes in between


def outcome(fn, *args, **kwargs):
    """What one call did, as a comparable value: ("returned", result) or ("raised", type name, message)."""
    try:
        return ("returned", fn(*args, **kwargs))
    except Exception as exc:  # the exception itself is what we compare
        return ("raised", type(exc).__name__, str(exc))


def check_script(fn, script, backend=None, fullgraph=False, atol=1e-6):
    """Demand that a sequence of calls behaves as eagerly, with state changed between calls.

    `script(f)` makes its own objects, calls `f` (eager `fn`, then `framejit.compile(fn)`) any number
    of times, changes what it likes in between (an attribute appears, a dict loses a key, a class
    gains a method...) and returns a list of what it saw (`outcome(f, ...)`, objects' attributes...).
    The two lists and everything printed are compared; the script runs on fresh objects each time,
    so a cache entry compiled for one state must notice the next.
    """
    fj = _framejit()
    fj.reset()
    counter = fj.backends.CompileCounter() if backend is None else fj.backends.CompileCounter(backend)
    compiled_fn = fj.compile(fn, backend=counter, fullgraph=fullgraph)
    watch = _StateWatch(fn)
    seen = []
    for f in (fn, compiled_fn):
        watch.restore()
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            log = script(f)
        seen.append((_snapshot(log), buffer.getvalue(), watch.current()))
        watch.restore()
    (eager_log, eager_out, eager_globals), (comp_log, comp_out, comp_globals) = seen
    compare(eager_log, comp_log, "script log", "", atol)
    if eager_out != comp_out:
        _fail("script stdout", "", f"{eager_out!r} (eager) != {comp_out!r} (compiled)")
    compare(eager_globals, comp_globals, "globals after script", "", atol)
    return comp_log


def check_calls(fn, calls, backend=None, atol=1e-6, grads=False, **compile_options):
    """fn called once per item of `calls` ((args, kwargs) pairs, or argument tuples), eagerly and through
    one compiled function (framejit.compile(fn, backend=<counted>, **compile_options), e.g. dynamic=True),
    each on fresh copies of the same inputs: every call must behave as eagerly (see check()). Returns
    (compiled function, counting backend): `counter.frame_count` is the number of graphs compiled."""
    fj = _framejit()
    fj.reset()
    if backend is None or isinstance(backend, str):
        counter = fj.backends.CompileCounter(backend or "eager")
    else:
        counter = _CountingBackend(backend)
    compiled_fn = fj.compile(fn, backend=counter, **compile_options)
    watch = _StateWatch(fn)
    state = _TorchState()
    for i, call in enumerate(calls):
        args, kwargs = call if len(call) == 2 and isinstance(call[1], dict) and isinstance(call[0], tuple) \
            else (tuple(call), {})
        eager = _run(fn, *copy.deepcopy((args, kwargs)), watch, grads, state)
        compiled = _run(compiled_fn, *copy.deepcopy((args, kwargs)), watch, grads, state)
        _compare_outcomes(eager, compiled, atol, f"call {i}: ")
    return compiled_fn, counter
