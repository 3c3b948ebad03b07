"""The kinds about one object: CONST_MATCH (its value), ID_MATCH (which object), TYPE_MATCH (its exact
type), LEN_MATCH (its length) and DICT_KEYS (a dict's keys, in order).

Their module-watch answers assume the source's path is watched (ModulePlan.is_covered checks that
first); their version answers name the VersionPlan fact that fixes them.
"""
import weakref

from ..const_equality import same_constant, same_keys, self_equal
from .guard_kind import IMMUTABLE_CONSTS, IMMUTABLE_HOLDERS, FusedKind, GuardKind, register, short, source_name


class WeakIdentity:
    """The expected object of an ID_MATCH guard on an nn.Module instance the frame receives (an
    argument, a closure cell), kept by a weak reference once the entry exists: the guard compares ids
    (`guard_set.instance_guard_text`) and the entry is forgotten when the object dies (cache.CodeState), so a
    dead module's entries go with it instead of keeping it, its parameters and its graphs alive."""

    __slots__ = ("ref", "id", "label")

    def __init__(self, obj):
        self.ref = weakref.ref(obj)
        self.id = id(obj)
        self.label = short(obj)


class ConstMatch(GuardKind):
    name = "CONST_MATCH"

    def describe(self, g):
        return f"{source_name(g)} == {g.expected!r}"

    def render(self, g, e, bind):
        x = g.expected
        if x is True and getattr(g.source, "boolean", False):
            return e                       # the expression is a bool test already
        if x is None or x is True or x is False:
            return f"{e} is {x!r}"
        if not self_equal(x):                 # a NaN somewhere: `==` would never hold
            return f"{bind(same_constant)}({e}, {bind(x)})"
        return f"type({e}) is {bind(type(x))} and {e} == {bind(x)}"

    def miss(self, g, name, actual):
        ok = same_constant(actual, g.expected)
        return None if ok else f"{name} changed {g.expected!r} -> {actual!r}"

    def module_covered(self, plan, g):
        return type(g.expected) in IMMUTABLE_CONSTS

    def implied_by_identity(self, plan, g):
        return type(g.expected) in IMMUTABLE_CONSTS and plan.fixed_by_base(g.source)

    def version_deps(self, vplan, g):
        return vplan.const_deps(g.source, g.expected)


CONST_MATCH = register(ConstMatch)


class IdMatch(GuardKind):
    name = "ID_MATCH"

    def describe(self, g):
        expected = g.expected
        return f"{source_name(g)} is {expected.label if isinstance(expected, WeakIdentity) else short(expected)}"

    def render(self, g, e, bind):
        if type(g.expected) in (int, float, str, bytes, complex):     # bind() spells these as literals,
            x = g.expected                                            # and `is` on a literal is an error
            return f"type({e}) is {bind(type(x))} and {e} == {bind(x)}"
        return f"{e} is {bind(g.expected)}"

    def miss(self, g, name, actual):
        expected = g.expected.ref() if isinstance(g.expected, WeakIdentity) else g.expected
        return None if actual is expected else f"{name} is a different object now ({short(actual)})"

    def module_covered(self, plan, g):
        return True

    def implied_by_identity(self, plan, g):
        return plan.fixed_by_base(g.source)

    def version_deps(self, vplan, g):
        return vplan.structural(g.source)


ID_MATCH = register(IdMatch)


class TypeMatch(GuardKind):
    name = "TYPE_MATCH"

    def describe(self, g):
        return f"type({source_name(g)}) is {g.expected.__name__}"

    def render(self, g, e, bind):
        return f"type({e}) is {bind(g.expected)}"

    def miss(self, g, name, actual):
        if type(actual) is g.expected:
            return None
        return f"type of {name} changed {g.expected.__name__} -> {type(actual).__name__}"

    def module_covered(self, plan, g):
        return True

    def implied_by_identity(self, plan, g):
        return plan.fixed_by_base(g.source)

    def version_deps(self, vplan, g):
        return vplan.type_deps(g.source, g.expected)


TYPE_MATCH = register(TypeMatch)


class LenMatch(GuardKind):
    name = "LEN_MATCH"

    def describe(self, g):
        return f"len({source_name(g)}) == {g.expected}"

    def render(self, g, e, bind):
        return f"len({e}) == {int(g.expected)}"

    def miss(self, g, name, actual):
        return None if len(actual) == g.expected else f"len({name}) changed {g.expected} -> {len(actual)}"

    def certain_text(self, g, certain_type, bind):
        return f"not {g.source.expr()}" if certain_type is tuple and g.expected == 0 else None

    def module_covered(self, plan, g):
        return plan.types.get(g.source) is tuple          # tuples are immutable

    def implied_by_identity(self, plan, g):
        # a list held in a tuple still changes length
        return plan.types.get(g.source) in IMMUTABLE_HOLDERS and plan.fixed_by_base(g.source)

    def version_deps(self, vplan, g):
        return vplan.length_deps(g.source)


LEN_MATCH = register(LenMatch)


class DictKeys(GuardKind):
    name = "DICT_KEYS"

    def describe(self, g):
        return f"list({source_name(g)}.keys()) == {list(g.expected)!r}"

    def render(self, g, e, bind):
        return _same_keys_text(f"tuple({e}.keys())", g.expected, bind)

    def miss(self, g, name, actual):
        if same_keys(tuple(actual.keys()), tuple(g.expected)):
            return None
        return f"keys of {name} changed {list(g.expected)} -> {list(actual.keys())}"

    def certain_text(self, g, certain_type, bind):
        return _same_keys_text(f"[*{g.source.expr()}]", g.expected, bind) if certain_type is dict else None

    def module_covered(self, plan, g):
        return plan.is_module_table(g.source)

    def version_deps(self, vplan, g):
        return vplan.keys_deps(g.source)


DICT_KEYS = register(DictKeys)


_ATOM_TYPES = (str, int, bool, type(None))


def _same_keys_text(keys, expected, bind):
    """The keys, in order, with their exact types: equal keys are not always the same key to the code
    (`1`, `True`, `1.0`; a str-Enum member and its string), so `==` on the tuple is not enough."""
    expected = tuple(expected)
    native = native_same_atoms()
    if native is not None and all(type(k) in _ATOM_TYPES for k in expected):
        return f"{bind(native)}({keys}, {bind(expected)})"
    return f"{bind(same_keys)}({keys}, {bind(expected)})"


def native_same_atoms():
    """`_words.same_atoms`, or None without the native module."""
    try:
        from ...._words import same_atoms
    except ImportError:
        return None
    return same_atoms


class AtomsMatch(FusedKind):
    """A list or tuple of strings/ints/bools/None: its length and items, one native call
    (guard_set.fuse_atom_items); expected = (the items, the guards it stands for)."""
    name = "ATOMS_MATCH"

    def render(self, g, e, bind):
        return f"{bind(native_same_atoms())}({e}, {bind(g.expected[0])})"


ATOMS_MATCH = register(AtomsMatch)
