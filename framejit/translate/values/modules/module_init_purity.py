"""Is constructing this nn.Module class from constants a pure computation, so it can be done once at
translation and stand for the module the eager call makes each time?

Why this exists: models build small modules inside forward (transformers' `ACT2FN["gelu"]` makes a
`GELUActivation()` on every access: DeBERTa-v2's pooler, many heads). torch's own parameterless modules
were already made once at translation (modules.fresh_module); a library's or user's class was a graph
break, and the fresh object handed to the resume function recompiled it on every call. Running a user's
`__init__` at translation is exact only when it has no effect outside the new object and reads nothing
that can change, so that is checked, twice:

  * statically, every `__init__` on the class's MRO above nn.Module: it stores attributes only on `self`,
    writes no global, cell or item, imports nothing, deletes nothing, reads no closure cell, and every
    global it names is a module, a class or a function (its reads of those are what any call would do);
  * dynamically, while the constructor runs once: the Python functions the `__init__`s call are those
    `__init__`s and nn.Module's own machinery (module.py, parameter.py, framejit's watch of
    Module.__setattr__, torch.compile's generation-tagging wrapper of Module.__init__), and the C
    functions they call are pure queries (isinstance, hasattr, getattr, len...).

The module must also end up with no parameters, buffers or submodules (modules.fresh_module checks).
"""
import builtins
import os
import sys
import types

import torch

from ....bytecode.shared import decoded

_WRITES = {"STORE_GLOBAL", "DELETE_GLOBAL", "STORE_DEREF", "DELETE_DEREF", "LOAD_DEREF", "LOAD_CLASSDEREF",
           "STORE_SUBSCR", "DELETE_SUBSCR", "DELETE_ATTR", "IMPORT_NAME", "IMPORT_FROM", "YIELD_VALUE",
           "STORE_NAME", "DELETE_NAME", "SETUP_ANNOTATIONS", "PRINT_EXPR"}
_PURE_C_CALLS = {isinstance, issubclass, hasattr, getattr, len, callable, type, tuple, list, dict, int, float,
                 bool, str, min, max, abs}
# nn.Module's own machinery, framejit's wrapper of Module.__setattr__ (guards/module_watch.py, named by
# its file: this room does not import guards/), and torch.compile's wrapper of Module.__init__ (installed
# for the rest of the process once torch.compile runs anything: it calls the real __init__, then tags the
# new module in its own generation table, nothing the program can see; named by its file, never imported)
_MACHINERY_FILES = {torch.nn.modules.module.__file__, torch.nn.parameter.__file__,
                    os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "guards", "module_watch.py"),
                    os.path.join(os.path.dirname(torch.__file__), "_dynamo", "mutation_guard.py")}


def _user_inits(cls):
    """The __init__ functions on cls's MRO above nn.Module, or None if one is not plain Python (or a
    class there defines __new__, __setattr__, __getattr__ of its own)."""
    inits = []
    for klass in cls.__mro__:
        if klass is torch.nn.Module:
            return inits
        for name in ("__new__", "__setattr__", "__getattribute__", "__init_subclass__"):
            if name in klass.__dict__ and name != "__init_subclass__":
                return None
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        if not isinstance(init, types.FunctionType):
            return None
        inits.append(init)
    return None


def _statically_pure(fn):
    names = fn.__globals__
    instructions = decoded(fn.__code__)
    for i, inst in enumerate(instructions):
        if inst.opname in _WRITES:
            return False
        if inst.opname == "STORE_ATTR":
            before = instructions[i - 1] if i else None
            if before is None or before.opname != "LOAD_FAST" or before.argval != fn.__code__.co_varnames[0]:
                return False
        if inst.opname == "LOAD_GLOBAL":
            name = inst.argval if isinstance(inst.argval, str) else inst.argval[1]
            target = names[name] if name in names else getattr(builtins, name, None)
            if not isinstance(target, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
                return False
            if target is print or target is exec or target is eval or target is open or target is setattr:
                return False
    return True


class _ImpureCall(BaseException):
    """Raised by the watch into an untrusted call an __init__ makes, before it runs (BaseException: the
    __init__'s own `except Exception` cannot swallow it)."""


def construct_if_pure(cls, args, kwargs):
    """cls(*args, **kwargs) if the construction is pure (see the module docstring), else None."""
    inits = _user_inits(cls)
    if inits is None or not all(_statically_pure(f) for f in inits):
        return None
    init_codes = {f.__code__ for f in inits}
    impure = []

    def watch(frame, event, arg):
        # raising here stops the untrusted call before its body (or the C function) runs: its effects
        # must not happen at translation either
        if event == "call":               # what the __init__s call themselves (the machinery is trusted)
            code = frame.f_code
            caller = frame.f_back
            if caller is not None and caller.f_code in init_codes and code not in init_codes and \
                    code.co_filename not in _MACHINERY_FILES:
                impure.append(code.co_qualname)
                raise _ImpureCall
        elif event == "c_call" and frame.f_code in init_codes and arg not in _PURE_C_CALLS:
            impure.append(getattr(arg, "__qualname__", repr(arg)))
            raise _ImpureCall

    previous = sys.getprofile()
    with torch.random.fork_rng(devices=[]):
        sys.setprofile(watch)
        try:
            obj = cls(*args, **kwargs)
        except BaseException:             # _ImpureCall, or the constructor raises: the frame says so
            return None
        finally:
            sys.setprofile(previous)
    return None if impure else obj
