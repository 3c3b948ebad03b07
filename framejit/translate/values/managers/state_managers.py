"""Context managers inside the translated region: with-blocks whose enter and exit are performed symbolically.

Why this exists: `with torch.no_grad():`, `torch.autocast(...)` and friends are everywhere in model
code, and a graph break at every with-block would split most forward passes. Managers of torch's
thread-local state become pairs of graph nodes (enter, exit) so the compiled graph switches the state
exactly where the eager code does. While the translator walks the block it also switches the real
state, so fake-tensor propagation sees the same grad mode / autocast as the eager run (requires_grad
and dtypes of the fake outputs come out right). Every state change made during translation is listed
on the root translator (`active_managers`) and undone by `unwind` when translation ends, also when
it ends with a GraphBreak in the middle of a block.

Managers written in Python (a class with __enter__/__exit__, or a @contextlib.contextmanager generator)
are inlined like any other Python code; the exception path of a with-block is never translated: an
exception inside the block is always a graph break, and a break inside a with-block makes the
converter run the whole frame as plain Python.
"""
import contextlib
import types

import torch

from ....errors import GraphBreak
from ..base import Const, ObjectValue, Value
from .raise_unwinding import HANDLE_EXITS, mark_unwind, restore_state_on_error

_set_grad_enabled = torch._C._set_grad_enabled
_enter_inference_mode = torch.autograd.grad_mode._enter_inference_mode
_exit_inference_mode = torch.autograd.grad_mode._exit_inference_mode
_enter_autocast = torch.amp.autocast_mode._enter_autocast
_exit_autocast = torch.amp.autocast_mode._exit_autocast
# autocast's nesting count: its cast cache (the low-precision copies of leaf tensors) is cleared when an
# exit brings the count to 0; a graph closing a block at a break holds one count so the cache lives on
_hold_autocast_cache = torch.autocast_increment_nesting
STATE_NODE_TARGETS = set({  # (lookasides/backend_flags.py adds its block nodes)
    _set_grad_enabled, _enter_inference_mode, _exit_inference_mode, _enter_autocast,
    _exit_autocast, _hold_autocast_cache})


@contextlib.contextmanager
def _sample_contextmanager():
    yield


# contextlib.contextmanager(f) returns a `helper` closure; all of them share this code object.
CONTEXTMANAGER_HELPER_CODE = _sample_contextmanager.__code__


def _sample_decorated():
    pass


# @torch.no_grad() / @torch.enable_grad() / @torch.inference_mode() wrap functions in a closure
# `decorate_context(*args, **kwargs)` (torch.utils._contextlib) that shares this code object.
TORCH_DECORATOR_CODE = torch.no_grad()(_sample_decorated).__code__


def _state_node(tx, target, args, opening=None):
    """An fx node changing torch global state (no fake propagation: the caller changes the real state).
    `opening`: the block this node enters (raise_unwinding.py: what a raise after it leaves)."""
    builder = tx.ctx.graph
    node = builder.graph.create_node("call_function", target, args, {})
    builder.created.append(node)
    mark_unwind(node, tx.active_managers, opening)
    restore_state_on_error(builder.graph)
    return node


_HANDLE_EXITS = HANDLE_EXITS          # (lookasides/backend_flags.py adds its block's closer)


class ManagerValue(Value):
    """A context manager the translator enters and exits itself."""
    __slots__ = ("entered",)

    def __init__(self):
        super().__init__(None)
        self.entered = False

    def enter(self, tx):
        """Perform __enter__; return the Value bound by `as`."""
        raise NotImplementedError

    def exit(self, tx, exc_type=None):
        """Perform __exit__ (exc_type: the class of the exception leaving the block, or None); return
        its result (truthy: the exception is suppressed)."""
        raise NotImplementedError

    def _check_fresh(self):
        if self.entered:
            raise GraphBreak("with", "a context manager object entered twice")
        self.entered = True


