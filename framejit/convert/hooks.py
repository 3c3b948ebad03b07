"""Bytecode hooks: let a user see (and replace) the code framejit generates for a frame.

Why this exists: to debug or instrument what framejit runs instead of a function, a hook registered
with `framejit.register_bytecode_hook(hook)` is called each time framejit generates an entry function
(the guards + compiled graph + rebuilt result of one cache entry, see codegen.build_entry):

    def hook(original_code, transformed_code):
        print(dis.dis(transformed_code))
        return None                    # or a code object to run instead of transformed_code

    handle = framejit.register_bytecode_hook(hook)
    ...
    handle.remove()

Hooks run in registration order, each seeing the code returned by the previous one. A replacement
must be a code object with the same free variables as the one it replaces. A hook that raises is a
bug in the hook: the exception propagates (the conversion then falls back to plain Python with a
warning, like any other conversion failure). Only conversions call hooks, never the fast path.
"""
import itertools
import threading
import types


class BytecodeHookHandle:
    """Returned by register_bytecode_hook; `.remove()` unregisters the hook (again: no effect)."""

    def __init__(self, registry, key):
        self._registry = registry
        self._key = key

    def remove(self):
        self._registry.remove(self._key)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.remove()


class BytecodeHooks:
    """The registered hooks, in registration order."""

    def __init__(self):
        self._lock = threading.Lock()
        self._hooks = {}
        self._keys = itertools.count()

    def register(self, hook):
        if not callable(hook):
            raise TypeError(f"a bytecode hook must be callable as hook(original_code, transformed_code), "
                            f"got {type(hook).__name__}")
        with self._lock:
            key = next(self._keys)
            self._hooks[key] = hook
        return BytecodeHookHandle(self, key)

    def remove(self, key):
        with self._lock:
            self._hooks.pop(key, None)

    def __len__(self):
        return len(self._hooks)

    def apply(self, original, transformed):
        """Run every hook; the code to use (transformed, or the last replacement a hook returned)."""
        with self._lock:
            hooks = list(self._hooks.values())
        for hook in hooks:
            replacement = hook(original, transformed)
            if replacement is None:
                continue
            if not isinstance(replacement, types.CodeType):
                raise TypeError(f"bytecode hook {getattr(hook, '__qualname__', hook)!r} returned "
                                f"{type(replacement).__name__}; it must return a code object or None")
            if replacement.co_freevars != transformed.co_freevars:
                raise ValueError(f"bytecode hook {getattr(hook, '__qualname__', hook)!r} returned code with free "
                                 f"variables {replacement.co_freevars}, expected {transformed.co_freevars}")
            transformed = replacement
        return transformed


BYTECODE_HOOKS = BytecodeHooks()


def register_bytecode_hook(hook):
    """Call `hook(original_code, transformed_code)` for every entry function framejit generates; it may
    return a code object to use instead. Returns a handle whose `.remove()` unregisters it."""
    return BYTECODE_HOOKS.register(hook)


def apply_bytecode_hooks(original, fn):
    """Let the registered hooks see (and maybe replace) the code of generated function `fn`."""
    if not len(BYTECODE_HOOKS):
        return fn
    code = BYTECODE_HOOKS.apply(original, fn.__code__)
    if code is not fn.__code__:
        fn.__code__ = code
    return fn
