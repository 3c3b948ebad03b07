"""torch.compile's arguments with torch.compile's meaning, turned into framejit's backend and settings.

A program written for torch.compile should run with `torch.compile` replaced by `framejit.compile` and
nothing else changed. So framejit.compile takes torch.compile's keywords (fullgraph, dynamic, backend,
mode, options, name, disable, recompile_limit, isolate_recompiles, shapes_spec) and answers each:

- backend: framejit's own names first (eager, aot_eager, inductor: held to eager semantics), then any
  name in torch's backend registry (dynamo's `list_backends(None)`: cudagraphs, tvm, openxla, a
  library's registered backend), or any callable torch.compile accepts.
- mode and options go where torch.compile sends them: for inductor, into compile_fx's config patches
  (mode through torch._inductor's own table of modes, options checked against inductor's config, as
  torch.compile checks them); for another backend, as `mode=`/`options=` keywords of its call, which a
  backend taking neither refuses here with a clear error (torch.compile would fail on the first call).
- the default backend: framejit's "eager" (the graphs run as captured: torch.compile's semantics and
  framejit's low overhead, no code generation), or "inductor" when mode or options are given (they only
  mean something to inductor), or the backend the program set as torch.compile's default.
- settings set for torch.compile: dynamo's config.recompile_limit (read here, when the program
  changed it); TORCH_LOGS components framejit has an equivalent for; anything else that cannot be
  honoured gets one warning (`not_honoured`).
"""
import inspect
import warnings

from .backends.registry import BACKENDS, lookup_backend
from . import dynamo_reads

# TORCH_LOGS components framejit answers: graph breaks are warned by default (GraphBreakWarning), and
# recompiles are logged (runtime/compiled.py reads the same variable through dynamo_reads.torch_logs)
HONOURED_LOGS = frozenset({"graph_breaks", "recompiles", "recompiles_verbose"})
_WARNED = set()


def not_honoured(what, why):
    """One warning per setting per process: framejit cannot honour `what` (`why`)."""
    if what in _WARNED:
        return
    _WARNED.add(what)
    warnings.warn(f"framejit.compile: {what} is not honoured: {why}", UserWarning, stacklevel=4)


def resolve_backend(backend, mode, options, dynamic):
    """The backend callable framejit.compile(..., backend=, mode=, options=) compiles graphs with."""
    if mode is not None and options is not None:
        raise RuntimeError("framejit.compile: either mode or options can be given, not both "
                           "(as torch.compile)")
    if mode is not None and not isinstance(mode, str):
        raise TypeError(f"mode must be a string (default, reduce-overhead, max-autotune, "
                        f"max-autotune-no-cudagraphs), got {type(mode).__name__}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict of backend options, got {type(options).__name__}")
    options = dict(options) if options else None
    if options:
        for key, why in (("guard_filter_fn", "framejit makes its own guards and has no filter for them"),
                         ("use_aoti", "framejit compiles in process, not ahead of time (AOTInductor)")):
            if key in options:
                options.pop(key)
                not_honoured(f"options[{key!r}]", why)
    wants_kwargs = (mode is not None and mode != "default") or bool(options)
    if backend is None:
        backend = dynamo_reads.default_backend() or ("inductor" if wants_kwargs else "eager")
    if isinstance(backend, str) and BACKENDS.get(backend) is BACKENDS.get("inductor") and wants_kwargs:
        return InductorWithPatches(inductor_patches(mode, options, dynamic))
    fn = lookup_backend(backend)
    if not wants_kwargs:
        return fn
    kwargs = {"mode": mode} if mode is not None and mode != "default" else {"options": options}
    if not _takes_keywords(fn, kwargs):
        name = backend if isinstance(backend, str) else getattr(backend, "__name__", type(backend).__name__)
        raise TypeError(f"framejit.compile: backend {name!r} takes no {' or '.join(kwargs)} (torch.compile passes "
                        f"mode= and options= to the backend's call, and this one cannot take them); "
                        f"use backend='inductor' for modes and inductor options")
    return BackendWithKeywords(fn, kwargs)


def _takes_keywords(fn, kwargs):
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return True              # C code: let the call say
    params = signature.parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return True
    names = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return set(kwargs) <= names


def inductor_patches(mode, options, dynamic):
    """inductor config patches for torch.compile's mode= or options=, checked as torch.compile checks
    them: a mode through torch._inductor.list_mode_options, options against inductor's config (names
    with '-' or '_', values of the option's type)."""
    patches = {}
    if mode is not None and mode != "default":
        from torch._inductor import list_mode_options
        try:
            patches.update(list_mode_options(mode, dynamic))
        except Exception as e:
            raise RuntimeError(f"framejit.compile: unknown mode {mode!r} ({e})") from None
    if options:
        from torch._inductor import config as inductor_config
        known = inductor_config.get_config_copy()
        for key, value in options.items():
            name = key.replace("-", "_")
            if name not in known:
                import difflib
                close = difflib.get_close_matches(name, known, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise RuntimeError(f"framejit.compile: unexpected inductor option {key!r}{hint}; "
                                   "torch._inductor.list_options() lists them")
            default = known[name]
            if default is not None and not callable(default) and type(default) in (bool, int, float, str) \
                    and not isinstance(value, type(default)) and not (type(default) is float and type(value) is int):
                raise RuntimeError(f"framejit.compile: inductor option {key!r} takes a {type(default).__name__}, "
                                   f"got {type(value).__name__} {value!r}")
            patches[name] = value
    return patches


class InductorWithPatches:
    """framejit's inductor backend with torch.compile's mode/options as compile_fx config patches. Equal
    for equal patches, so compiled functions given the same mode share their cache."""

    def __init__(self, patches):
        self.patches = dict(patches)
        self._key = tuple(sorted((k, repr(v)) for k, v in self.patches.items()))

    def __call__(self, gm, example_inputs):
        return BACKENDS["inductor"](gm, example_inputs, config_patches=self.patches)

    def __eq__(self, other):
        return isinstance(other, InductorWithPatches) and other._key == self._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return f"inductor(config_patches={self.patches!r})"


class BackendWithKeywords:
    """Another backend called as torch.compile calls it: `backend(gm, example_inputs, mode=...)` or
    `options=...`."""

    def __init__(self, fn, kwargs):
        self.fn = fn
        self.kwargs = kwargs
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)

    def __call__(self, gm, example_inputs):
        return self.fn(gm, example_inputs, **self.kwargs)


def settings_for_torch_compile_users(overrides, dynamic, shapes_spec):
    """Config overrides from what the program set for torch.compile (explicit keywords win), and one
    warning for each setting that framejit cannot honour."""
    overrides = dict(overrides)
    if dynamic is not None:
        overrides.setdefault("dynamic", dynamic)
    if "recompile_limit" not in overrides:
        limit = dynamo_reads.recompile_limit()
        if limit is not None:
            overrides["recompile_limit"] = limit
    if shapes_spec is not None:
        not_honoured("shapes_spec", "framejit marks dynamic dimensions with framejit.mark_dynamic "
                                    "(or dynamic=True); the spec is ignored")
    unknown = [c for c in dynamo_reads.torch_logs() if c not in HONOURED_LOGS]
    if unknown:
        not_honoured(f"TORCH_LOGS={','.join(unknown)}",
                     "framejit's equivalents are FRAMEJIT_DEBUG=1 (debug log), framejit.explain(fn) "
                     "(graphs, breaks, guards) and framejit.report('report.html'); graph_breaks and "
                     "recompiles are honoured")
    return overrides
