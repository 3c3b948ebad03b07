"""Accuracy tools for users, as dynamo's testing and utils modules offer them for torch.compile.

    framejit.testing.same(expected, actual)          # True when equal up to the dtype's tolerance
    framejit.testing.first_difference(expected, actual)   # None, or "[1]['logits']: ... expected ..."
    framejit.testing.clone_inputs(args)              # fresh copies: strides, aliasing, requires_grad kept
    with framejit.testing.preserve_rng_state(): ...   # the RNG is as it was after the block
    framejit.testing.minify(gm, inputs, backend)     # smallest subgraph whose compiled answer differs

The accuracy mode that uses them on every new graph is `framejit.compile(fn, check_accuracy=True)` (or
FRAMEJIT_CHECK_ACCURACY=1); its findings are `AccuracyWarning`s. The code lives in framejit/accuracy/.
"""
from .accuracy.compare import first_difference, same, tolerance
from .accuracy.first_call import AccuracyWarning
from .accuracy.inputs import clone_inputs, preserve_rng_state
from .accuracy.minify import MinifiedGraph, minify

__all__ = ["same", "first_difference", "tolerance", "clone_inputs", "preserve_rng_state", "minify",
           "MinifiedGraph", "AccuracyWarning"]
