"""Reads of process state are constants of a capture, guarded by their value.

Why this exists: library code asks the process about itself on the hot path -- transformers'
`use_gqa_in_sdpa` reads `os.environ.get("TRANSFORMERS_SDPA_FORCE_GQA", "0")` in every attention layer,
wav2vec2 asks `is_torch_distributed_available()`, modules ask `torch.distributed.is_initialized()` or
`torch.fx._symbolic_trace.is_fx_tracing()`. None of these is a tensor computation: the answer is read
now, at translation, and the entry is guarded by it, so the graph stays whole and a change between calls
(a test setting an environment variable, a process group initialized later) is a cache miss, not a stale
answer. Three kinds:

  * environment reads (`os.environ[k]`, `.get`, `in`, `os.getenv`): guarded by the raw value the
    environment's own dict holds for that key (`os.environ._data.get(b'KEY')`: one dict lookup per call);
  * queries whose answer can change while the process runs (`sys.getrecursionlimit()`,
    `torch.distributed.is_initialized()`, `is_fx_tracing()`, `torch.autograd._is_checkpoint_valid()`):
    guarded by value as other global state (a STATE_MATCH guard);
  * answers fixed for the life of the process (`os.cpu_count()`, `sys.getdefaultencoding()`,
    `platform.python_version()`, `torch.distributed.is_available()`, and functions a library marks as
    compile-time constants with `_dynamo_marked_constant`, the marker torch's `assume_constant_result`
    sets, as transformers' `is_*_available()` helpers are, also behind their `lru_cache`): no guard.

Writing the environment (`os.environ[k] = v`, `putenv`, `setdefault` of a missing key) stays a graph
break at the write: it runs for real, and whatever the frame reads after it is translated after it.
"""
import functools
import os
import platform
import sys
from dataclasses import dataclass

import torch

from ...errors import GraphBreak
from ...torch_versions import fx_tracing_flag_reader
from ..source import Source, fixed_source
from ..values.base import Const, ObjectValue
from .builtins_table import LOOKASIDES, as_python
from ..values.protocol import wrap_unsourced


@dataclass(frozen=True)
class EnvironSource(Source):
    """The raw value an `os._Environ`'s dict holds for one key, or None: `<data>.get(<encoded key>)`."""
    data: Source
    key: object
    label: str

    def expr(self):
        return f"{self.data.expr()}.get({self.key!r})"

    def name(self):
        return f"os.environ.get({self.label!r})"


def _environ_value(tx, env, key):
    """The decoded value of `key` in environment mapping `env` (an os._Environ), or None; guarded."""
    if not isinstance(key, str if env is not getattr(os, "environb", None) else bytes):
        raise GraphBreak("call", f"environment lookup with a key of type {type(key).__name__}")
    data_key = env.encodekey(key)
    raw = env._data.get(data_key)
    source = EnvironSource(fixed_source(env._data, "os.environ"), data_key, key)
    tx.ctx.guards.add("CONST_MATCH", source, raw)
    return None if raw is None else env.decodevalue(raw)


def _environ_arg(args):
    if not args or not isinstance(args[0], ObjectValue) or not isinstance(args[0].obj, os._Environ):
        raise GraphBreak("call", "environment lookup on a value framejit does not model")
    return args[0].obj


def _environ_getitem(tx, args, kwargs):
    env = _environ_arg(args)
    key = as_python(args[1])
    value = _environ_value(tx, env, key)
    if value is None:
        raise GraphBreak("key error", f"KeyError: {key!r}")
    return Const(value)


def _getenv(tx, args, kwargs):
    key = as_python(args[0] if args else kwargs["key"])
    default = args[1] if len(args) > 1 else kwargs.get("default", Const(None))
    value = _environ_value(tx, os.environ, key)
    return default if value is None else Const(value)


# `os.environ.get(k)` and `k in os.environ` are collections.abc.Mapping's, which look the key up through
# `__getitem__`: builtin_methods.py's Mapping lookasides reach this one.
LOOKASIDES[os._Environ.__getitem__] = _environ_getitem
LOOKASIDES[os.getenv] = _getenv


# ---- queries: answered now; guarded by value where the answer can change --------------------------

def _changing_queries():
    """query -> the zero-argument function whose value guards its answer (itself, unless calling it per
    call would do more than read: is_fx_tracing also logs a warning, so its flag is read instead)."""
    out = {sys.getrecursionlimit: sys.getrecursionlimit}
    if hasattr(torch.autograd, "_is_checkpoint_valid"):
        out[torch.autograd._is_checkpoint_valid] = torch.autograd._is_checkpoint_valid
    import torch.distributed as dist
    if dist.is_available():
        out[dist.is_initialized] = dist.is_initialized
    try:
        import torch.fx._symbolic_trace as symbolic_trace
        read_flag = fx_tracing_flag_reader()        # where the flag lives differs by torch release
        if read_flag is not None:
            out[symbolic_trace.is_fx_tracing] = read_flag
    except ImportError:
        pass
    return out


CHANGING_QUERIES = _changing_queries()
PROCESS_CONSTANTS = {os.cpu_count, sys.getdefaultencoding, sys.getfilesystemencoding, platform.python_version,
                     platform.python_implementation, platform.python_version_tuple, platform.system,
                     platform.machine, platform.release, platform.processor, platform.node,
                     torch.distributed.is_available}


def _answer_changing(query, guard_fn):
    def impl(tx, args, kwargs):
        if args or kwargs:
            raise GraphBreak("call", f"{query.__name__} with arguments")
        answer = query()
        tx.ctx.guards.add("STATE_MATCH", None, (guard_fn, guard_fn()))
        return wrap_unsourced(answer)
    return impl


def _answer_constant(fn):
    def impl(tx, args, kwargs):
        real_args = [as_python(a) for a in args]
        real_kwargs = {k: as_python(v) for k, v in kwargs.items()}
        try:
            answer = fn(*real_args, **real_kwargs)
        except Exception as e:
            raise GraphBreak("constant call raised", f"{getattr(fn, '__name__', fn)} raised {type(e).__name__}: {e}")
        value = wrap_unsourced(answer)
        if isinstance(value, ObjectValue):
            raise GraphBreak("call", f"{getattr(fn, '__name__', fn)} answered a {type(answer).__name__}, not a constant")
        return value
    return impl


for _query, _guard_fn in CHANGING_QUERIES.items():
    LOOKASIDES[_query] = _answer_changing(_query, _guard_fn)
for _fn in PROCESS_CONSTANTS:
    LOOKASIDES[_fn] = _answer_constant(_fn)


def is_marked_constant(fn):
    """A function its library marked as a compile-time constant (torch's assume_constant_result marker),
    directly or behind functools.lru_cache/cache."""
    if isinstance(fn, functools._lru_cache_wrapper):
        fn = getattr(fn, "__wrapped__", None)
    return getattr(fn, "_dynamo_marked_constant", False) is True


def process_lookaside(fn):
    """The stand-in for calling `fn` when it is a marked constant (found by its marker, not a table,
    since libraries mark their own helpers), else None."""
    try:
        if not is_marked_constant(fn):
            return None
    except Exception:
        return None
    return _answer_constant(fn)
