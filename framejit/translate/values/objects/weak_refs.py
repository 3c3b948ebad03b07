"""Weak references the frame reads: `ref()` of a `weakref.ref` from outside the frame, and refs the frame
makes itself (`weakref.ref(self.weight)`).

Why this exists: torch's RNN modules keep `weakref.ref`s of their flat weights and, on every forward,
check `ref() is not weight` (`_weights_have_changed`); calling a ref was an opaque call, so each RNN
forward broke the graph ten times and converted thirteen frames. A weak reference is a pure read: calling
it gives the object it refers to, or None once that object is dead.

A ref from outside the frame (an ObjectValue with a Source) is answered at translation: its referent
is wrapped under the Source `<ref>()` (`RefCallSource`), so it is guarded like any input -- an object
already wrapped under another Source is the same Value plus the guard `<ref>() is <that source>`, a
tensor gets its tensor guard (which fails on None when the referent has died) -- and a dead ref is
guarded `<ref>() is None`.

A ref the frame makes (`weakref.ref(self.lin)`, `make_ref`) is the real ref, made at translation and
reached as `weakref.ref(<the object's Source>)` (`MadeRefSource`): CPython hands back an object's existing
callback-free ref, so `weakref.ref(w) is self._ref` holds as in eager (the ref itself is not guarded: which
object comes back follows from the referent and the refs that hold it, each guarded where the frame reads
it). Its referent must stay alive for the whole frame -- an object reached through a Source (its owner
holds it) or a tensor the frame received. A ref of something the frame made itself would be dead or alive
depending on CPython's reference counts at that moment, which the translator does not follow: a break.
A `weakref.proxy` is a break where the frame first reads it (`proxy_break`): no expression reaches its
referent for a guard or a reload.
"""
import weakref
from dataclasses import dataclass

from ....errors import GraphBreak
from ...source import Source, fixed_source
from ..base import Const, ObjectValue, TensorValue



# weakref.proxy objects: no expression reaches a proxy's referent, so guards could not name it, and a proxy
# answers isinstance() as its referent (a proxy of a module passed for a module): wrapping one is a break
PROXY_TYPES = (weakref.ProxyType, weakref.CallableProxyType)


def proxy_break(name):
    return GraphBreak("weakref proxy", f"{name} is a weakref.proxy: its referent cannot be named in guards, "
                      "so the code using it runs as Python")


def is_weak_ref(obj):
    return isinstance(obj, weakref.ReferenceType)


@dataclass(frozen=True)
class RefCallSource(Source):
    """`base()`: the object a weak reference refers to, or None."""
    base: Source

    def expr(self):
        return f"{self.base.expr()}()"

    def name(self):
        return f"{self.base.name()}()"

    def root(self):
        return self.base.root()


def call_outside_ref(tx, ref_value, ref, args, kwargs):
    """`ref()` of a weak reference from outside the frame (see the module docstring)."""
    if args or kwargs:
        raise GraphBreak("call", "a weak reference called with arguments (it takes none)")
    if ref_value.source is None:
        raise GraphBreak("call", "calling a weak reference framejit cannot reach to guard")
    source = RefCallSource(ref_value.source)
    target = ref()
    if target is None:
        tx.ctx.guards.add("CONST_MATCH", source, None)
        return Const(None, source)
    return tx.ctx.wrap(target, source)


@dataclass(frozen=True)
class MadeRefSource(Source):
    """`weakref.ref(target)`: the frame's own `weakref.ref(obj)` of an object reached through a Source."""
    ref_type: Source
    target: Source

    def expr(self):
        return f"{self.ref_type.expr()}({self.target.expr()})"

    def name(self):
        return f"weakref.ref({self.target.name()})"

    def root(self):
        return self.target.root()


def _real_target(tx, v):
    """(the real object, its Source) of a Value that stays alive for the whole frame, or None."""
    if isinstance(v, TensorValue):
        for source, real, node in tx.ctx.graph.inputs:
            if node is v.node:
                return real, source
        return None
    if isinstance(v, ObjectValue) and v.source is not None:
        return v.obj, v.source
    return None


def make_ref(tx, args, kwargs):
    """`weakref.ref(obj)` in the frame: the real ref, made now and reached as `weakref.ref(<obj's source>)`.
    CPython hands back the object's existing callback-free ref when it has one, so the frame's ref is
    the very object a module stored (`weakref.ref(w) is self._ref` holds, as in eager)."""
    if len(args) != 1 or kwargs:
        raise GraphBreak("call", "weakref.ref with a callback (it runs when the referent dies)")
    found = _real_target(tx, args[0])
    if found is None:
        raise GraphBreak("call", f"weakref.ref of {args[0]!r}: an object the frame made, alive or not by "
                         "reference counts framejit does not follow")
    obj, source = found
    # unguarded: which ref object comes back follows from the referent (guarded through its own Source)
    # and from the refs that hold it (guarded where the frame reads them); a new input's ref is new per call
    return tx.ctx.wrap(weakref.ref(obj), MadeRefSource(fixed_source(weakref.ref, "weakref.ref"), source), guard=False)
