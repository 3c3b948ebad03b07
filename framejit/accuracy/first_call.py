"""The accuracy mode: each new graph's first call is checked against the graph's own fx code.

With `Config.check_accuracy` (framejit.compile(..., check_accuracy=True), or FRAMEJIT_CHECK_ACCURACY=1),
convert/ hands every compiled graph to `checked_graph`, which returns a callable that, on its first call
only: clones the inputs, runs the fx GraphModule as it is (torch's own kernels, op by op) on the clones
with the RNG preserved, then runs the compiled graph on the real inputs, and compares outputs and the
inputs the graph wrote (`compare.first_difference`). Where they differ it warns with an AccuracyWarning
naming the graph and the first differing output, shrinks the graph to its smallest failing subgraph
(`minify.py`) and writes a record (`accuracy_record.py`). The compiled result is what the call returns
either way: the mode reports, it does not change what runs. Later calls go straight to the compiled graph
(one Python call more than without the mode); without the mode nothing of this runs or is even imported
on the per-call path.
"""
from __future__ import annotations

import itertools
import warnings

import torch

from .accuracy_record import write_accuracy_record
from .compare import first_difference
from .inputs import clone_inputs, preserve_rng_state
from .minify import minify

_SEQUENCE = itertools.count(1)


class AccuracyWarning(UserWarning):
    """A compiled graph's answer differs from its fx code's. Attributes: graph (its name), difference
    (the first differing output or input, in words), record (the record directory or None), minified
    (minify.MinifiedGraph or None)."""

    def __init__(self, message, graph, difference, record, minified):
        super().__init__(message)
        self.graph = graph
        self.difference = difference
        self.record = record
        self.minified = minified


def checked_graph(compiled, gm, backend, *, name, debug_dir, minify_graph=True):
    """A callable that runs `compiled`, checking its first call against `gm` (see the module docstring).
    `backend(gm, example_inputs)` compiles subgraphs for the minifier."""
    return _FirstCallCheck(compiled, gm, backend, f"{name} (graph {next(_SEQUENCE)})", debug_dir, minify_graph)


class _FirstCallCheck:
    def __init__(self, compiled, gm, backend, name, debug_dir, minify_graph):
        self.compiled = compiled
        self.gm = gm
        self.backend = backend
        self.name = name
        self.debug_dir = debug_dir
        self.minify_graph = minify_graph
        self.pending = True

    def __call__(self, *args):
        if not self.pending:
            return self.compiled(*args)
        self.pending = False
        return self._check(args)

    def _check(self, args):
        pristine = clone_inputs(list(args))
        reference = clone_inputs(list(args))
        expected, expected_error = _run_reference(self.gm, reference)
        try:
            actual = self.compiled(*args)
        except Exception as e:
            if expected_error is None:
                self._report(f"the compiled graph raised {type(e).__name__}: {e}, its fx code returned", pristine)
            raise
        if expected_error is not None:
            self._report(f"its fx code raised {type(expected_error).__name__}: {expected_error}, the compiled "
                         f"graph returned", pristine)
            return actual
        difference = first_difference(list(expected), list(actual), path="output") \
            or _written_inputs_difference(reference, args)
        if difference is not None:
            self._report(difference, pristine)
        return actual

    def _report(self, difference, pristine):
        found = None
        if self.minify_graph:
            try:
                found = minify(self.gm, pristine, self.backend)
            except Exception as e:           # the report matters more than the search
                difference += f" (the minifier failed: {type(e).__name__}: {e})"
        message = f"framejit accuracy check: {self.name} differs from eager: {difference}"
        if found is not None:
            message += "\nsmallest failing subgraph: " + found.describe()
        record = write_accuracy_record(self.debug_dir, self.name, message, self.gm, pristine, found)
        if record is not None:
            message += f"\nrecord: {record}"
        warnings.warn(AccuracyWarning(message, self.name, difference, record, found), stacklevel=3)


def _run_reference(gm, inputs):
    """(gm's outputs on `inputs`, None) or (None, the exception), leaving grad mode and the RNG as found
    (so the compiled run that follows draws the same numbers)."""
    grad_mode = torch.is_grad_enabled()
    try:
        with preserve_rng_state():
            return gm(*inputs), None
    except Exception as e:
        return None, e
    finally:
        torch._C._set_grad_enabled(grad_mode)


def _written_inputs_difference(reference, args):
    for i, (expected, actual) in enumerate(zip(reference, args)):
        if isinstance(actual, torch.Tensor):
            found = first_difference(expected, actual, path=f"input {i} (written by the graph)")
            if found is not None:
                return found
    return None
