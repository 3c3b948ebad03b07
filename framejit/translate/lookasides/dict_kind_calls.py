"""dict's own methods called on a DictValue (`super().__setitem__(k, v)` in a dict subclass, `dict.__init__(self)`,
`OrderedDict.update(d, ...)`): they act on the symbolic dict (values/dicts/dict_kinds.py); on anything else
the lookaside registered before (lookasides/builtin_methods.py), which this wraps.
"""
import collections

from ...errors import GraphBreak
from ..dispatch import LOOKASIDES
from ..values.base import Const, DictValue
from ..values.containers.subscripts import DICT_METHODS
from ..values.dicts.dict_kinds import builtin_getitem, builtin_init, fromkeys, store_item
from ..values.protocol import dict_key


def _install_builtin_lookasides():
    def wrap(fn, name):
        previous = LOOKASIDES.get(fn)

        def impl(tx, args, kwargs):
            if args and isinstance(args[0], DictValue):
                d = args[0]
                if name == "__getitem__":
                    return builtin_getitem(tx, d, args[1])
                if name == "__setitem__":
                    store_item(tx, d, dict_key(args[1]), args[2])
                    return Const(None)
                if name == "__delitem__":
                    key = dict_key(args[1])
                    if key not in d.items:
                        raise GraphBreak("key error", f"KeyError: {key!r}")
                    del d.items[key]
                    tx.ctx.side_effects.mutate_container(d)
                    return Const(None)
                if name == "__init__":
                    return builtin_init(tx, d, args[1:], kwargs)
                if name in DICT_METHODS:
                    return DICT_METHODS[name](tx, d, *args[1:], **kwargs)
            if previous is not None:
                return previous(tx, args, kwargs)
            raise GraphBreak("call", f"dict.{name} on {args[0] if args else 'nothing'!r}")
        LOOKASIDES[fn] = impl

    for base in (dict, collections.OrderedDict, collections.defaultdict):
        # (dict.get, __getitem__ and __contains__ on a DictValue: lookasides/builtin_methods.py)
        for name in ("__setitem__", "__delitem__", "__init__", "update", "setdefault", "pop", "keys", "values",
                     "items", "clear"):
            fn = vars(base).get(name)
            if fn is not None:
                wrap(fn, name)
    for owner in (dict, collections.OrderedDict, collections.defaultdict):
        LOOKASIDES[owner.fromkeys] = lambda tx, args, kwargs, owner=owner: fromkeys(tx, owner, args, kwargs)


_install_builtin_lookasides()
