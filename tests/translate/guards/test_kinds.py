"""Guard kinds are objects (translate/guards/kinds/): each registered kind describes, renders and explains
its own guards, names resolve to the one object, and code that compares a kind with its name fails
loudly instead of never matching."""
import copy
import pickle

import pytest
import torch

import framejit
from framejit.translate.guards.guard_set import Guard, GuardSet
from framejit.translate.guards.kinds import KINDS, GuardKind, LEN_MATCH, TYPE_MATCH, kind_named
from framejit.translate.source import LocalSource


def test_every_kind_writes_its_own_text():
    for name, kind in KINDS.items():
        assert kind.name == name and kind_named(name) is kind and kind_named(kind) is kind
        assert type(kind).render is not GuardKind.render, f"{name} renders nothing of its own"
        assert type(kind).describe is not GuardKind.describe, f"{name} has no words of its own"


def test_names_resolve_and_comparing_with_a_name_is_loud():
    guards = GuardSet()
    guards.add("LEN_MATCH", LocalSource("x"), 3)
    guards.add(LEN_MATCH, LocalSource("x"), 3)                # the same guard, by object
    assert len(guards) == 1 and guards.guards[0].kind is LEN_MATCH and guards.has("LEN_MATCH", LocalSource("x"))
    with pytest.raises(TypeError):
        guards.guards[0].kind == "LEN_MATCH"
    assert copy.deepcopy(guards.guards[0]).kind is LEN_MATCH and pickle.loads(pickle.dumps(LEN_MATCH)) is LEN_MATCH
    g = Guard("TYPE_MATCH", LocalSource("x"), list)
    assert g.kind is TYPE_MATCH and g.describe() == "type(x) is list"
    assert g.explain_miss({"x": (1,)}) == "type of x changed list -> tuple"


def test_a_miss_is_told_by_the_kind_that_failed():
    def f(x, items):
        return x * len(items)

    compiled = framejit.compile(f)
    x = torch.ones(2)
    compiled(x, [1, 2])
    entry = compiled._framejit_state.results[0]
    env = {"x": x, "items": [1, 2, 3]}
    reasons = [why for g in entry.guards.guards if (why := g.explain_miss(env))]
    assert reasons == ["len(items) changed 2 -> 3"], reasons
