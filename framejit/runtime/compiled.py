"""The compiled wrappers: what `framejit.compile` (api.py) returns, and what their cache misses do.

`_compile(fn)` returns a plain Python function with fn's signature semantics whose body is the fast
path (runtime/dispatcher.py): try each cached entry (generated code: guards, then the compiled graph)
and return the first hit; on a miss, convert the frame under the cache lock (convert/frame.py), observed
(observe/conversion.py), within the recompile limit. A module compiles to a module of a subclass of its
own class sharing the original's __dict__ (same parameters, buffers, state_dict keys, train/eval),
whose forward is the compiled forward, run on the original module (so `type(self)` inside it is the
user's class).
"""
import copyreg
import dataclasses
import functools
import inspect
import logging
import sys
import types
import warnings
import weakref

import torch

from . import cache
from ..backends import lookup_backend
from ..backends.compile_behind import TRACE_LOCK
from ..config import Config
from ..convert.codegen import MISS
from ..dynamo_reads import torch_logs
from ..convert.frame import convert_frame
from ..convert.results import Options, Unobserved
from ..translate.dispatch import CODE_LOOKASIDES
from ..convert.resume import note_resume_origin, resume_origin
from ..observe.conversion import watch_state
from ..observe.safe_text import miss_reason, unexplained_miss
from . import stances, warm_start
from .dispatcher import build_dispatcher, build_module_call, module_call_fits
from .ddp import compile_ddp, is_ddp
from .dynamic_misses import learn_dynamic

_DISABLED = weakref.WeakSet()


def _compile(fn, backend_fn, fullgraph, config, observer, inplace=False):
    if isinstance(fn, torch.nn.Module):
        if inplace:
            return compile_module_inplace(fn, backend_fn, fullgraph, config, observer)
        if is_ddp(fn):
            return compile_ddp(fn, backend_fn, fullgraph, config, observer, _compile_module)
        return _compile_module(fn, backend_fn, fullgraph, config, observer)
    if getattr(fn, "_framejit_fn", None) is not None:
        fn = fn._framejit_fn
    if isinstance(fn, types.MethodType):
        inner = _compile(fn.__func__, backend_fn, fullgraph, config, observer)
        return types.MethodType(inner, fn.__self__)
    check_compilable(fn, "framejit.compile")
    if fn in _DISABLED:
        return fn
    if fn.__code__ in CODE_LOOKASIDES:
        fn = _calling(fn)
    return _compile_function(fn, backend_fn, fullgraph, config, observer)


def _calling(fn):
    """A function calling `fn`: for a function the translator stands in for by its code (translate/dispatch.py's
    CODE_LOOKASIDES: `framejit.compile(optimizer.step)` compiles torch's step wrapper), so the stand-in runs
    at the call instead of its bytecode being translated."""
    def call(*args, **kwargs):
        return fn(*args, **kwargs)
    call.__name__, call.__qualname__ = fn.__name__, fn.__qualname__
    return call


def check_compilable(fn, caller):
    """Raise TypeError, saying what to do instead, unless `caller` (framejit.compile, framejit.explain)
    can compile `fn`: a Python function, a method of one, an nn.Module, or a framejit-compiled one."""
    target = getattr(fn, "_framejit_fn", None) or fn
    if isinstance(target, types.MethodType):
        target = target.__func__
    if isinstance(target, (types.FunctionType, torch.nn.Module)):
        return
    what = f"{caller}({_short_repr(fn)})"
    if isinstance(target, type):
        instead = (f"compile an instance instead: {caller}({target.__name__}(...))"
                   if issubclass(target, torch.nn.Module) else
                   "compile a function that uses it, or a method: MyClass.method")
        raise TypeError(f"{what}: {target.__name__} is a class; {instead}")
    if isinstance(target, (types.BuiltinFunctionType, types.BuiltinMethodType, types.MethodWrapperType,
                           types.WrapperDescriptorType, types.MethodDescriptorType)):
        raise TypeError(f"{what}: a builtin (C) function has no Python bytecode to compile; call it from a "
                        "Python function and compile that")
    if isinstance(target, functools.partial):
        raise TypeError(f"{what}: compile the function it wraps ({caller}(p.func)), or a function that calls "
                        "the partial")
    if isinstance(target, (staticmethod, classmethod)):
        raise TypeError(f"{what}: compile the function it wraps ({caller}(m.__func__)) or get it from the class "
                        "first")
    if callable(target):
        raise TypeError(f"{what}: expected a Python function, method or nn.Module, got a callable "
                        f"{type(target).__name__} object; compile its __call__ method or a function that calls it")
    raise TypeError(f"{what}: expected a Python function, method or nn.Module to compile, got "
                    f"{type(target).__name__}")