class GlobalStateManager(ManagerValue):
    """A manager of torch thread-local state: graph nodes plus the same change to the real state."""
    __slots__ = ()
    grad_before_block = None    # the grad mode its exit restores, for a block that switches it (raise_unwinding.py)

    def enter(self, tx):
        self._check_fresh()
        self.apply_enter(tx)
        tx.active_managers.append(self)
        return self.enter_result()

    def exit(self, tx, exc_type=None):
        if not tx.active_managers or tx.active_managers[-1] is not self:
            raise GraphBreak("with", "context managers exited out of order")
        tx.active_managers.pop()
        self.apply_exit(tx)
        return Const(None)

    def enter_result(self):
        return Const(None)

    def apply_enter(self, tx):
        raise NotImplementedError

    def apply_exit(self, tx):
        raise NotImplementedError

    def undo(self):
        """Restore the real state without emitting nodes (translation ended inside the block)."""
        raise NotImplementedError


class GradModeManager(GlobalStateManager):
    """torch.no_grad() / torch.enable_grad() / torch.set_grad_enabled(mode): one grad mode inside the block.

    Nodes are emitted only when the mode actually changes: the grad mode at frame entry is guarded
    (GRAD_MODE), so the mode at every point of the translation is known.
    """
    __slots__ = ("mode", "prev", "factory", "given")

    def __init__(self, mode, factory):
        super().__init__()
        self.mode = bool(mode)
        self.prev = None
        self.factory = factory            # the torch class, for rebuilding an un-entered manager
        self.given = False                # entered before the frame (resumed_grad_block): not the graph's

    @property
    def grad_before_block(self):
        return None if self.given else self.prev

    def python_type(self):
        return self.factory

    def apply_enter(self, tx):
        tx.ctx.guard_state(torch.is_grad_enabled)     # which nodes are emitted depends on the entry mode
        self.prev = torch.is_grad_enabled()
        _switch_grad(tx, self.mode, opening=self)

    def apply_exit(self, tx):
        _switch_grad(tx, self.prev)

    def undo(self):
        _set_grad_enabled(self.prev)

    def call(self, tx, args, kwargs):
        """torch.no_grad()(fn): the manager used as a decorator (manager_decorators.py)."""
        from .decorated_managers import decorate
        return decorate(tx, self, args, kwargs)

    def fresh(self):
        return GradModeManager(self.mode, self.factory)

    def rebuild(self, rb):
        if self.entered or self.factory is torch.set_grad_enabled:
            raise GraphBreak("reconstruct", "an entered context manager cannot be rebuilt")
        return f"{rb.ns.bind(self.factory)}()"

    def rebuild_parts(self):
        return []

    def __repr__(self):
        return f"GradModeManager({self.factory.__name__}, mode={self.mode})"


def _switch_grad(tx, mode, opening=None):
    if torch.is_grad_enabled() != mode:
        _state_node(tx, _set_grad_enabled, (mode,), opening)
        _set_grad_enabled(mode)


class InferenceModeManager(GlobalStateManager):
    """torch.inference_mode(mode): an enter node returning a handle, and an exit node taking it."""
    __slots__ = ("mode", "handle", "node", "grad_before_block")

    def __init__(self, mode):
        super().__init__()
        self.mode = bool(mode)
        self.handle = None
        self.node = None
        self.grad_before_block = None     # its exit restores grad mode too

    def python_type(self):
        return torch.inference_mode

    def apply_enter(self, tx):
        self.grad_before_block = torch.is_grad_enabled()
        self.node = _state_node(tx, _enter_inference_mode, (self.mode,), opening=self)
        self.handle = _enter_inference_mode(self.mode)

    def apply_exit(self, tx):
        _state_node(tx, _exit_inference_mode, (self.node,))
        self.undo()

    def undo(self):
        _exit_inference_mode(self.handle)

    def call(self, tx, args, kwargs):
        """torch.inference_mode(mode)(fn): the manager used as a decorator (decorated_managers.py)."""
        from .decorated_managers import decorate
        return decorate(tx, self, args, kwargs)

    def fresh(self):
        return InferenceModeManager(self.mode)

    def rebuild(self, rb):
        if self.entered:
            raise GraphBreak("reconstruct", "an entered context manager cannot be rebuilt")
        return f"{rb.ns.bind(torch.inference_mode)}({self.mode!r})"

    def rebuild_parts(self):
        return []


