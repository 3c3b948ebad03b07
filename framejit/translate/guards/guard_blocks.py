"""Guard blocks compiled out of line: a block of guards that runs only when a counter or a word moved
becomes a function of its own in the entry's namespace (OutOfLine), compiled at once or on its first
call (LazyBlock), so the entry, and its inlined copy in the dispatcher, stay small.
"""
import re
import threading

from .guard_paths import fixed_keys
from ..source import FIXED_OBJECTS

_NAME = re.compile(r"\w+")          # a maximal run of word characters: what `\bname\b` finds


class OutOfLine:
    """Compiles a guard block as `def __fj_blockN(<the names it reads>): return (<block>)` into the
    entry's namespace and returns the call expression. The parameters are the frame's own parameter
    names found in the block's text plus the entry locals it reads (`internal`). With `lazy` (the shared
    entry's blocks, which no call needs until another instance comes), the text is compiled when the
    block is first called: compiling a big model's block costs as much as rendering it."""

    def __init__(self, ns, params, lazy=False, defer=False):
        self.ns = ns
        self.params = tuple(params)
        self.count = 0
        self.lazy = lazy
        if not defer:
            self.deferred = None

    def deferred(self, text, guards, sources, internal=()):
        """A lazy block whose text, too, is made on its first call (`text()`, rendering `guards` on
        `sources`): it takes every frame parameter, as which ones the text reads is not known yet. The
        fixed objects the paths name are bound now, while they are certainly alive."""
        for key in fixed_keys(guards, sources):
            self.ns.env[f"__fj_fixed_{key}"] = FIXED_OBJECTS[key]
        names = self.params + tuple(internal)
        name = f"__fj_block{self.count}"
        self.count += 1
        self.ns.env[name] = LazyBlock(name, None, None, (text, names, self.ns))
        return f"{name}({', '.join(names)})"

    def __call__(self, expr, internal=()):
        # one scan of the (long) block text for every name it mentions, not one regex search per parameter
        used = set(_NAME.findall(expr))
        names = [p for p in self.params + tuple(internal) if p in used]
        name = f"__fj_block{self.count}"
        self.count += 1
        src = f"def {name}({', '.join(names)}):\n    return ({expr})\n"
        for key in set(re.findall(r"__fj_fixed_(\d+)", src)):
            self.ns.env[f"__fj_fixed_{key}"] = FIXED_OBJECTS[int(key)]
        # its own globals (what is bound so far, all its text names): a function in the dict that is its
        # globals is a cycle, which would keep the entry and its modules until the cyclic GC ran
        env = dict(self.ns.env)
        self.ns.env[name] = LazyBlock(name, src, env) if self.lazy else _compiled_block(name, src, env)
        return f"{name}({', '.join(names)})"


def _compiled_block(name, src, env):
    exec(compile(src, f"<framejit guard block {name}>", "exec"), env)
    return env.pop(name)


_RENDER_LOCK = threading.Lock()


class LazyBlock:
    """A guard block compiled on its first call (OutOfLine's `lazy`); its text and globals are fixed when
    it is made, so compiling later gives the function compiling at once would have. A deferred block
    (OutOfLine.deferred) has no text yet: `pending` is (text function, parameter names, namespace), and
    its first call renders the text, binding its constants into the entry's namespace, whose names are
    its globals then."""

    __slots__ = ("name", "src", "env", "fn", "pending")

    def __init__(self, name, src, env, pending=None):
        self.name, self.src, self.env, self.fn, self.pending = name, src, env, None, pending

    def __call__(self, *args):
        fn = self.fn
        if fn is None:
            with _RENDER_LOCK:                   # two threads' first calls: one renders and compiles
                fn = self.fn
                if fn is None:
                    if self.pending is not None:
                        text, names, ns = self.pending
                        self.src = f"def {self.name}({', '.join(names)}):\n    return ({text()})\n"
                        self.env = dict(ns.env)
                        self.env.pop(self.name, None)    # itself in its own globals: a cycle (see OutOfLine)
                    fn = self.fn = _compiled_block(self.name, self.src, self.env)
                    self.src = self.env = self.pending = None    # its own globals hold what it needs
        return fn(*args)
