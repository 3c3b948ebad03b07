"""The public entry points: compile(), disable(), reset() (explain() is in tools/explain.py).

`compile(fn)` checks its arguments and returns the runtime's compiled wrapper (runtime/compiled.py): a
plain Python function with fn's signature whose body is the fast path, or for an nn.Module a module
that behaves like the original with a compiled forward.
"""
import dataclasses

import torch

from .config import Config, check_settings
from .runtime import cache
from .runtime.compiled import _DISABLED, _compile, check_compilable
from .torch_compile_args import resolve_backend, settings_for_torch_compile_users


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None, name=None,
            disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None, config=None,
            inplace=False, **config_overrides):
    """Compile a function or nn.Module with framejit; torch.compile's keywords with torch.compile's meaning
    (framejit/torch_compile_args.py), plus framejit's own (config, inplace, Config settings).

        @framejit.compile                      # or framejit.compile(fn), framejit.compile(backend="eager")(fn)
        def f(x, y): ...
        model = framejit.compile(model)         # an nn.Module that behaves like the original (and is it as a key)
        framejit.compile(block, inplace=True)  # the same object, its forward compiled
        model = framejit.compile(ddp_model)    # DDP: the wrapped forward, split at DDP's gradient buckets
        framejit.compile(fn, mode="max-autotune")   # inductor with that mode, as torch.compile
    """
    if model is None and "fn" in config_overrides:        # framejit's older name for the first argument
        model = config_overrides.pop("fn")
    check_settings("framejit.compile", config_overrides,
                   also=("model", "fullgraph", "dynamic", "backend", "mode", "options", "name", "disable",
                         "recompile_limit", "isolate_recompiles", "shapes_spec", "config", "inplace"))
    if not isinstance(disable, bool):
        raise TypeError(f"disable must be a bool, got {type(disable).__name__}")
    if not isinstance(fullgraph, bool):
        raise TypeError(f"fullgraph must be a bool, got {type(fullgraph).__name__}")
    if not isinstance(inplace, bool):
        raise TypeError(f"inplace must be a bool, got {type(inplace).__name__}")
    backend_fn = resolve_backend(backend, mode, options, dynamic)
    if model is not None:
        check_compilable(model, "framejit.compile")
        if inplace and not isinstance(model, torch.nn.Module):
            raise TypeError(f"framejit.compile(..., inplace=True) compiles an nn.Module in place, keeping the object; "
                            f"got {type(model).__name__} (compile functions without inplace)")
    if recompile_limit is not None:
        config_overrides["recompile_limit"] = recompile_limit
    config_overrides = settings_for_torch_compile_users(config_overrides, dynamic, shapes_spec)
    if config is None:
        config = Config.from_env(**config_overrides)
    elif not isinstance(config, Config):
        raise TypeError(f"config must be a framejit.Config, got {type(config).__name__}")
    elif config_overrides:
        config = dataclasses.replace(config, **config_overrides)
    if model is None:
        return lambda f: compile(f, backend=backend_fn, fullgraph=fullgraph, config=config, inplace=inplace,
                                 disable=disable)
    if disable:                       # torch.compile's disable=True: a no-op
        return model
    return _compile(model, backend_fn, fullgraph, config, observer=None, inplace=inplace)


def disable(fn=None):
    """Mark a function never to be compiled: framejit.compile returns it unchanged, and a compiled
    function calling it runs the call as plain Python (a graph break)."""
    if fn is None:
        return disable
    target = getattr(fn, "_framejit_fn", fn)
    if not callable(target):
        raise TypeError(f"framejit.disable expects a function, got {type(fn).__name__}")
    try:
        _DISABLED.add(target)
    except TypeError:
        raise TypeError(f"framejit.disable cannot mark {type(fn).__name__} objects")
    try:
        target._framejit_disabled = True      # the translator reads this: calls to it are not inlined
    except (AttributeError, TypeError):
        pass
    return target


def is_disabled(fn):
    try:
        return fn in _DISABLED
    except TypeError:
        return False


def reset():
    """Clear every compile cache; compiled functions convert again on their next call."""
    cache.reset()
