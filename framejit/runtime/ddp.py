"""`framejit.compile(ddp_model)`: DistributedDataParallel with the wrapped module's forward compiled.

DDP's own forward is bookkeeping around one call of the wrapped module (`_pre_forward`: the reducer's
per-iteration state and buffer broadcast; `_post_forward`: hooks that find unused parameters), none of
which is tensor work for a graph. So it stays plain Python, and only the wrapped module's call goes
through framejit: the returned module is a DDP of a generated subclass sharing the original's __dict__
(same reducer, same parameters, same process group) whose `_run_ddp_forward` calls a compiled copy of
the wrapped module (framejit.compile(ddp.module), same __dict__ again), compiled with a backend that cuts
each graph at DDP's gradient buckets (distributed/ddp_split.py). The original DDP and its module are
left as they were.
"""
import weakref

import torch

from ..distributed.ddp_buckets import ddp_buckets
from ..distributed.ddp_split import BucketSplitBackend


def is_ddp(module):
    parallel = getattr(torch.nn, "parallel", None)
    ddp_class = getattr(parallel, "DistributedDataParallel", None)
    return ddp_class is not None and isinstance(module, ddp_class)


def compile_ddp(ddp, backend_fn, fullgraph, config, observer, compile_module):
    cls = type(ddp)
    if getattr(cls, "_framejit_compiled", False):
        ddp = cls._framejit_original
        cls = type(ddp)
    ddp_ref = weakref.ref(ddp)
    split = BucketSplitBackend(backend_fn, lambda: ddp_buckets(ddp_ref()))
    inner = compile_module(ddp.module, split, fullgraph, config, observer)

    def _run_ddp_forward(self, *inputs, **kwargs):
        # DDP's own _run_ddp_forward, calling the compiled module instead of self.module
        if getattr(self, "_use_python_reducer", False):
            return inner(*inputs, **kwargs)
        with self._inside_ddp_forward():
            return inner(*inputs, **kwargs)

    sub = type(cls.__name__, (cls,), {
        "_run_ddp_forward": _run_ddp_forward, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
        "_framejit_compiled": True, "_framejit_original": ddp, "__doc__": cls.__doc__,
        "_framejit_inner": inner,
    })
    new = object.__new__(sub)
    object.__setattr__(new, "__dict__", ddp.__dict__)
    release = weakref.finalize(new, _release, sub)
    release.atexit = False
    return new


def _release(sub):
    for name in ("_run_ddp_forward", "_framejit_original", "_framejit_inner"):
        try:
            delattr(sub, name)
        except AttributeError:
            pass
