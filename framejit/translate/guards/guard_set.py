"""Guards: checks on Sources that must hold for a cache entry to be reused.

The translator adds a Guard for every Source whose value the graph or the Python result depends on.
`GuardSet.render` turns them into one Python boolean expression over the frame's arguments (with
constants bound by name, never spliced in as text), which codegen puts at the top of the generated
entry function. The same list gives readable strings for explain() and names the failing guard when
an entry keeps missing ("x.shape changed (8, 4) -> (16, 4)"). What each guard says, renders and
explains is its kind's (guards/kinds/); here are the record, the ordered set, and the fusions of several
guards into one native check (fuse_state_guards, fuse_atom_items).
"""
import dataclasses
from dataclasses import dataclass

import torch

from .const_equality import self_equal
from .kinds import ATOMS_MATCH, CONST_MATCH, GRAD_MODE, ID_MATCH, LEN_MATCH, NATIVE_STATE, STATE_MATCH, TYPE_MATCH, \
    GuardKind, WeakIdentity, kind_named
from .kinds.tensors import DynamicTensorMeta, TensorMeta   # noqa: F401  (translation records them through here)
from .kinds.guard_kind import operand
from .kinds.objects import native_same_atoms


def instance_guard_text(g):
    """`source is <object>` by id (WeakIdentity): no reference to the object in the entry."""
    obj = g.expected
    return f"__fj_id({operand(g.source.expr())}) == {obj.id if isinstance(obj, WeakIdentity) else id(obj)}"


def is_instance_guard(g, frame_params):
    """Is `g` the identity guard of an nn.Module the frame receives (a parameter, a closure cell)?"""
    from ..source import ClosureSource, LocalSource
    return g.kind is ID_MATCH and isinstance(g.expected, torch.nn.Module) and (
        isinstance(g.source, ClosureSource) or
        isinstance(g.source, LocalSource) and g.source.local in frame_params)


ATOM_TYPES = (str, int, bool, type(None))   # equality runs no user code; float left out (nan, -0.0)


@dataclass
class Guard:
    kind: GuardKind      # one of kinds/ (given by name or as the object): what is checked, and how
    source: object       # Source, or None for global-state guards
    expected: object
    origin: str = ""     # user source line that created it (for reports)

    def __post_init__(self):
        if not isinstance(self.kind, GuardKind):
            self.kind = kind_named(self.kind)

    def on(self, source):
        """This guard on another Source (not dataclasses.replace, whose per-field bookkeeping showed:
        guard rendering makes one per guard and path, thousands for a big model)."""
        return Guard(self.kind, source, self.expected, self.origin)

    def describe(self):
        return self.kind.describe(self)

    def explain_miss(self, env):
        """Plain words for why this guard failed given the generated code's environment, or None."""
        return self.kind.explain_miss(self, env)


class GuardSet:
    """Ordered, de-duplicated guards of one conversion."""

    def __init__(self):
        self.guards = []
        self._seen = set()

    def add(self, kind, source, expected, origin=""):
        kind = kind_named(kind)
        key = kind.key(source, expected)
        if key in self._seen:
            return
        self._seen.add(key)
        self.guards.append(Guard(kind, source, expected, origin))

    def require_leaf(self, source):
        """The conversion depends on whether the tensor at `source` is an autograd leaf: its tensor guard
        checks that too (guards/kinds/tensors.py). Nothing for a source without one (a tensor made in the
        frame) or one that does not require grad (always a leaf)."""
        for i, g in enumerate(self.guards):
            if g.source == source and g.kind.name in ("TENSOR_MATCH", "DYN_TENSOR_MATCH") and \
                    g.expected.requires_grad and not g.expected.leaf_checked:
                self.guards[i] = dataclasses.replace(g, expected=dataclasses.replace(g.expected, leaf_checked=True))

    def has(self, kind, source):
        """Was a guard of this kind on this source added (ID_MATCH: the object's identity is fixed)?"""
        return (kind_named(kind), source) in self._seen

    def __len__(self):
        return len(self.guards)

    def weaken(self, guards):
        """Hold the expected objects of these ID_MATCH guards weakly (WeakIdentity)."""
        ids = {id(g) for g in guards}
        self.guards = [dataclasses.replace(g, expected=WeakIdentity(g.expected)) if id(g) in ids else g
                       for g in self.guards]

    def describe(self):
        return [g.describe() for g in self.guards]

    def render(self, bind):
        """One boolean expression; `bind(obj) -> name` binds a constant into the generated namespace."""
        parts = []
        for g in self.guards:
            parts.append(render_guard(g, bind))
        return " and ".join(p for p in parts if p) or "True"