def _short_repr(obj):
    try:
        text = repr(obj)
    except Exception:
        text = f"<{type(obj).__name__} object>"
    return text if len(text) <= 60 else text[:57] + "..."


def _compile_function(fn, backend_fn, fullgraph, config, observer, self_object=None, closure_arg=False,
                      varying_numbers=()):
    """The compiled wrapper of `fn`. With `self_object` (a compiled module's original), forward runs on
    that module and the entries are that module's own. With `closure_arg` (a resume function of a code
    with free variables), the wrapper takes the closure as its first argument (`__fj_cl`): one wrapper
    serves every function sharing the code, each call running with the caller's cells (convert/resume.py).
    `varying_numbers`: names of int arguments known to differ on every call (a resume function's
    `torch.seed()` number): dynamic from the first conversion, as a miss on them would make them."""
    code = fn.__code__
    # one state for every compiled module of a class: entries serve any instance whose guards pass
    state = cache.state_for(code, fn.__globals__, (backend_fn, fullgraph, config, observer))
    for name in varying_numbers:
        state.shape_memory.note_number(name)
    signature = inspect.signature(fn, follow_wrapped=False)   # the code that runs, not __wrapped__

    def wrap(resume_fn, closure_arg=False, varying_numbers=()):
        return _compile_function(resume_fn, backend_fn, fullgraph, config, observer, closure_arg=closure_arg,
                                 varying_numbers=varying_numbers)

    opts = Options(backend_fn, config, fullgraph, wrap, observer, shape_memory=state.shape_memory)
    local = cache.WrapperState(fn)       # per wrapper, not per code object (cache.WrapperState)

    if closure_arg:
        def on_miss(closure, args, kwargs):
            return _on_miss(with_closure(fn, closure), signature, state, local, opts, args, kwargs, closure)
    else:
        def on_miss(args, kwargs):
            return _on_miss(fn, signature, state, local, opts, args, kwargs)

    framejit_wrapper = build_dispatcher(fn, state.entries, on_miss, self_object=self_object, closure_arg=closure_arg)
    dispatchers = [framejit_wrapper]
    if self_object is not None and module_call_fits(code):   # the module's __call__ can dispatch too
        framejit_wrapper._framejit_module_call = build_dispatcher(fn, state.entries, on_miss, module_call=True,
                                                                  self_object=self_object)
        dispatchers.append(framejit_wrapper._framejit_module_call)
    for dispatcher in dispatchers:
        state.listeners.add(dispatcher)
        if state.entries:
            dispatcher._framejit_refresh()
    functools.update_wrapper(framejit_wrapper, fn)
    framejit_wrapper._framejit_fn = fn
    framejit_wrapper._framejit_state = state
    return framejit_wrapper


def with_closure(fn, closure):
    """`fn`'s code, globals, name and defaults over another closure of the same code."""
    if closure is fn.__closure__:
        return fn
    out = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    out.__kwdefaults__ = fn.__kwdefaults__
    return out


