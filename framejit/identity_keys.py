"""Maps keyed by an object's identity, weak on the key.

Why this exists: code objects compare equal by value. The same source compiled twice (exec'd into two
globals, a re-run notebook cell, one helper defined in two modules) gives two equal code objects, so a
dict or WeakKeyDictionary keyed by code merges the state of different functions: the second function
would run the first one's cache entries and read the first one's globals. framejit's per-code tables
key by identity instead, with a weak reference that drops the item when the object dies (so the id
can never be reused while the item is there). A value must not hold its key strongly, or the item
lives as long as the table.
"""
import weakref


class WeakIdentityMap:
    """obj -> value by `id(obj)`, the item removed when obj dies."""

    __slots__ = ("_items",)

    def __init__(self):
        self._items = {}            # id(obj) -> (weak ref to obj, value)

    def get(self, obj, default=None):
        item = self._items.get(id(obj))
        if item is not None and item[0]() is obj:
            return item[1]
        return default

    def __contains__(self, obj):
        item = self._items.get(id(obj))
        return item is not None and item[0]() is obj

    def __setitem__(self, obj, value):
        key, items = id(obj), self._items

        def drop(ref, key=key, items=items):
            if items.get(key, (None,))[0] is ref:
                del items[key]

        items[key] = (weakref.ref(obj, drop), value)

    def setdefault(self, obj, value):
        found = self.get(obj, _ABSENT)
        if found is _ABSENT:
            self[obj] = found = value
        return found

    def values(self):
        return [value for ref, value in list(self._items.values()) if ref() is not None]

    def __len__(self):
        return len(self._items)


_ABSENT = object()