class AutocastManager(GlobalStateManager):
    """torch.autocast(...): torch.amp's own _enter_autocast/_exit_autocast pair as graph nodes."""
    __slots__ = ("args", "handle", "node")

    def __init__(self, args):
        super().__init__()
        self.args = args                  # (device_type, fast_dtype, enabled, cache_enabled), constants
        self.handle = None
        self.node = None

    def python_type(self):
        return torch.autocast

    def enter_result(self):
        return self

    def apply_enter(self, tx):
        self.node = _state_node(tx, _enter_autocast, self.args)
        self.handle = _enter_autocast(*self.args)

    def apply_exit(self, tx):
        _state_node(tx, _exit_autocast, (self.node,))
        self.undo()

    def undo(self):
        _exit_autocast(self.handle)

    def call(self, tx, args, kwargs):
        """torch.autocast(...)(fn): the manager used as a decorator (decorated_managers.py)."""
        from .decorated_managers import decorate
        return decorate(tx, self, args, kwargs)

    def fresh(self):
        return AutocastManager(self.args)

    def rebuild(self, rb):
        if self.entered:
            raise GraphBreak("reconstruct", "an entered context manager cannot be rebuilt")
        device, dtype, enabled, cache = self.args
        return (f"{rb.ns.bind(torch.autocast)}({device!r}, dtype={rb.ns.bind(dtype)}, enabled={enabled!r}, "
                f"cache_enabled={cache!r})")

    def rebuild_parts(self):
        return []


class NullManager(ManagerValue):
    """contextlib.nullcontext(x) and contextlib.suppress(...): nothing happens on the normal path.

    (suppress only acts when the block raises, and a raise inside the block is a graph break that
    makes the whole frame run as plain Python.)"""
    __slots__ = ("result", "kind", "suppressed")

    def __init__(self, result, kind, suppressed=()):
        super().__init__()
        self.result = result
        self.kind = kind
        self.suppressed = suppressed      # exception classes contextlib.suppress swallows

    def python_type(self):
        return self.kind

    def enter(self, tx):
        self._check_fresh()
        return self.result

    def exit(self, tx, exc_type=None):
        if self.kind is contextlib.nullcontext:
            return Const(None)
        return Const(exc_type is not None and issubclass(exc_type, self.suppressed))


class GeneratorManager(ManagerValue):
    """A @contextlib.contextmanager call: its generator runs to the yield on enter, to the end on exit."""
    __slots__ = ("gen",)

    def __init__(self, gen):
        super().__init__()
        self.gen = gen
        gen.owned = True                  # always resumed to its end, so a yield inside try is fine

    def python_type(self):
        return contextlib._GeneratorContextManager

    def enter(self, tx):
        self._check_fresh()
        value = self.gen.next_value(tx)
        if value is None:
            raise GraphBreak("raise", "RuntimeError: generator didn't yield (in a @contextmanager)")
        return value

    def exit(self, tx, exc_type=None):
        if exc_type is not None:
            raise GraphBreak("with", "an exception leaving a @contextmanager block (thrown into its generator)")
        if self.gen.next_value(tx) is not None:
            raise GraphBreak("raise", "RuntimeError: generator didn't stop (in a @contextmanager)")
        return Const(False)