# Entries of all functions sharing one state (closures of one code object, each guarded on its own
# cells; one function called with many nn.Module instances) are kept to at most this many times the
# recompile limit: beyond it the oldest entry is forgotten, never the function sent to plain Python.
SHARED_CODE_LIMIT = 8


def _instances(args, kwargs):
    """The nn.Module instances a call passes: a forward's `self`, a module handed to a helper. Instances
    of a class share entries (translate/guards/instance_guards.py) unless they differ in what the graph
    depends on (each layer's own index, another eps): then each needs entries of its own, and the
    recompile limit counts conversions per such combination, so the twelfth layer still gets its graph."""
    return tuple(v for v in (*args, *kwargs.values()) if isinstance(v, torch.nn.Module))


def _call_entry(fn, entry, args, kwargs):
    if fn.__code__.co_freevars:
        return entry(fn.__closure__, *args, **kwargs)
    return entry(*args, **kwargs)


def _on_miss(fn, signature, state, local, opts, args, kwargs, closure=None):
    """`closure`: the caller's closure, for a wrapper shared by closures (a resume function); the
    recompile limit then counts per closure, as it does per compiled function."""
    if local.eager_reason is not None:       # settled: plain Python (or its routed copy), no lock needed
        return _eager(local, closure)(*args, **kwargs)
    instead = stances.on_miss(fn, state, local, opts, args, kwargs,     # torch.compiler.set_stance's answer
                              lambda f, backend_fn: _compile_function(f, backend_fn, opts.fullgraph, opts.config,
                                                                      opts.observer))
    if instead is not None:
        return instead()
    limit = opts.config.recompile_limit
    with cache.LOCK:
        for entry in state.entries:          # another thread may have converted meanwhile
            out = _call_entry(fn, entry, args, kwargs)
            if out is not MISS:
                return out
        modules = _instances(args, kwargs)
        key = tuple(map(id, modules)) + (tuple(map(id, closure)) if closure is not None else ())
        if local.eager_reason is not None:
            result = None
        elif local.conversions.get(key, 0) >= limit:
            _hit_limit(fn, state, opts, args, kwargs)
            local.eager_reason = state.eager_reason
            result = None
        else:
            if state.entries:
                reason = _recompile_reason(fn, state, signature, args, kwargs, opts.config.dynamic)
                state.recompile_reasons.append(reason)
                if "recompiles" in torch_logs() or "recompiles_verbose" in torch_logs():
                    _LOG.warning("%s", reason)          # TORCH_LOGS=recompiles, as torch.compile logs them
            while len(state.entries) >= max(SHARED_CODE_LIMIT * limit, 1):
                state.evict_oldest()
            # a frame's first miss: its stored conversion, if one fits this call (runtime/warm_start.py)
            result = warm_start.load(fn, opts, args, kwargs) if not state.entries and not state.conversions \
                and closure is None else None
            if result is not None:
                state.add(result)
            else:
                result = _convert(fn, signature, state, opts, args, kwargs)
            if result.kind == "entry":
                local.count(key, modules)
            elif result.kind == "eager":
                local.eager_reason = result.reason
                local.eager_fn = result.replacement or local.fn
    if result is not None and result.kind == "entry":
        out = _call_entry(fn, result.entry, args, kwargs)
        if out is not MISS:
            return out
    if local.eager_reason is not None:
        return _eager(local, closure)(*args, **kwargs)
    return fn(*args, **kwargs)


_LOG = logging.getLogger("framejit.recompiles")


def _eager(local, closure):
    return local.eager_fn if closure is None else with_closure(local.eager_fn, closure)


