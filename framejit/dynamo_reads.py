"""Everything framejit reads of torch._dynamo, in one place: what users and libraries set for torch.compile.

framejit never uses torch._dynamo to capture or compile. But a program written for torch.compile sets
things there that framejit should honour: backends registered by name (`torch._dynamo.list_backends()`,
`register_backend`), `torch._dynamo.config.recompile_limit` (alias `cache_size_limit`),
`torch.compiler.set_stance(...)`, and torch's own functions marked for its compiler (the
`torch._disable_dynamo` wrapper, the eval_frame wrapper its compiler puts around optimizers'
`_init_group`). This module only reads: it imports torch._dynamo only to look a backend name up in its
registry (the registry lives there), and reads settings only when the program itself has imported
torch._dynamo (a setting nobody made is the default). A leaf: it imports nothing of framejit.

One exception, which only takes something away from one thread: `generator_kept_in` makes
`torch._dynamo.utils.preserve_rng_state` (around every inductor compile) a no-op in framejit's compile worker
thread (backends/compile_behind.py), where its put-back would rewind the program's own random draws.
"""
import contextlib
import os
import sys
import threading

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
    return getattr(getattr(STANCE_HOME[0], STANCE_GLOBAL), "stance", "default")


def stance_object():
    """torch's current stance object (its `stance`, `backend` from force_backend=, `skip_guard_eval_unsafe`),
    or None before the program imported torch._dynamo (nobody can have set one)."""
    return getattr(STANCE_HOME[0], STANCE_GLOBAL)


# ---- watching the stance without a per-call lookup ------------------------------------------------
# torch.compiler.set_stance(...) rebinds one module global, `_stance` of torch._dynamo.eval_frame, to a
# new stance object (and back to the prior object when its context or decorator exits). So "did the
# stance change since I last looked?" is one identity test of that global against the object last
# seen: STANCE_HOME[0] is that module once the program imported it, and until then a stand-in whose
# `_stance` is None (no stance can be set before the module exists). framejit learns of the import from
# an import-system observer (a sys.meta_path finder that finds nothing itself and only notes, after the
# module ran, that it exists): nothing of torch is changed and nothing is polled on the per-call path.

EVAL_FRAME = _DYNAMO + ".eval_frame"


class _NoStanceYet:
    """torch._dynamo.eval_frame's stand-in before the program imports it: no stance set."""
    _stance = None


STANCE_HOME = [sys.modules.get(EVAL_FRAME) or _NoStanceYet]
# the module global torch.compiler.set_stance rebinds (the dispatchers read it as `home.<STANCE_GLOBAL>`)
STANCE_GLOBAL = "_stance"
# called with the module once the observer saw it imported (the runtime puts it in its dispatchers' globals:
# a module attribute read from a global is the cheapest test there is, a list item in between costs 20 ns)
STANCE_HOME_MOVED = []


def _note_eval_frame(module):
    STANCE_HOME[0] = module
    for listener in STANCE_HOME_MOVED:
        listener(module)


class _NotingLoader:
    """The real loader of torch._dynamo.eval_frame, which also points STANCE_HOME at the module once it ran."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        if hasattr(module, "_stance"):
            _note_eval_frame(module)

    def __getattr__(self, name):           # get_code, get_source, is_package... as the real loader
        return getattr(self.loader, name)


class EvalFrameImportWatch:
    """A sys.meta_path observer: for torch._dynamo.eval_frame it asks the other finders for the module's
    spec and hands it back with a loader that notes the import; every other name it leaves alone."""

    def find_spec(self, name, path=None, target=None):
        if name != EVAL_FRAME:
            return None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _NotingLoader(spec.loader)
                return spec
        return None


def watch_eval_frame_import():
    """Install the observer unless the module is already there (then STANCE_HOME holds it)."""
    module = sys.modules.get(EVAL_FRAME)
    if module is not None and hasattr(module, "_stance"):
        STANCE_HOME[0] = module
    elif not any(isinstance(f, EvalFrameImportWatch) for f in sys.meta_path):
        sys.meta_path.insert(0, EvalFrameImportWatch())


watch_eval_frame_import()


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


# ---- inductor's generator put-back, on framejit's compile worker --------------------------------

def generator_kept_in(thread_name):
    """Inductor compiles inside `torch._dynamo.utils.preserve_rng_state()`: it takes the global generator's
    state at the start and puts it back at the end. In the thread named `thread_name` (the compile worker)
    that put-back would rewind every random number the program drew meanwhile, so there the context does
    nothing; every other thread gets torch's. Inductor's CPU compile draws nothing itself without autotuning
    (checked on GPT-2, eval and train), and autotuning graphs are not compiled on the worker. Installed once,
    in torch's utilities and in every torch module that imported the name from them."""
    import torch._dynamo.utils as utils
    original = utils.preserve_rng_state
    if getattr(original, "framejit_worker_aware", False):
        return

    @contextlib.contextmanager
    def preserve_rng_state():
        if threading.current_thread().name == thread_name:
            yield
        else:
            with original():
                yield
    preserve_rng_state.framejit_worker_aware = True
    utils.preserve_rng_state = preserve_rng_state
    # modules that bound the name at their import (`from torch._dynamo.utils import preserve_rng_state`:
    # AOT autograd, around every inductor compile) keep the original: each is rebound too; a module imported
    # from now on binds the thread-aware one
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("torch.") and \
                getattr(module, "preserve_rng_state", None) is original:
            module.preserve_rng_state = preserve_rng_state
