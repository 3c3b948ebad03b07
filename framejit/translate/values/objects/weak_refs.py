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

A ref the frame makes (`WeakRefValue`) refers to a Value that stays alive for the whole frame: an object
reached through a Source (its owner holds it) or a tensor the frame received. A ref of something the frame
made itself would be dead or alive depending on CPython's reference counts at that moment, which the
translator does not follow: making it is a break. After the graph a made ref is rebuilt as
`weakref.ref(<its referent>)` (the same ref object CPython hands back for a referent that has one).
"""
import weakref
from dataclasses import dataclass

from ....errors import GraphBreak
from ...source import Source
from ..base import Const, ObjectValue, TensorValue, Value

REF_TYPES = (weakref.ReferenceType,)        # and its subclasses (weakref.KeyedRef): see is_weak_ref


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


def _stays_alive(tx, v):
    """Is the object v stands for held by something for the whole frame (so a ref to it stays alive)?"""
    if isinstance(v, TensorValue):
        return v.node.op == "placeholder"
    return isinstance(v, ObjectValue) and v.source is not None


class WeakRefValue(Value):
    """`weakref.ref(target)` made in the frame, for a target that stays alive while the frame runs."""
    __slots__ = ("target",)
    made_in_frame = True

    def __init__(self, target):
        super().__init__(None)
        self.target = target

    @classmethod
    def make(cls, tx, args, kwargs):
        if len(args) != 1 or kwargs:
            raise GraphBreak("call", "weakref.ref with a callback (it runs when the referent dies)")
        target = args[0]
        if not _stays_alive(tx, target):
            raise GraphBreak("call", f"weakref.ref of {target!r}: an object the frame made, alive or not by "
                             "reference counts framejit does not follow")
        return cls(target)

    def python_type(self):
        return weakref.ReferenceType

    def call(self, tx, args, kwargs):
        if args or kwargs:
            raise GraphBreak("call", "a weak reference called with arguments (it takes none)")
        return self.target

    def rebuild_parts(self):
        return [self.target]

    def rebuild(self, rb):
        return f"{rb.ns.bind(weakref.ref)}({rb.expr(self.target)})"

    def __repr__(self):
        return f"WeakRefValue({self.target!r})"