def _convert(fn, signature, state, opts, args, kwargs):
    from ..observe.conversion import observed_conversion
    from .failures import handle_internal_failure
    state.conversions += 1
    # metrics, phase times, records, global-state checks, logs; internal failures -> eager (runtime/failures.py).
    # Never while a compile behind the calls (backends/compile_behind.py) traces with fx: fx's Tracer replaces
    # torch.nn.Module.__call__ and __getattr__ and sets is_fx_tracing for the whole process while it traces,
    # which this conversion would read
    with TRACE_LOCK:
        result, elapsed = observed_conversion(fn, state, opts, args, kwargs,
                                              lambda observation: convert_frame(fn, signature, args, kwargs, opts,
                                                                                observation),
                                              handle_internal_failure, resume_origin(fn.__code__))
    if result.kind == "entry":
        state.add(result)
        if state.conversions == 1 and not state.recompile_reasons:
            warm_start.remember(fn, result, opts, args, kwargs)     # for a later process's first miss
    elif result.kind == "eager":
        state.eager_reason = result.reason
        state.results.append(result)
    if opts.observer is not None:
        opts.observer(fn, result, elapsed)
    return result


def _recompile_reason(fn, state, signature, args, kwargs, dynamic=False):
    """The failing guard in words; under dynamic=None a size or int that changed is remembered (automatic
    dynamic, framejit/shapes/memory.py), so the conversion this miss starts makes it symbolic."""
    try:
        binding = signature.bind(*args, **kwargs)
    except TypeError:
        return f"recompiled {fn.__qualname__}: the arguments changed"
    binding.apply_defaults()          # as the call binds them: defaults, and an empty *args / **kwargs
    bound = dict(binding.arguments)
    reasons, unexplained = [], []
    for result in state.results:
        if result.kind != "entry":
            continue
        # the shared entry's guards say what differs in another instance (its eps, not its identity)
        result = getattr(result, "companion", None) or result
        env = dict(result.ns.env)
        env.update(bound)
        if fn.__code__.co_freevars:
            env["__fj_cl"] = fn.__closure__
        failed = None
        for g in result.guards.guards:
            why = miss_reason(g, env, unexplained) if failed is None else None      # never raises
            if why is not None:
                failed = why
                if dynamic is not False and learn_dynamic(state.shape_memory, g, env):
                    failed += ": now dynamic"
                if dynamic is False:
                    break
            elif failed is not None:
                # every other size or number that changed too, as torch.compile's automatic dynamic
                # does: a KV cache's layers all grow at once, and each should not cost a recompile
                learn_dynamic(state.shape_memory, g, env)
        if failed is not None:
            reasons.append(failed)
    detail = reasons[-1] if reasons else unexplained_miss(unexplained)
    return f"recompiled {fn.__qualname__}: {detail}"


def _hit_limit(fn, state, opts, args, kwargs):
    last = state.recompile_reasons[-1] if state.recompile_reasons else "guards kept failing"
    state.eager_reason = (f"recompile limit ({opts.config.recompile_limit}) reached; the last guard that "
                          f"failed: {last}")
    if not state.warned_limit:
        state.warned_limit = True
        warnings.warn(f"framejit: {fn.__qualname__} hit the recompile limit of {opts.config.recompile_limit} "
                      f"and now runs eagerly. Last recompile: {last}", RuntimeWarning, stacklevel=4)


# ---- replaying a record --------------------------------------------------------------------------

# Config fields that say where and whether to write files, not how to convert: a replay keeps its own.
_REPLAY_KEEPS = frozenset({"debug_dir", "report_path", "record_all", "record_on_failure", "debug",
                           "profile_conversion", "metrics_size"})


class _ReplayObservation(Unobserved):
    """A replayed conversion is not observed, but calls that change global torch state break as they did."""
    watch_state = staticmethod(watch_state)


