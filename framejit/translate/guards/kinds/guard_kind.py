"""What every guard kind answers, and the registry of kinds by name.

A guard is (kind, source, expected, origin) (guard_set.Guard). Its kind is one object of a GuardKind
class, which owns everything that depends on the kind:
  describe(g)               the plain words explain() and the recompile reasons show ("len(x) == 3")
  render(g, e, bind)        the Python condition the entry checks, over `e`, the source's expression
  explain_miss(g, env)      why the guard fails now, in words, or None when it holds
and, for the plans that make an entry's guards cheap (all optional, the defaults checking the guard
on every call):
  certain_text(...)         a cheaper condition when the source's type is certain (*args, **kwargs)
  module_covered(plan, g)   can the fact change only through nn.Module's watched entry points
                            (module_guards.ModulePlan, once the source's path is known to be watched)?
  implied_by_identity(...)  is it implied by an identity guard on an immutable holder?
  version_deps(vplan, g)    the version words that keep it true (dict_guards.VersionPlan), or None
Translation code names a kind by its name (`ctx.guards.add("TYPE_MATCH", source, t)`); `kind_named`
finds the object.
"""
import re
import types

import torch

# constant types whose value cannot change in place: a guard on one is a function of which object it is
IMMUTABLE_CONSTS = (int, float, bool, str, bytes, complex, type(None), torch.dtype, torch.device, torch.layout,
                    torch.memory_format, torch.Size)
# holders whose attributes and items are fixed once made
IMMUTABLE_HOLDERS = (types.CodeType, tuple, str, bytes, frozenset, torch.Size)

KINDS = {}          # name -> the kind object


class GuardKind:
    """One kind of guard (see the module docstring); subclasses are made once, by `register`."""
    name = None
    check_steps = 0     # one check's cost, in steps of a source path (dict_guards.VersionPlan.worth_it)

    def __repr__(self):
        return self.name

    def __eq__(self, other):
        if isinstance(other, str):          # code written for the names: loud, not silently False
            raise TypeError(f"a guard kind is an object: test `g.kind is {other}` (translate/guards/kinds/)")
        return self is other

    __hash__ = object.__hash__

    def __reduce__(self):                   # copied or pickled, still the one object (`is` tests hold)
        return kind_named, (self.name,)

    def key(self, source, expected):
        """What makes two guards the same guard (the second one is dropped)."""
        return self, source

    def describe(self, g):
        return f"{self.name} {source_name(g)}"

    def render(self, g, e, bind):
        raise ValueError(self.name)

    def explain_miss(self, g, env):
        """Plain words for why `g` failed given the generated code's environment, or None."""
        try:
            actual = self.read(g, env)
        except Exception as e:
            return f"{g.source.name()} could not be read ({type(e).__name__})"
        return self.miss(g, g.source.name(), actual)

    def read(self, g, env):
        return eval(g.source.expr(), env)

    def miss(self, g, name, actual):
        """Words for how `actual`, the value at the source named `name`, differs from the guard's."""
        return None

    def certain_text(self, g, certain_type, bind):
        """A condition for `g` when its source's type is certainly `certain_type`, or None."""
        return None

    def module_covered(self, plan, g):
        """Given that only a watched entry point can replace the object at g.source, is `g` covered by
        the module watch (guards/module_guards.py)?"""
        return False

    def implied_by_identity(self, plan, g):
        """Does `g` hold whenever the identity guard of its source's (immutable) holder holds?"""
        return False

    def version_deps(self, vplan, g):
        """The watch keys that keep `g` true while their words do not move (guards/dict_guards.py), or None."""
        return None


class FusedKind(GuardKind):
    """A guard standing for several others (expected = (what its one check reads, the guards)): its words
    and its miss explanation are theirs."""

    def describe(self, g):
        return "; ".join(part.describe() for part in g.expected[1])

    def explain_miss(self, g, env):
        return next((why for why in (part.explain_miss(env) for part in g.expected[1]) if why), None)


def register(cls):
    """Make the one object of a GuardKind class and file it under its name."""
    kind = cls()
    assert kind.name not in KINDS, kind.name
    KINDS[kind.name] = kind
    return kind


def kind_named(kind):
    """The kind object for a kind or its name."""
    return kind if isinstance(kind, GuardKind) else KINDS[kind]


def source_name(g):
    return g.source.name() if g.source is not None else ""


def operand(e):
    """`e` as an operand of `is`, `==`, `.attr` (a source may render as `not (...)`, `a or b`...)."""
    return e if e is None or re.fullmatch(r"[\w.]+", e) else f"({e})"


def short(obj):
    r = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if r is None:
        r = type(obj).__name__ + " object"
    return f"<{r}>"