class ExitValue(Value):
    """The bound __exit__ BEFORE_WITH leaves on the stack; the with-block's normal end calls it."""
    __slots__ = ("manager",)

    def __init__(self, manager, source=None):
        super().__init__(source)
        self.manager = manager

    def _reentry(self):
        """How a break function gets this block's __exit__: "given" (a block a resume function started
        inside: the __exit__ it was given), "autocast", "grad" (entered for real again), or None."""
        m = self.manager
        if isinstance(m, ResumedAutocast):
            return "given" if self.source is not None else None
        if isinstance(m, AutocastManager):
            return "autocast" if m.entered and m.node is not None else None
        if isinstance(m, GradModeManager):
            return "grad" if m.entered and m.prev is not None else None
        return None

    def splittable(self):
        """Can a graph break happen with this __exit__ on the stack (a grad-mode block always can: one
        not entered yet rebuilds as its manager)?"""
        return isinstance(self.manager, GradModeManager) or self._reentry() is not None

    def rebuild(self, rb):
        """At a graph break inside a grad-mode or autocast block: enter the block for real (the graph
        part ran it symbolically; an autocast graph closes its own block at its end, see
        close_open_autocast) and hand the break function an __exit__ that leaves it as the manager's own
        would. A block a resume function started inside is the __exit__ it was given."""
        how, m = self._reentry(), self.manager
        if how == "given":
            return rb.reload(self.source)
        if how == "autocast":
            return f"{rb.ns.bind(reenter_autocast)}({rb.ns.bind(tuple(m.args))})"
        if how == "grad":
            return f"{rb.ns.bind(reenter_grad_mode)}({m.mode}, {m.prev})"
        raise GraphBreak("reconstruct", f"the __exit__ of {m!r} cannot be rebuilt")

    def rebuild_parts(self):
        return []

    def python_type(self):
        return types.MethodType

    def call(self, tx, args, kwargs):
        if kwargs or len(args) != 3:
            raise GraphBreak("bad call", f"TypeError: __exit__ takes 3 arguments ({len(args)} given)")
        if isinstance(self.manager, ResumedAutocast):
            raise GraphBreak("with", "the end of an autocast block entered before this graph: its __exit__ runs "
                             "as Python between two graphs")
        exc_type = args[0]
        if isinstance(exc_type, Const) and exc_type.value is None:
            return self.manager.exit(tx)
        if isinstance(exc_type, ObjectValue) and isinstance(exc_type.obj, type):
            return self.manager.exit(tx, exc_type.obj)
        raise GraphBreak("with", f"__exit__ called with {exc_type!r}")

    def __repr__(self):
        return f"ExitValue({self.manager!r})"


def unwind(active_managers, grad_mode_at_entry):
    """Undo real state changes of blocks still open when translation ended (innermost first), and put
    the grad mode back as it was at frame entry."""
    while active_managers:
        active_managers.pop().undo()
    _set_grad_enabled(grad_mode_at_entry)


# ---- constructing managers --------------------------------------------------------------------------

def _const_args(name, args, kwargs):
    if not all(isinstance(a, Const) for a in list(args) + list(kwargs.values())):
        raise GraphBreak("with", f"{name}() with arguments that are not constants")
    return [a.value for a in args], {k: v.value for k, v in kwargs.items()}


def _no_grad(tx, args, kwargs):
    _const_args("torch.no_grad", args, kwargs)
    if args or kwargs:
        raise GraphBreak("with", "torch.no_grad(fn) used as a decorator inside the frame")
    return GradModeManager(False, torch.no_grad)


def _enable_grad(tx, args, kwargs):
    _const_args("torch.enable_grad", args, kwargs)
    if args or kwargs:
        raise GraphBreak("with", "torch.enable_grad(fn) used as a decorator inside the frame")
    return GradModeManager(True, torch.enable_grad)


def _set_grad_enabled_ctor(tx, args, kwargs):
    (mode,), _ = _const_args("torch.set_grad_enabled", args, kwargs) if len(args) == 1 and not kwargs \
        else _raise(GraphBreak("with", "torch.set_grad_enabled() with unusual arguments"))
    if type(mode) is not bool:
        raise GraphBreak("with", "torch.set_grad_enabled() of a non-bool")
    # Constructing it already switches grad mode for the caller. Entered by a with-statement right away
    # (BEFORE_WITH follows), the block restores the mode at its end; called as a function, the mode
    # stays switched for the rest of the program: a state node in the graph (values/grad_setter.py).
    if next_opname(tx) != "BEFORE_WITH":
        return set_grad_mode_for_good(tx, mode, torch.set_grad_enabled)
    return GradModeManager(mode, torch.set_grad_enabled)


def _inference_mode(tx, args, kwargs):
    pos, kw = _const_args("torch.inference_mode", args, kwargs)
    mode = pos[0] if pos else kw.get("mode", True)
    if type(mode) is not bool or len(pos) + len(kw) > 1:
        raise GraphBreak("with", "torch.inference_mode(fn) used as a decorator inside the frame")
    return InferenceModeManager(mode)


