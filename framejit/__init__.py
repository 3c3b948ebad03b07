"""framejit: a Python-level JIT frontend for PyTorch.

It reads the CPython bytecode of ordinary PyTorch functions and nn.Modules, turns their tensor work
into torch.fx graphs, compiles each graph with a backend and runs it behind guards, with a cache per
code object. What it cannot put in a graph runs as plain Python at a graph break.
"""
from .torch_versions import check_supported as _check_supported
_check_supported()
from .api import compile, disable, reset
from .backends import CompileCounter, register_backend
from .observe.break_warnings import GraphBreakWarning
from .config import Config
from .errors import Unsupported
from .tools.explain import explain
from .convert.hooks import register_bytecode_hook
from .observe.metrics import clear_metrics, compile_times, metrics
from .observe.profiler import CompileProfiler
from .tools.replay import replay
from .tools.report import report
from .persist.commands import cache_info, clear_cache, load_cache, save_cache
from .shapes.marks import mark_dynamic, mark_static, maybe_mark_dynamic
from . import testing
from .testing import AccuracyWarning

__all__ = ["compile", "disable", "reset", "explain", "Unsupported", "register_backend", "CompileCounter",
           "Config", "metrics", "clear_metrics", "compile_times", "register_bytecode_hook", "CompileProfiler",
           "replay", "report", "GraphBreakWarning", "mark_dynamic", "maybe_mark_dynamic", "mark_static",
           "testing", "AccuracyWarning", "cache_info", "clear_cache", "save_cache", "load_cache"]
__version__ = "0.1.0"
