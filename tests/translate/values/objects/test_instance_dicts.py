"""Differential tests: a bound method of an object's __dict__ that reaches a frame without its object
(left on the stack across a graph break, so the resume function receives it) writes attributes the
frame reads right after; the frame must see them (translate/values/objects/instance_dicts.py)."""
import torch

from tests.differential import check, randn


class Box:
    pass


BOX = Box()
SEEN = []


def update_across_break(x, n):
    BOX.__dict__.update(extra=int(torch.arange(n + 1).sum()))       # int(tensor) breaks mid-call
    SEEN.append(getattr(BOX, "extra", 0))
    return x * getattr(BOX, "extra", 0)


def setdefault_across_break(x, n):
    vars(BOX).setdefault("other", int(x.sum() > 100) + n)
    return x + getattr(BOX, "other", -1), hasattr(BOX, "other")


def test_dict_update_of_instance_dict_across_break():
    BOX.__dict__.clear()
    SEEN.clear()
    check(update_across_break, randn(3, seed=1), 2)


def test_dict_setdefault_of_instance_dict_across_break():
    BOX.__dict__.clear()
    check(setdefault_across_break, randn(3, seed=2), 4)


VALIDATORS = {int: "int", float: "float"}


def lookup_in_a_global_dict(x):
    return x * len(VALIDATORS.get(float, ""))


def test_a_dict_reached_by_a_path_is_not_searched_for_an_owner(monkeypatch):
    """gc.get_referrers scans the whole heap (seconds per conversion in a large process): a method looked
    up on a dict the frame reached by a path (here a module global) must not pay it."""
    import framejit.translate.values.objects.instance_dicts as instance_dicts
    scans = []
    real = instance_dicts.gc.get_referrers
    monkeypatch.setattr(instance_dicts.gc, "get_referrers", lambda *objs: scans.append(objs) or real(*objs))
    check(lookup_in_a_global_dict, randn(3), graphs=1, fullgraph=True)
    assert scans == []
