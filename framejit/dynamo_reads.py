"""Everything framejit reads of torch._dynamo, in one place: what users and libraries set for torch.compile.

framejit never uses torch._dynamo to capture or compile. But a program written for torch.compile sets
things there that framejit should honour: backends registered by name (`torch._dynamo.list_backends()`,
`register_backend`), `torch._dynamo.config.recompile_limit` (alias `cache_size_limit`),
`torch.compiler.set_stance(...)`, and torch's own functions marked for its compiler (the
`torch._disable_dynamo` wrapper, the eval_frame wrapper its compiler puts around optimizers'
`_init_group`). This module only reads: it imports torch._dynamo only to look a backend name up in its
registry (the registry lives there), and reads settings only when the program itself has imported
torch._dynamo (a setting nobody made is the default). A leaf: it imports nothing of framejit.
"""
import os
import sys

import torch

DYNAMO_MODULE = _DYNAMO = "torch." + "_dynamo"     # (its name; sys.modules keys are read with it)


# ---- torch's own functions marked for its compiler ----------------------------------------------

def _probe():
    return None


# the one code object of every function torch wraps with torch._disable_dynamo (making it imports nothing)
DISABLE_WRAPPER_CODE = torch._disable_dynamo(_probe).__code__


def is_eval_frame_wrapper(code):
    """Is `code` the wrapper torch's compiler puts around a function it must not compile (eval_frame.py)?"""
    return code.co_filename.replace("\\", "/").endswith("/_dynamo/eval_frame.py")


# ---- the backend registry -------------------------------------------------------------------------

# registry backends that need a package torch does not bring: asked for without it, a clear error now
# instead of a failed conversion on the first call
_NEEDS = {"tvm": "tvm", "openxla": "torch_xla", "openxla_eval": "torch_xla", "onnxrt": "onnxruntime",
          "tensorrt": "torch_tensorrt", "torch_tensorrt": "torch_tensorrt", "ipex": "intel_extension_for_pytorch"}


def registry_backend(name):
    """The compiler function torch.compile would use for backend=name, or None when torch's registry has no
    such name. Importing the registry imports torch._dynamo (not its compiler: nothing is traced)."""
    import importlib
    import importlib.util
    package = _NEEDS.get(name)
    if package is not None and importlib.util.find_spec(package) is None:
        raise RuntimeError(f"backend {name!r} (torch's backend registry) needs the {package!r} package, which "
                           "is not installed here")
    registry = importlib.import_module(_DYNAMO + ".backends.registry")
    try:
        return registry.lookup_backend(name)
    except Exception:          # InvalidBackend: not registered (nor found by entry points)
        return None


def registry_names():
    import importlib
    try:
        return sorted(importlib.import_module(_DYNAMO + ".backends.registry").list_backends(None))
    except Exception:
        return []


def default_backend():
    """torch.compile's default backend when the program changed it (torch._dynamo's set_default_backend),
    else None. Read only when the program imported that registry."""
    registry = sys.modules.get(_DYNAMO + ".backends.registry")
    getter = getattr(registry, "get_default_backend", None)
    if getter is None:
        return None
    backend = getter()
    return None if backend == "inductor" else backend


# ---- settings ------------------------------------------------------------------------------------

def recompile_limit():
    """torch._dynamo.config.recompile_limit (alias cache_size_limit) when the program changed it from its
    default, else None."""
    config = sys.modules.get(_DYNAMO + ".config")
    if config is None:
        return None
    for name in ("recompile_limit", "cache_size_limit"):
        try:
            value = getattr(config, name)
        except AttributeError:
            continue
        is_default = getattr(config, "_is_default", None)
        try:
            changed = not is_default(name) if is_default is not None else value != 8
        except Exception:
            changed = value != 8
        return value if changed and isinstance(value, int) and value >= 1 else None
    return None


def stance():
    """The name torch.compiler.set_stance last set ("default" unless the program set one)."""
    eval_frame = sys.modules.get(_DYNAMO + ".eval_frame")
    current = getattr(eval_frame, "_stance", None)
    return getattr(current, "stance", "default") if current is not None else "default"


def torch_logs():
    """The components named in $TORCH_LOGS (`+dynamo,graph_breaks,recompiles`), without +/- prefixes."""
    raw = os.environ.get("TORCH_LOGS", "")
    return [part.strip().lstrip("+-") for part in raw.split(",") if part.strip().lstrip("+-")]


def is_compiler_disabled(fn) -> bool:
    """Did torch.compiler.disable (or torch._dynamo.disable) make `fn`?"""
    try:
        return getattr(fn, "_torchdynamo_disable", False) is True
    except Exception:          # an object whose attribute lookup raises is no such wrapper
        return False
