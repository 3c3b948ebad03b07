"""Calls that change global torch state: graph breaks, so the program sets the state itself, in order.

Why this exists: `torch.set_default_dtype(torch.float64)`, `torch.manual_seed(0)`,
`torch.use_deterministic_algorithms(True)`, `torch.backends.cudnn.deterministic = True` are part of
the program: the ops after them must see the new state, and the state must stay set after the call,
as eagerly. A graph cannot carry them for every backend: a backend that retraces the graph (aot_eager,
inductor) runs a setter node once, at trace time, and bakes its effect into the ops (or loses it:
the seed, the number of threads, deterministic kernels are run-time state). So the call is a graph
break: the break function makes it for real, in program order, and the code after it is translated
(and guarded) under the state it set, in a resume function. Translation itself never leaves the
program's state changed, so whatever observe/conversion.py finds changed after a conversion is framejit's.

(Reseeding the global generator is not a break when its result is unused: random_seeding.py makes it a
graph node.)

Three doors lead to a setter:
* a known setter (`STATE_SETTERS`, by identity): a break at the call, named in the reason;
* any other torch callable folded to a constant at translation (`call_watching_state`): it runs under a
  global-state snapshot (the conversion's observation watches it: observe/global_state.py); if it changed anything, the state is put back and the call
  is a break (torch._C._set_cudnn_enabled, torch.backends' flag helpers, ...);
* a store to an attribute of a module whose class runs code on stores (`store_runs_code`): the
  torch.backends flags are properties of module subclasses.
"""
import types

import torch

from ...errors import GraphBreak


def _named(owner, *names):
    return {getattr(owner, n) for n in names if hasattr(owner, n)}


STATE_SETTERS = (
    _named(torch, "set_default_dtype", "set_default_tensor_type", "set_default_device",
           "use_deterministic_algorithms", "set_deterministic_debug_mode", "set_float32_matmul_precision",
           "set_num_threads", "set_num_interop_threads", "manual_seed", "seed", "set_rng_state",
           "set_printoptions", "set_warn_always", "set_flush_denormal", "set_anomaly_enabled",
           "set_autocast_enabled", "set_autocast_dtype", "set_autocast_cache_enabled",
           "set_autocast_cpu_enabled", "set_autocast_cpu_dtype", "set_autocast_gpu_dtype")
    | _named(torch.random, "manual_seed", "seed", "set_rng_state")
    | _named(torch.cuda, "manual_seed", "manual_seed_all", "seed", "seed_all", "set_rng_state",
             "set_rng_state_all")
)


def is_state_setter(fn):
    """Is `fn` one of STATE_SETTERS, or a functools.wraps wrapper of one (once torch's own compiler
    frontend is imported, torch.manual_seed & co. are rebound to such wrappers)?"""
    for _ in range(3):
        if fn in STATE_SETTERS:
            return True
        fn = getattr(fn, "__wrapped__", None)
        if fn is None:
            return False
    return False


def setter_break(fn):
    """The GraphBreak for a call of global-state setter `fn`."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    module = getattr(fn, "__module__", None) or "torch"
    if module.startswith("torch"):
        module = "torch"
    return GraphBreak("global state", f"{module}.{name}() changes global state: it runs as plain Python and "
                      "the code after it is compiled under the state it sets")


def call_watching_state(tx, fn, call):
    """`call()` (a torch callable folded to a constant at translation), unless it changed global state:
    then the state is put back and the call is a graph break. The conversion's observation watches the
    state (tx.ctx.watch_state: observe/conversion.py's Observation.watch_state)."""
    out, changes = tx.ctx.watch_state(call)
    if changes:
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
        raise GraphBreak("global state", f"{name}() changes global state ({'; '.join(changes)}): it runs as "
                         "plain Python and the code after it is compiled under the state it sets")
    return out


def store_runs_code(obj, name):
    """Does `obj.name = value` on module `obj` run code (a property of a module subclass such as
    torch.backends.cudnn, or a __setattr__ override), instead of writing the module's dict?"""
    cls = type(obj)
    if not isinstance(obj, types.ModuleType) or cls is types.ModuleType:
        return False
    if cls.__setattr__ is not types.ModuleType.__setattr__:
        return True
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return hasattr(type(klass.__dict__[name]), "__set__")
    return False


def store_break(obj, name):
    return GraphBreak("global state", f"setting {getattr(obj, '__name__', type(obj).__name__)}.{name} runs a "
                      "setter of global state: it runs as plain Python and the code after it is compiled "
                      "under the state it sets")