def replay_conversion(fn, args, kwargs, backend="eager", fullgraph=False, config=None, resume_of=None):
    """Convert fn's frame for (args, kwargs) as a cache miss would, except that internal failures raise
    instead of falling back (framejit.replay compares them with the recorded failure). `config`: the
    recorded Config fields (those about conversion are used); `resume_of`: for a recorded resume
    function, (the code it continues, its prologue length), so its instructions map back to that code
    as they did when recorded. Returns a callable running the converted code (plain fn when the frame
    would run as plain Python)."""
    if resume_of is not None:
        note_resume_origin(fn.__code__, *resume_of)
    backend_fn = lookup_backend(backend)
    known = {f.name for f in dataclasses.fields(Config)}
    overrides = {k: v for k, v in (config or {}).items() if k in known and k not in _REPLAY_KEEPS}
    config = Config.from_env(**overrides, record_all=False, record_on_failure=False)

    def wrap(resume_fn, closure_arg=False, varying_numbers=()):
        return _compile_function(resume_fn, backend_fn, fullgraph, config, None, closure_arg=closure_arg,
                                 varying_numbers=varying_numbers)

    opts = Options(backend_fn, config, fullgraph, wrap)
    result = convert_frame(fn, inspect.signature(fn, follow_wrapped=False), args, kwargs, opts, _ReplayObservation())
    if result.kind != "entry":
        return fn

    signature = inspect.signature(fn)

    def converted(*a, **k):
        bound = signature.bind(*a, **k)          # entries take every argument (codegen.build_entry)
        bound.apply_defaults()
        out = _call_entry(fn, result.entry, bound.args, bound.kwargs)
        return fn(*a, **k) if out is MISS else out
    return converted


# ---- modules ------------------------------------------------------------------------------------

def _compile_module(mod, backend_fn, fullgraph, config, observer):
    cls = type(mod)
    if getattr(cls, "_framejit_compiled", False):
        mod = cls._framejit_original
        cls = type(mod)
    if "forward" in mod.__dict__:
        if getattr(mod.__dict__["forward"], "_framejit_inplace", False):
            raise TypeError("framejit.compile: this module was compiled in place (framejit.compile(m, inplace=True)); "
                            "call it directly, or `del m.forward` first to compile it anew")
        raise TypeError("framejit.compile: modules with an instance-level `forward` attribute are not supported")
    compiled_forward = _compiled_forward(mod, cls, backend_fn, fullgraph, config, observer)
    members = {}
    if cls.__call__ is _MODULE_CALL:
        members["__call__"] = getattr(compiled_forward, "_framejit_module_call", None) or \
            build_module_call(compiled_forward, mod)
    sub = type(cls.__name__, (cls,), {
        **members,
        "forward": compiled_forward, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
        "_framejit_compiled": True, "_framejit_original": mod, "__doc__": cls.__doc__,
        "__reduce_ex__": _reduce_as_original, "__eq__": _equals_original, "__hash__": _hash_of_original,
        "__getattr__": _getattr_of_original, "__delattr__": _delattr_unless_parametrizing,
    })
    new = object.__new__(sub)
    object.__setattr__(new, "__dict__", mod.__dict__)
    release = weakref.finalize(new, _release_compiled_class, sub, tuple(members) + ("forward", "_framejit_original"))
    release.atexit = False               # only when it dies: a program's exit handlers may still call it
    return new


def _compiled_forward(mod, cls, backend_fn, fullgraph, config, observer):
    forward = cls.forward
    if getattr(forward, "_framejit_fn", None) is not None or not isinstance(forward, types.FunctionType) or \
            forward in _DISABLED:
        return _compile(forward, backend_fn, fullgraph, config, observer)
    # forward runs on `mod` itself (build_dispatcher's self_object)
    return _compile_function(forward, backend_fn, fullgraph, config, observer, self_object=mod)