def _autocast(tx, args, kwargs):
    pos, kw = _const_args("torch.autocast", args, kwargs)
    try:
        real = torch.autocast(*pos, **kw)
    except Exception as e:
        raise GraphBreak("constant call raised", f"torch.autocast(...) raised {type(e).__name__}: {e}")
    return AutocastManager((real.device, real.fast_dtype, real._enabled, real._cache_enabled))


def _grad_mode_setter(tx, args, kwargs):
    (mode,), _ = _const_args("torch._C._set_grad_enabled", args, kwargs) if len(args) == 1 and not kwargs \
        else _raise(GraphBreak("grad mode", "torch._C._set_grad_enabled() with unusual arguments"))
    if type(mode) is not bool:
        raise GraphBreak("grad mode", "torch._C._set_grad_enabled() of a non-bool")
    set_grad_mode_for_good(tx, mode, None)
    return Const(None)


class GradModeSet(Value):
    """What `torch.set_grad_enabled(mode)` called as a function returned: the mode is already switched;
    the object itself (entered later, or escaping) is not modelled."""
    __slots__ = ()

    def python_type(self):
        return torch.set_grad_enabled

    def __repr__(self):
        return "GradModeSet"


def set_grad_mode_for_good(tx, mode, factory):
    """Grad mode switched outside a with-statement: a state node in the graph switches it for real at
    run time (and it stays switched after the call, as eagerly); the rest is translated under it."""
    tx.ctx.guard_state(torch.is_grad_enabled)
    _switch_grad(tx, mode)
    return GradModeSet(None) if factory is not None else Const(None)


def _nullcontext(tx, args, kwargs):
    if kwargs and set(kwargs) != {"enter_result"} or len(args) + len(kwargs) > 1:
        raise GraphBreak("bad call", "TypeError: nullcontext() takes at most one argument")
    result = args[0] if args else kwargs.get("enter_result", Const(None))
    return NullManager(result, contextlib.nullcontext)


def _suppress(tx, args, kwargs):
    classes = []
    for a in args:
        cls = a.obj if isinstance(a, ObjectValue) else None
        if kwargs or not (isinstance(cls, type) and issubclass(cls, BaseException)):
            raise GraphBreak("with", "contextlib.suppress() of something other than exception classes")
        classes.append(cls)
    return NullManager(Const(None), contextlib.suppress, tuple(classes))


MANAGER_FACTORIES = {
    torch.no_grad: _no_grad,
    torch.enable_grad: _enable_grad,
    torch.set_grad_enabled: _set_grad_enabled_ctor,
    torch.inference_mode: _inference_mode,
    torch.autocast: _autocast,
    _set_grad_enabled: _grad_mode_setter,
    contextlib.nullcontext: _nullcontext,
    contextlib.suppress: _suppress,
}


def next_opname(tx):
    """The name of the instruction after the one `tx` is running (None at the end)."""
    i = tx.index.get(tx.inst)
    if i is None or i + 1 >= len(tx.instructions):
        return None
    return tx.instructions[i + 1].opname


def _raise(e):
    raise e


def manager_for_object(tx, value):
    """A ManagerValue for a real torch manager object reached from a Source (e.g. a global no_grad()),
    None for other objects (Python managers are inlined), GraphBreak for torch managers we do not model."""
    obj = value.obj
    t = type(obj)
    if t is torch.no_grad:
        return GradModeManager(False, t)
    if t is torch.enable_grad:
        return GradModeManager(True, t)
    if t is torch.autocast:               # e.g. the one @torch.autocast(...) keeps in its wrapper's closure
        fields = [_guarded_field(tx, value, name) for name in ("device", "fast_dtype", "_enabled", "_cache_enabled")]
        return AutocastManager(tuple(fields))
    if t is torch.inference_mode:
        return InferenceModeManager(_guarded_field(tx, value, "mode"))
    module = getattr(t, "__module__", "") or ""
    if module == "torch" or module.startswith("torch."):
        raise GraphBreak("with", f"with-block over a {t.__qualname__} object is not supported")
    return None


