"""Run one program eagerly and compiled, and list every way the two runs differ.

Each side loads the program's source into its own fresh module (so globals, classes and closures are
separate), then makes FUZZ_CALLS calls of `f`, each on `make_inputs(call)`, with the torch and Python
RNGs seeded the same way before each call. After each call it snapshots the arguments, the result,
the globals (G_*, the `aux` module, f's defaults), and records stdout, the exception, the RNG states,
global torch state and warnings; then it runs backward() through the float outputs that need grad and
snapshots the gradients. The compiled side wraps `f` with framejit.compile (the program's backend,
counted). `compare_runs` turns the differences into Mismatch records of one kind each.
"""
import contextlib
import io
import linecache
import random
import re
import sys
import traceback
import types
import warnings
from dataclasses import dataclass, field

import torch

from .snapshot import Snapshot, diff

KINDS = ("crash", "missing_exception", "exception", "output", "aliasing", "arg", "attr", "global", "stdout",
         "grad", "rng", "torch_state", "fallback", "bug_warning", "timeout", "worker_died", "harness")


@dataclass
class Mismatch:
    kind: str
    call: int
    where: str
    detail: str

    def line(self):
        return f"[{self.kind}] call {self.call}: {self.where}: {self.detail}"


@dataclass
class CallRecord:
    state: list = None              # Snapshot.take of args/kwargs/result/globals
    exception: tuple = None         # (qualified type name, message) or None
    traceback: str = ""
    stdout: str = ""
    rng: tuple = ()
    torch_state: tuple = ()
    backward_error: tuple = None
    after_backward: list = None
    warnings: list = field(default_factory=list)


@dataclass
class Outcome:
    mismatches: list
    eager_raised: int = 0           # calls that raised eagerly
    graphs: int = 0                 # graphs the compiled side compiled
    breaks: int = 0                 # graph-break warnings seen


def load(source, module_name):
    """Execute the program's source as a fresh module registered under module_name."""
    filename = f"<{module_name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(module_name)
    module.__file__ = filename
    sys.modules[module_name] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def unload(module_name):
    sys.modules.pop(module_name, None)
    linecache.cache.pop(f"<{module_name}>", None)


def _torch_state():
    return (torch.is_grad_enabled(), str(torch.get_default_dtype()), torch.is_inference_mode_enabled(),
            torch.are_deterministic_algorithms_enabled(), torch.is_autocast_enabled("cpu"),
            str(torch.get_autocast_dtype("cpu")), _autocast_nesting())


def _autocast_nesting():
    """How many autocast blocks are open (above zero after a call: autocast's cast cache is never
    cleared again)."""
    nesting = torch.autocast_increment_nesting() - 1
    torch.autocast_decrement_nesting()
    return nesting


def reset_process_state():
    """What one program may have changed for the next: grad mode, default dtype."""
    torch.set_grad_enabled(True)
    torch.set_default_dtype(torch.float32)


def _globals_of(module):
    names = sorted(n for n in vars(module) if n.startswith("G_"))
    roots = [(f"global {n}", getattr(module, n)) for n in names]
    if hasattr(module, "aux"):
        roots.append(("module aux", module.aux))
    entry = getattr(module.f, "forward", module.f)
    roots.append(("f.__defaults__", getattr(entry, "__defaults__", None)))
    return roots


def _float_outputs(result):
    out, seen, stack = [], set(), [result]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            if obj.requires_grad and obj.is_floating_point():
                out.append(obj)
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
    return out


def run_side(module, compiled):
    """Make every call of one side; -> (list of CallRecord, graph count)."""
    import framejit

    fn = module.f
    counter = None
    if compiled:
        counter = framejit.CompileCounter(module.FUZZ_BACKEND)
        fn = framejit.compile(fn, backend=counter)
    records = []
    for call in range(module.FUZZ_CALLS):
        rec = CallRecord()
        reset_process_state()
        torch.manual_seed(1234 + call)
        random.seed(99 + call)
        args, kwargs = module.make_inputs(call)
        out = io.StringIO()
        result = None
        with contextlib.redirect_stdout(out), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:                 # the exception is part of what is compared
                rec.exception = (type(exc).__qualname__, _without_version_numbers(str(exc)))
                rec.traceback = "".join(traceback.format_exception(exc)[-6:])
        rec.warnings = [(type(w.message).__name__, str(w.message)) for w in caught]
        rec.stdout = out.getvalue()
        rec.rng = (torch.get_rng_state(), random.getstate())
        rec.torch_state = _torch_state()
        roots = [("args", args), ("kwargs", kwargs), ("result", result)] + _globals_of(module)
        rec.state = Snapshot().take(roots)
        reset_process_state()
        outputs = _float_outputs(result)
        if outputs and rec.exception is None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sum(t.sum() for t in outputs).backward()
            except Exception as exc:
                rec.backward_error = (type(exc).__qualname__, _without_version_numbers(str(exc)))
            rec.after_backward = Snapshot().take(roots)
        records.append(rec)
    return records, (counter.frame_count if counter else 0)