def compile_module_inplace(mod, backend_fn, fullgraph, config, observer):
    """`framejit.compile(mod, inplace=True)`: `mod` stays the same object (its class, identity, hooks and
    everything keyed by it: FSDP's state, optimizers, DDP's reducer), and its forward becomes the compiled
    forward as an instance attribute, the one nn.Module.__call__ calls after the module's hooks. So hooks
    run as plain Python, exactly as eagerly (FSDP's all-gathers, DDP's bookkeeping), around the compiled
    forward. Compiling again in place replaces it; `del mod.forward` undoes it."""
    if getattr(type(mod), "_framejit_compiled", False):
        raise TypeError("framejit.compile(m, inplace=True): m is already a compiled copy (framejit.compile(m) "
                        "returned it); compile the original module in place instead")
    current = mod.__dict__.get("forward")
    if current is not None and not getattr(current, "_framejit_inplace", False):
        raise TypeError("framejit.compile(m, inplace=True): m has an instance-level `forward` attribute; "
                        "compile that function instead")
    if current is not None:
        del mod.forward
    compiled_forward = _compiled_forward(mod, type(mod), backend_fn, fullgraph, config, observer)
    if getattr(compiled_forward, "_framejit_state", None) is not None:
        compiled_forward._framejit_inplace = True    # tells it from a user's instance forward
    mod.forward = types.MethodType(compiled_forward, mod)
    return mod


def _release_compiled_class(sub, names):
    """The compiled module died: its class (a class is always in a reference cycle, freed only by the
    cyclic GC) lets go of the dispatchers, the entries and the original module now, so the module, its
    parameters and its graphs are freed at once, as the module alone would be."""
    for name in names:
        try:
            delattr(sub, name)
        except AttributeError:
            pass


_MODULE_CALL = torch.nn.Module.__call__


def _original_of(module):
    cls = type(module)
    return cls._framejit_original if getattr(cls, "_framejit_compiled", False) else module


def _equals_original(self, other):
    """A compiled module is its original wherever module objects are keys: FSDP's state mapping (a
    WeakKeyDictionary), `m in modules`, dicts keyed by module. Found there as the original, whatever
    the compiled copy replaced in its parent (`blocks[i] = framejit.compile(blocks[i])`)."""
    original = type(self)._framejit_original
    other = _original_of(other)
    return original is other or original.__eq__(other) is True


def _hash_of_original(self):
    return hash(type(self)._framejit_original)


def _getattr_of_original(self, name):
    """What normal lookup did not find (the copy's class is a subclass of the original's class at compile
    time) is the original's: a property a later class change gave the original (a parametrization or
    weight_norm registered on it after compiling, fully_shard's methods) reads through the copy too,
    as torch.compile's wrapper forwards every attribute to its `_orig_mod`."""
    return getattr(type(self)._framejit_original, name)


def _delattr_unless_parametrizing(self, name):
    """Deleting an attribute deletes it from the original (they share __dict__), except when
    torch.nn.utils.parametrize is about to parametrize the copy: it deletes the tensor, then swaps the
    copy's class, which the original (running the compiled forward) would never see. Refused before
    anything changed, as torch.compile's wrapper refuses it; parametrizing the original works."""
    if _PARAMETRIZE_CODE is not None and sys._getframe(1).f_code is _PARAMETRIZE_CODE:
        raise ValueError(f"framejit.compile(module) returned a compiled view of a {type(self).__name__}: "
                         f"register the parametrization of {name!r} on the original module (before or after "
                         "compiling; the compiled one follows it), or compile with inplace=True")
    for klass in type(self).__mro__:        # then the user's class's own __delattr__ (nn.Module's unless it has one)
        if "_framejit_original" in klass.__dict__:
            return super(klass, self).__delattr__(name)
    return torch.nn.Module.__delattr__(self, name)


def _parametrize_code():
    try:
        from torch.nn.utils import parametrize
        return parametrize.register_parametrization.__code__
    except (ImportError, AttributeError):
        return None


_PARAMETRIZE_CODE = _parametrize_code()


def _reduce_as_original(self, protocol):
    """Pickling or copying a compiled module gives the module it was made from (its class is
    importable; the generated subclass is not): `torch.save(compiled)` saves the model, and loading it
    needs neither framejit nor a recompile first. copyreg's reconstructor, not __newobj__, since pickle
    checks that __newobj__'s class is the pickled object's own."""
    original = self._framejit_original
    return copyreg._reconstructor, (type(original), object, None), original.__getstate__()

