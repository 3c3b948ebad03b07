"""The module watch: one counter that moves whenever a watched nn.Module or Parameter changes.

Why this exists: a captured model reads hundreds of module attributes, submodules, hook tables and
parameters; guarding each one on every call costs more than the graph saves. But that state only
changes through a handful of entry points: nn.Module.__setattr__/__delattr__ (which also carry
train()/eval(), parameter and submodule replacement, `module.to()` through _apply), register_* and the
hook registration methods, the few container methods that edit `_modules` directly, RemovableHandle.remove,
and for Parameters the `data`/`requires_grad` setters and the in-place methods that change metadata
(requires_grad_, resize_, set_, t_, ...). Each of those is wrapped here to bump EPOCH when the object
is watched (a module or parameter some cache entry relies on). A generated entry then checks one
integer instead of the whole module tree, and re-validates the full set of guards only when the
counter moved (see guards/module_guards.py).

Not noticed (documented limits): writing a module's internal tables directly (`m._parameters[k] = p`,
`m.__dict__[k] = v`, `object.__setattr__(m, ...)`, `m._forward_hooks[i] = f`), and metadata changes of
plain tensors held as buffers (those stay checked on every call).

The wrappers are installed the first time a conversion relies on them (never at import), and are
idempotent.
"""
import functools
import threading
import types
import weakref

import torch
from torch.utils.hooks import RemovableHandle

EPOCH = [0]                      # the one counter generated entries compare against
_WATCHED = {}                    # id -> weakref of the modules and parameters some cache entry relies on
_INSTALL_LOCK = threading.Lock()
_INSTALLED = []

MODULE_MUTATORS = ("__setattr__", "__delattr__", "register_buffer", "register_parameter", "add_module",
                   "register_module", "_apply", "set_submodule", "register_forward_pre_hook",
                   "register_forward_hook", "register_full_backward_pre_hook", "register_full_backward_hook",
                   "register_backward_hook", "set_extra_state", "load_state_dict")
# Container methods that edit `_modules` directly (the others go through add_module/setattr/delattr,
# which are wrapped already). Kept to this minimum so other tools that trace these classes by identity
# (TorchDynamo inlines ModuleList.__init__ -> __iadd__) see torch's own functions.
CONTAINER_MUTATORS = {torch.nn.ModuleList: ("insert",), torch.nn.Sequential: ("insert",),
                      torch.nn.ModuleDict: ("__delitem__", "clear")}
PARAMETER_METADATA_METHODS = ("requires_grad_", "resize_", "resize_as_", "set_", "t_", "transpose_", "squeeze_",
                              "unsqueeze_", "as_strided_", "swapdims_", "swapaxes_", "share_memory_")


def watch(obj):
    """Rely on obj (an nn.Module or Parameter): its changes through the wrapped entry points bump EPOCH.
    Modules are known by their instance __dict__, which framejit.compile(module) shares with the
    original module, so a change made through either object counts."""
    if not _INSTALLED:
        install()
    key = _key(obj)
    known = _WATCHED.get(key)
    if known is None or known() is None:
        _WATCHED[key] = weakref.ref(obj, lambda ref, key=key: _WATCHED.get(key) is ref and _WATCHED.pop(key))


def _key(obj):
    return id(obj.__dict__) if isinstance(obj, torch.nn.Module) else id(obj)


def _changed(obj):
    if torch.compiler.is_compiling():    # TorchDynamo tracing this call: the real one comes later
        return
    ref = _WATCHED.get(_key(obj))        # by id: tensors compare by value, so no WeakSet
    if ref is not None and ref() is not None:
        EPOCH[0] += 1


def _bumping(method, name):
    """`method` followed by a bump. Each wrapper gets its own code object: tools that recognise
    nn.Module's methods by their code (TorchDynamo) must not mistake one wrapper for another."""
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        finally:
            _changed(self)
    code = wrapper.__code__.replace(co_name=name, co_qualname=f"framejit_watched.{name}")
    unique = types.FunctionType(code, wrapper.__globals__, name, None, wrapper.__closure__)
    functools.update_wrapper(unique, method)
    unique.__framejit_watch__ = method
    return unique


def _bumping_setattr(method):
    """Module.__setattr__ followed by a bump, except when a plain attribute is set to the very object
    it already held (a forward that re-assigns `self.shift_size = 0` on every call changes nothing)."""
    def __setattr__(self, name, value):
        d = self.__dict__
        before = d.get(name, _ABSENT)
        try:
            return method(self, name, value)
        finally:
            if before is _ABSENT or d.get(name, _ABSENT) is not before:
                _changed(self)
    functools.update_wrapper(__setattr__, method)
    __setattr__.__framejit_watch__ = method
    return __setattr__


_ABSENT = object()


def unwrapped(method):
    """The method a module-watch wrapper stands for (the method itself when it is not one)."""
    return getattr(method, "__framejit_watch__", method)


def _wrap_methods(cls, names):
    for name in names:
        method = cls.__dict__.get(name)
        if method is not None and callable(method) and not hasattr(method, "__framejit_watch__"):
            setattr(cls, name, _bumping_setattr(method) if name == "__setattr__" else _bumping(method, name))


def _handle_remove(method):
    @functools.wraps(method)
    def remove(self):
        try:
            return method(self)
        finally:
            EPOCH[0] += 1        # a hook table somewhere lost an entry (cheap: removals are rare)
    remove.__framejit_watch__ = method
    return remove


def _metadata_property(name):
    """Parameter.<name> with the C getter of torch's own descriptor and a setter that bumps."""
    base = torch._C.TensorBase.__dict__[name]

    def setter(self, value):
        try:
            base.__set__(self, value)
        finally:
            _changed(self)
    prop = property(base.__get__, setter, None, base.__doc__)
    return prop


def install():
    with _INSTALL_LOCK:
        if _INSTALLED:
            return
        _wrap_methods(torch.nn.Module, MODULE_MUTATORS)
        for cls, names in CONTAINER_MUTATORS.items():
            _wrap_methods(cls, names)
        if not hasattr(RemovableHandle.remove, "__framejit_watch__"):
            RemovableHandle.remove = _handle_remove(RemovableHandle.remove)
        param = torch.nn.Parameter
        for name in ("data", "requires_grad"):
            if name not in param.__dict__:
                setattr(param, name, _metadata_property(name))
        for name in PARAMETER_METADATA_METHODS:
            if name not in param.__dict__:
                setattr(param, name, _bumping(getattr(torch.Tensor, name), name))
        _INSTALLED.append(True)