def _guarded_field(tx, value, name):
    """An attribute of a real manager object, guarded when the object has a source (the state it enters
    depends on it)."""
    field = getattr(value.obj, name)
    if value.source is not None:
        from ...source import AttrSource
        tx.ctx.wrap(field, AttrSource(value.source, name))
    if type(field) not in (bool, str, torch.dtype) and field is not None:
        raise GraphBreak("with", f"a {type(value.obj).__qualname__} object whose {name} is a {type(field).__name__}")
    return field


# ---- a grad-mode block that a graph break splits -------------------------------------------------

class GradModeExit:
    """The __exit__ on the stack of a break or resume function that starts inside a `with
    torch.no_grad()` (enable_grad, set_grad_enabled) block: restores the grad mode from before the
    block, as the torch manager's own __exit__ would, and lets exceptions through."""
    __slots__ = ("prev",)

    def __init__(self, prev):
        self.prev = prev

    def __call__(self, exc_type, exc, tb):
        _set_grad_enabled(self.prev)
        return None


def reenter_grad_mode(mode, prev):
    _set_grad_enabled(mode)
    return GradModeExit(prev)


def resumed_grad_block(ctx, obj, source):
    """Wrap a GradModeExit argument: guard its type and the mode it restores, and enter its block (its
    exit moves the real grad mode away from the frame's entry mode: the translator restores that)."""
    from ...source import AttrSource
    ctx.guards.add("TYPE_MATCH", source, GradModeExit)
    ctx.guards.add("CONST_MATCH", AttrSource(source, "prev"), obj.prev)
    ctx.guard_state(torch.is_grad_enabled)
    manager = GradModeManager(torch.is_grad_enabled(), torch.set_grad_enabled)
    manager.entered = True
    manager.prev = obj.prev
    manager.given = True
    ctx.active_managers.append(manager)
    return ExitValue(manager, source)


# ---- an autocast block that a graph break splits -----------------------------------------------

class AutocastExit:
    """The __exit__ on the stack of a break or resume function that starts inside a `with
    torch.autocast(...)` block: the real autocast object entered for it (torch.amp's own
    _enter_autocast), left through torch.amp's _exit_autocast; exceptions go through. `args` are the
    block's constant arguments, which a resume function guards.

    The graph that closed the block at the break held one count of autocast's nesting first
    (close_open_autocast), so the cast cache eager keeps for the whole block survived the close: the
    weight cast before the break is the same cached copy after it, as eagerly. This exit lets that count
    go after leaving the block, and clears the cache when nothing is nested any more, as the eager
    block's own exit does."""
    __slots__ = ("args", "mode")

    def __init__(self, args, mode):
        self.args = args
        self.mode = mode

    def __call__(self, exc_type, exc, tb):
        _exit_autocast(self.mode)
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
        return None


def reenter_autocast(args):
    return AutocastExit(args, _enter_autocast(*args))


class ResumedAutocast(ManagerValue):
    """An autocast block a resume function starts inside: entered for real before its graph, so its
    ops are traced and run under it; its end is a graph break (the AutocastExit runs as Python)."""
    __slots__ = ()

    def python_type(self):
        return torch.autocast


def resumed_autocast_block(ctx, obj, source):
    """Wrap an AutocastExit argument: guard its type and the block's arguments."""
    from ...source import AttrSource
    ctx.guards.add("TYPE_MATCH", source, AutocastExit)
    ctx.guards.add("CONST_MATCH", AttrSource(source, "args"), obj.args)
    manager = ResumedAutocast()
    manager.entered = True
    return ExitValue(manager, source)


def close_open_autocast(tx, stack):
    """At a graph break inside autocast blocks the frame entered (their ExitValues are on `stack`):
    close each in the graph, innermost first, so the graph leaves the autocast switches as it found
    them; the break function re-enters them for real (ExitValue.rebuild). Each close is preceded by a
    hold on autocast's nesting count, which the block's AutocastExit lets go: the close must not clear
    the cast cache, which eager keeps until the block really ends."""
    for v in reversed(stack):
        if isinstance(v, ExitValue) and isinstance(v.manager, AutocastManager) and v.manager.node is not None:
            _state_node(tx, _hold_autocast_cache, ())
            _state_node(tx, _exit_autocast, (v.manager.node,))