def _state_kind(fn):
    """native_state's name for a state query framejit guards, or None."""
    if not fn.__module__.startswith(("torch", "framejit")):
        return None
    return {"is_cpu_autocast_enabled": "autocast", "get_default_dtype": "dtype"}.get(fn.__name__)


def fuse_state_guards(guards):
    """The grad-mode, CPU-autocast and default-dtype guards as one NATIVE_STATE guard (one native call
    per compiled call instead of a binding call each), where they can all be read natively; else
    `guards`, rendered as Python calls."""
    from .native_state import state_bits
    found = []
    for g in guards:
        if g.kind is GRAD_MODE:
            found.append((g, state_bits("grad", g.expected)))
        elif g.kind is STATE_MATCH and _state_kind(g.expected[0]):
            found.append((g, state_bits(_state_kind(g.expected[0]), g.expected[1])))
    if not found or any(bits is None for _, bits in found):
        return guards
    mask = value = 0
    for _, (m, v) in found:
        mask, value = mask | m, value | v
    parts = [g for g, _ in found]
    fused = Guard(NATIVE_STATE, None, ((mask, value), parts), parts[0].origin)
    ids = {id(g) for g in parts}
    out = []
    for g in guards:
        if id(g) not in ids:
            out.append(g)
        elif g is parts[0]:
            out.append(fused)
    return out


def fuse_atom_items(guards, sequence_type):
    """A list or tuple of strings/ints/bools/None guarded item by item — `len(s) == n`, then each
    `s[i]`'s type and value (a config's `layer_types`: two guards per layer) — as one ATOMS_MATCH guard
    read by one native call (`_words.same_atoms`), at the length guard's place. `sequence_type(source)`
    is the exact type other guards give the sequence; only a list or tuple is fused. Without the
    native module, `guards` as they are."""
    if native_same_atoms() is None:
        return guards
    from ..source import ItemSource
    on = {}
    for g in guards:
        if g.source is not None:
            on.setdefault(g.source, []).append(g)
    fused, used = {}, set()
    for g in guards:
        if g.kind is not LEN_MATCH or g.expected < 2 or sequence_type(g.source) not in (list, tuple):
            continue
        values, parts = [], [g]
        for i in range(g.expected):
            mine = on.get(ItemSource(g.source, i), [])
            consts = [h for h in mine if h.kind is CONST_MATCH and type(h.expected) in ATOM_TYPES
                      and self_equal(h.expected)]
            if len(consts) != 1 or any(h is not consts[0] and not (h.kind is TYPE_MATCH and
                                                                   h.expected is type(consts[0].expected))
                                       for h in mine):
                break
            values.append(consts[0].expected)
            parts += mine
        else:
            fused[id(g)] = Guard(ATOMS_MATCH, g.source, (tuple(values), parts), g.origin)
            used |= {id(h) for h in parts}
    if not fused:
        return guards
    return [fused.get(id(g), g) for g in guards if id(g) in fused or id(g) not in used]


def render_guard(g, bind):
    """The condition the entry checks for `g` (its kind's rendering over its source's expression)."""
    return g.kind.render(g, operand(g.source.expr() if g.source is not None else None), bind)
