"""Which names a generated statement may use, and what it may do to them, at the point it is written.

Blocks (if/for/while/try/with/def) open a child Scope: names bound inside stay inside, because the
block may not run (or may stop half way). A block may still update an outer name, keeping its kind.
`frozen` names (loop counters, containers being iterated) are read but never updated; `pinned`
names are never rebound.
Object attributes are tracked per class (`ObjectAttrs`), conservatively: a deletion anywhere makes
the attribute unsure for every instance; an addition is sure only at the function's top level.
"""
from dataclasses import dataclass, field


@dataclass
class ObjectAttrs:
    sure: dict                      # attribute name -> kind, present on every instance here
    maybe: dict = field(default_factory=dict)   # may be present (read with getattr(..., default))


class Scope:
    def __init__(self, parent=None, *, no_grad=None, grad_on=None, loop=False, in_try=False, function=False):
        self.parent = parent
        self.names = {}
        self.frozen = set()
        self.pinned = set()         # never rebound (grad leaves: backward statements differentiate them)
        self.no_grad = parent.no_grad if no_grad is None and parent else bool(no_grad)
        # grad mode surely on (backward() is valid); a nested def may be called anywhere
        self.grad_on = (parent.grad_on if parent else True) if grad_on is None else grad_on
        if function or self.no_grad:
            self.grad_on = False
        self.loop = loop or (parent.loop if parent and not function else False)
        self.in_try = in_try or (parent.in_try if parent and not function else False)
        self.function = function      # a nested def's scope: outer names are read-only (closures)
        self.depth = 0 if parent is None else parent.depth + 1

    def child(self, **flags):
        return Scope(self, **flags)

    def bind(self, name, kind):
        self.names[name] = kind

    def lookup(self, name):
        scope = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def visible(self):
        """name -> kind for every name readable here (inner first)."""
        out = {}
        scope = self
        while scope is not None:
            for name, kind in scope.names.items():
                out.setdefault(name, kind)
            scope = scope.parent
        return out

    def is_frozen(self, name):
        scope = self
        while scope is not None:
            if name in scope.frozen:
                return True
            scope = scope.parent
        return False

    def mutable(self):
        """name -> kind for names whose object a statement here may change (append, setattr, add_)."""
        return {n: k for n, k in self.visible().items() if not self.is_frozen(n)}

    def rebindable(self):
        """name -> kind for names a statement here may assign: not frozen, and not a nested def's
        free variable (assigning it would make it local to the def)."""
        out = {}
        scope = self
        while scope is not None:
            for name, kind in scope.names.items():
                if not self.is_frozen(name) and name not in scope.pinned:
                    out.setdefault(name, kind)
            if scope.function:
                break
            scope = scope.parent
        return out

    def top_level(self):
        return self.depth == 0