# Autograd's saved-value check names the tensor's version counter ("is at version 6; expected version 5").
# A graph bumps the counter once per in-place write it makes, which a functionalized graph does in fewer
# steps than eager's ops (torch.compile's counts differ too): the error, its type and where it is raised
# are compared; the counter's values are not.
_VERSIONS = re.compile(r"is at version \d+; expected version \d+")
_OUTPUT_OF = re.compile(r", which is output \d+ of \w+,")


def _without_version_numbers(message):
    """An autograd error's text without what depends on how many ops ran and which autograd nodes hold
    the tensor (a compiled graph is one node: eager names "output 0 of Relu" where it names none)."""
    return _OUTPUT_OF.sub("", _VERSIONS.sub("is at version N; expected version M", message))


def _kind_of(root, path, identity):
    if ".grad" in path:
        return "grad"
    if root in ("result",):
        return "aliasing" if identity else "output"
    if root in ("args", "kwargs"):
        if identity:
            return "aliasing"
        return "attr" if "." in path[len(root):] else "arg"
    return "global"


def compare_runs(eager, compiled):
    """Mismatches between the eager and compiled CallRecords, call by call."""
    found = []
    for call, (e, c) in enumerate(zip(eager, compiled)):
        def add(kind, where, detail):
            found.append(Mismatch(kind, call, where, detail))

        if e.exception is None and c.exception is not None:
            add("crash", "exception", f"compiled raised {c.exception[0]}: {c.exception[1][:300]}\n{c.traceback}")
        elif e.exception is not None and c.exception is None:
            add("missing_exception", "exception", f"eager raised {e.exception[0]}: {e.exception[1][:300]}")
        elif e.exception != c.exception:
            add("exception", "exception", f"{e.exception} (eager) != {c.exception} (compiled)\n{c.traceback}")
        for (root, a), (_, b) in zip(e.state, c.state):
            if root == "result" and (e.exception or c.exception):
                continue
            for path, message, identity in diff(a, b, root):
                add(_kind_of(root, path, identity), path, message)
        if e.stdout != c.stdout:
            add("stdout", "stdout", f"{e.stdout[-400:]!r} (eager) != {c.stdout[-400:]!r} (compiled)")
        if not torch.equal(e.rng[0], c.rng[0]):
            add("rng", "torch RNG", "the torch RNG state after the call differs")
        if e.rng[1] != c.rng[1]:
            add("rng", "random RNG", "Python's random state after the call differs")
        if e.torch_state != c.torch_state:
            add("torch_state", "torch state", f"{e.torch_state} (eager) != {c.torch_state} (compiled)")
        if e.backward_error != c.backward_error:
            add("grad", "backward()", f"{e.backward_error} (eager) != {c.backward_error} (compiled)")
        # After a backward that raised the same error on both sides, which leaves had their gradients
        # accumulated before the error is the autograd engine's order over the nodes it had reached; a
        # compiled graph is one node, so its partial state is not eager's (not promised: README's
        # "Differential fuzzing"). Gradients are compared only after a backward that finished.
        if e.backward_error is not None and e.backward_error == c.backward_error:
            pass
        elif e.after_backward is not None and c.after_backward is not None:
            for (root, a), (_, b) in zip(e.after_backward, c.after_backward):
                if root == "result":
                    continue
                for path, message, identity in diff(a, b, root):
                    if ".grad" in path:
                        add("grad", path, "after backward(): " + message)
        elif (e.after_backward is None) != (c.after_backward is None):
            add("grad", "backward()", "only one side had outputs that need grad")
        for category, message in c.warnings:
            if category == "GlobalStateChanged" or "framejit bug" in message:
                add("bug_warning", category, message[:400])
            elif "framejit failed" in message:
                add("fallback", category, message[:400])
    return _dedupe(found)


def _dedupe(found):
    """One mismatch per (kind, where) across calls: the first."""
    seen, out = set(), []
    for m in found:
        if (m.kind, m.where) not in seen:
            seen.add((m.kind, m.where))
            out.append(m)
    return out


def run_source(source, name="prog"):
    """Run one program's source on both sides and compare: -> Outcome."""
    import framejit

    framejit.reset()
    eager_name, compiled_name = f"fuzz_{name}_eager", f"fuzz_{name}_compiled"
    try:
        eager_module = load(source, eager_name)
        eager, _ = run_side(eager_module, compiled=False)
        compiled_module = load(source, compiled_name)
        compiled, graphs = run_side(compiled_module, compiled=True)
    finally:
        unload(eager_name)
        unload(compiled_name)
        reset_process_state()
        framejit.reset()
    outcome = Outcome(compare_runs(eager, compiled))
    outcome.eager_raised = sum(1 for r in eager if r.exception)
    outcome.graphs = graphs
    outcome.breaks = sum(1 for r in compiled for cat, _ in r.warnings if cat == "GraphBreakWarning")
    return outcome


def run_seed(seed):
    from .generator import generate

    return run_source(generate(seed).source, name=str(seed))
