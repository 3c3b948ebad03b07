"""Sizes from 0: a dimension automatic dynamic made symbolic serves sizes 0 and 1 too.

Why: torch's ShapeEnv specializes sizes 0 and 1 (a symbol starts at 2), so a batch that shrinks to 1 or
0 is one more entry each: sizes 3, 2, 1, 0 were four conversions. Most of what a graph decides about a
size near 1 does not change its meaning: a contiguity or stride test on a dimension of size 1 (its stride
is never used), a broadcast between two sizes that are the same symbol. torch's kernels ask such
questions through `guard_or_false` / `guard_or_true`, whose answer for an unknown size is the general path;
torch's `backed_size_oblivious` switch makes them answer so for sizes backed by an input too, without a
guard, instead of reading the example's value and guarding on it.

So a dimension learnt by automatic dynamic (runtime/dynamic_misses.py) gets a symbol ranging from 0 (not
0/1 specialized, marked size-like), and each op on fakes runs under that switch (`run_op`). Where the general
path is wrong for the example at hand the op's own check fails on the example's sizes (a broadcast of
size 1 against 3: the general path asserts the two equal): the op then runs again without the switch, so
the ShapeEnv decides on the example's real sizes and records the guard (`Eq(s1, 1)`): the entry splits where
the semantics split. Python decisions on a size (`if x.shape[0] == 1`) always read the example and guard.
The backend's trace of the graph (AOT autograd, inductor) runs under the switch too (`compile_oblivious`).
"""
import contextlib

import torch.fx.experimental._config as shape_config

FROM_ZERO = (0, None)    # the bounds (min, max) policy.py gives a dimension learnt by automatic dynamic


def from_zero(bounds):
    """Do `bounds` ({dim: (min, max)}'s value) let the dimension take sizes 0 and 1 in one symbol?"""
    return bounds[0] is not None and bounds[0] < 2


@contextlib.contextmanager
def size_oblivious():
    """torch's guard_or_false / guard_or_true answer the general path for sizes without a guard."""
    if shape_config.backed_size_oblivious:
        yield
        return
    with shape_config.patch(backed_size_oblivious=True):
        yield


def run_oblivious(run):
    """run() under the switch; if it raises there (the general path does not fit the example's sizes),
    run() again deciding on the example's sizes, so what splits the semantics is guarded."""
    try:
        with size_oblivious():
            return run()
    except Exception:
        pass
    return run()


def compile_oblivious(shapes, compile):
    """compile() (a backend's compile of a graph whose ShapeContext is `shapes`): with sizes from 0, under
    the switch, so the backend's trace (AOT autograd, inductor) decides on them as the conversion did, and
    with the backward lowered now (inductor would lower it lazily, outside the switch, on the first
    backward); if it fails there, again deciding on the example's sizes (the guards it adds are rendered
    after it: convert/graph_entry.py)."""
    if shapes is None or not shapes.oblivious:
        return compile()
    import torch._functorch.config as functorch_config
    try:
        with size_oblivious(), functorch_config.patch(force_non_lazy_backward_lowering=True):
            return compile()
    except Exception:
        pass
    return compile()
