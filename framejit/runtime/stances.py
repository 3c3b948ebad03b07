"""torch.compiler.set_stance(...) as torch.compile honours it, on every call, at no per-call cost.

torch.compile reads its stance on every call of a compiled function. framejit's fast path (the
generated dispatcher, runtime/dispatcher.py) asks one question instead: is torch's stance object still
the one last judged "calm" (the global dynamo_reads.py names `is CALM.stance`, an identity test, ~1 ns)? Only
when it is not does it call `forces_miss_path()`, which judges the new object once:

- "default", "eager_on_recompile", "fail_on_recompile", "eager_then_compile", "aot_eager_then_compile"
  change nothing on a cache hit (cached graphs run, as under torch.compile): the object becomes CALM and
  later calls pay nothing. Their difference is at a cache miss (`on_miss`).
- "force_eager" and `force_backend=` change every call: the dispatcher hands each call to the miss path,
  which runs it as plain Python (force_eager) or through the forced backend's own cache.

At a cache miss (`on_miss`), as torch.compile does at one:
- force_eager: the call runs as plain Python, nothing converts (nor does anything it calls);
- eager_on_recompile: cached graphs still run; a miss runs as plain Python, without converting, even
  for a function never compiled;
- fail_on_recompile: cached graphs still run; a miss raises RuntimeError naming the function (the first
  conversion too, as torch.compile raises for its first compile);
- eager_then_compile / aot_eager_then_compile: the first miss of each function runs as plain Python
  (aot_eager's first call runs the same ops), later misses convert;
- default with force_backend=B: the call runs on a compiled copy of the function whose backend is B
  (its own entries: cached graphs of the usual backend are not used meanwhile, nor B's after).
"""
import warnings
import weakref

from .. import dynamo_reads

class Calm:
    """The stance object last judged to change nothing on a cache hit (None: torch._dynamo not imported)."""
    __slots__ = ("stance",)

    def __init__(self):
        self.stance = None


CALM = Calm()

HIT_UNCHANGED = frozenset({"default", "eager_on_recompile", "fail_on_recompile", "eager_then_compile",
                           "aot_eager_then_compile"})
_WARNED = set()
_RAN_FIRST_EAGERLY = weakref.WeakSet()       # code states whose first call ran eagerly (eager_then_compile)


def forces_miss_path():
    """torch's stance object changed since CALM was set: must this call take the miss path? Judges the
    new object once; an object that changes nothing on a hit becomes CALM."""
    current = dynamo_reads.stance_object()
    name = getattr(current, "stance", "default")
    if getattr(current, "skip_guard_eval_unsafe", False) and "skip_guard_eval_unsafe" not in _WARNED:
        _WARNED.add("skip_guard_eval_unsafe")
        warnings.warn("framejit: set_stance(..., skip_guard_eval_unsafe=True) is not honoured: framejit "
                      "always evaluates every guard (safe, and its guards are already cheap)", UserWarning,
                      stacklevel=3)
    if name in HIT_UNCHANGED and getattr(current, "backend", None) is None:
        CALM.stance = current
        return False
    return True


def on_miss(fn, state, local, opts, args, kwargs, compile_copy):
    """What the stance makes of a cache miss: None (convert as by default) or a zero-argument function
    giving the call's result instead. `compile_copy(fn, backend_fn)`: a compiled copy of fn with another
    backend and these options (runtime/compiled.py's, handed in: it imports this module)."""
    current = dynamo_reads.stance_object()
    if current is None:
        return None
    name = getattr(current, "stance", "default")
    if name == "force_eager":
        return lambda: fn(*args, **kwargs)
    if name == "eager_on_recompile":
        return lambda: fn(*args, **kwargs)
    if name == "fail_on_recompile":
        raise RuntimeError(f"framejit: {fn.__qualname__} would be compiled (its cached graphs do not fit this "
                           f"call), and torch.compiler.set_stance(\"fail_on_recompile\") is in effect")
    if name in ("eager_then_compile", "aot_eager_then_compile"):
        if state in _RAN_FIRST_EAGERLY:
            return None
        _RAN_FIRST_EAGERLY.add(state)
        return lambda: fn(*args, **kwargs)
    backend = getattr(current, "backend", None)
    if name == "default" and backend is not None:
        from ..backends import lookup_backend
        if opts.backend is lookup_backend(backend):       # compiled with it already (or the forced copy)
            return None
        return lambda: forced_backend_copy(fn, local, backend, compile_copy)(*args, **kwargs)
    if name not in _WARNED and name != "default":
        _WARNED.add(name)
        warnings.warn(f"framejit: torch.compiler.set_stance({name!r}) is not honoured; calls convert as by "
                      "default", UserWarning, stacklevel=4)
    return None


_FORCED_COPIES = weakref.WeakKeyDictionary()   # WrapperState -> {(backend, closure id): (fn, compiled copy)}


def forced_backend_copy(fn, local, backend, compile_copy):
    """The compiled copy of `fn` whose graphs `backend` compiles (set_stance's force_backend=), one per
    compiled function, backend and closure, made on first use."""
    copies = _FORCED_COPIES.setdefault(local, {})
    key = (backend if isinstance(backend, str) else id(backend), id(fn.__closure__))
    found = copies.get(key)
    if found is None or found[0].__closure__ is not fn.__closure__:
        from ..backends import lookup_backend
        found = copies[key] = (fn, compile_copy(fn, lookup_backend(backend)), backend)
    return found[1]
