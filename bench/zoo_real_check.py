"""Check every bench/zoo_real.py entry the ways users call it: framejit vs eager vs torch.compile.

Why this exists: issue 13 asks of each real-checkpoint entry that framejit (1) matches eager on every
tensor of the output, caches included, and on every parameter's gradient in train mode, (2) captures
in as few graphs as torch.compile(backend="eager"), and (3) does not convert again on a second call
with new inputs of the same shapes. For each entry and each call of bench/real_calls.py this runs the
eager model, framejit's compiled model and torch.compile's on fresh seeded copies, and reports:

  match       framejit's output (and grads) equal eager's, on the first and the second call
  fj g/b      framejit's graphs / graph breaks over the first call (frames that run as plain Python
              are counted as breaks' consequences and listed as causes)
  tc g/b      torch.compile's graphs / graph breaks over the same call
  fj re, tc re conversions (graphs for torch.compile) made by the second call, new inputs same shapes
  causes      framejit's root break reasons: the innermost reason of each break, with its function

Usage: .venv/bin/python bench/zoo_real_check.py [--no-tc] [--json PATH] [model ...]
This is bench/ code: it alone (with comparing tests) may call torch.compile.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import framejit  # noqa: E402
from bench import real_calls, zoo_real  # noqa: E402
from framejit.backends import lookup_backend  # noqa: E402
from framejit.config import Config  # noqa: E402
from framejit.runtime.cache import all_states  # noqa: E402
from framejit.runtime.compiled import _compile  # noqa: E402


@dataclass
class Conversions:
    """What framejit's conversions produced, accumulated by its observer hook."""
    graphs: int = 0
    breaks: int = 0
    conversions: int = 0
    eager_frames: list = field(default_factory=list)
    causes: list = field(default_factory=list)
    recompile_reasons: list = field(default_factory=list)

    def snapshot(self):
        return (self.graphs, self.breaks, self.conversions, len(self.eager_frames), len(self.causes))


_INNER = re.compile(r'graph break inside \((.*), File "([^"]+)", line (\d+), in ([\w<>.]+)\)')
_WHERE = re.compile(r'File "([^"]+)", line (\d+), in ([\w<>.]+)')


def root_cause(reason: str, where: str | None) -> str:
    """The innermost reason of a break, with the function it happened in: a break at a call because
    the callee breaks names the callee's own reason and line (observe/break_warnings)."""
    while True:
        match = _INNER.search(reason)
        if not match:
            break
        reason, where = match.group(1), f'File "{match.group(2)}", line {match.group(3)}, in {match.group(4)}'
    reason = reason.split("; it is called through")[0].split("; the break is inside")[0]
    located = _WHERE.search(where or "")
    if located:
        return f"{reason} [{Path(located.group(1)).name}:{located.group(2)} {located.group(3)}]"
    return reason


def framejit_compiled(model):
    """framejit.compile(model), with an observer counting graphs, breaks and conversions."""
    record = Conversions()

    def observer(fn, result, seconds):
        record.conversions += 1
        record.breaks += len(result.breaks)
        for b in result.breaks:
            record.causes.append(root_cause(b.reason, b.where))
        if result.graph is not None:
            record.graphs += 1
        for code, state in all_states():     # the miss path keeps the failing guard in words
            if code is fn.__code__ and state.recompile_reasons:
                record.recompile_reasons.append(state.recompile_reasons[-1])
        if result.kind != "entry" and result.reason:
            record.eager_frames.append(f"{fn.__qualname__}: {root_cause(result.reason, None)}")
    compiled = _compile(model, lookup_backend("eager"), False, Config.from_env(), observer)
    return compiled, record


class TorchCompileCounter:
    """torch.compile(backend=self): counts graphs; breaks come from dynamo's counters."""

    def __init__(self):
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return gm.forward

    @staticmethod
    def breaks():
        from torch._dynamo.utils import counters
        return sum(counters["graph_break"].values())


def torch_compiled(model, for_generate):
    """torch.compile as users apply it: the module, or its forward for generate()."""
    import torch._dynamo
    torch._dynamo.reset()
    from torch._dynamo.utils import counters
    counters.clear()
    counter = TorchCompileCounter()
    if for_generate:
        model.forward = torch.compile(model.forward, backend=counter)
        return model, counter
    return torch.compile(model, backend=counter), counter


@dataclass
class Result:
    model: str
    scenario: str
    match: bool = True
    problems: list = field(default_factory=list)
    fj_graphs: int = 0
    fj_breaks: int = 0
    fj_recompiles: int = 0
    fj_eager_frames: list = field(default_factory=list)
    causes: list = field(default_factory=list)
    recompile_reasons: list = field(default_factory=list)
    tc_graphs: int | None = None
    tc_breaks: int | None = None
    tc_recompiles: int | None = None
    error: str | None = None
    seconds: float = 0.0


def _run(call, model, entry, seed, scenario):
    if scenario == "train":
        base = getattr(model, "_framejit_original", None) or getattr(model, "_orig_mod", None) or model
        return call(model, entry, seed, list(base.named_parameters()))
    return call(model, entry, seed)


_CALLS = {"eval": real_calls.eval_call, "train": real_calls.train_call, "decode": real_calls.decode_call,
          "generate": real_calls.generate_call}


def fresh_model(entry, scenario):
    model = entry.build()
    return model.train() if scenario == "train" else model


def check(entry, scenario: str, with_tc: bool = True) -> Result:
    """One entry, one call: eager, framejit and torch.compile on fresh models, two seeds each."""
    result = Result(entry.name, scenario)
    start = time.perf_counter()
    call = _CALLS[scenario]
    eager_model = fresh_model(entry, scenario)
    expected = [_run(call, eager_model, entry, seed, scenario) for seed in (1, 2)]
    try:
        model = fresh_model(entry, scenario)
        compiled, record = framejit_compiled(model)
        if scenario == "train":
            params = list(model.named_parameters())
            first = call(compiled, entry, 1, params)
        else:
            first = call(compiled, entry, 1)
        g, b, c, e, k = record.snapshot()
        reasons_before = len(record.recompile_reasons)
        result.fj_graphs, result.fj_breaks = g, b
        result.fj_eager_frames = list(record.eager_frames)
        result.causes = sorted(set(record.causes))
        second = call(compiled, entry, 2, params) if scenario == "train" else call(compiled, entry, 2)
        result.fj_recompiles = record.conversions - c
        result.recompile_reasons = record.recompile_reasons[reasons_before:]   # the second call's
        for label, got, want in (("call 1", first, expected[0]), ("call 2", second, expected[1])):
            problems = real_calls.differences(got, want)
            result.problems += [f"{label}: {p}" for p in problems[:5]]
        result.match = not result.problems
    except Exception as exc:   # a framejit crash is a finding, not the end of the run
        result.match = False
        result.error = f"framejit: {type(exc).__name__}: {str(exc)[:300]}"
    if with_tc:
        try:
            model = fresh_model(entry, scenario)
            compiled, counter = torch_compiled(model, scenario == "generate")
            if scenario == "train":
                params = list(model.named_parameters())
                call(compiled, entry, 1, params)
            else:
                call(compiled, entry, 1)
            result.tc_graphs, result.tc_breaks = counter.graphs, counter.breaks()
            call(compiled, entry, 2, params) if scenario == "train" else call(compiled, entry, 2)
            result.tc_recompiles = counter.graphs - result.tc_graphs
        except Exception as exc:
            result.error = (result.error or "") + f" torch.compile: {type(exc).__name__}: {str(exc)[:200]}"
    result.seconds = time.perf_counter() - start
    return result


def verdict(result: Result) -> str:
    """ok, or the ways this result misses the issue's targets."""
    misses = []
    if not result.match:
        misses.append("MISMATCH")
    if result.fj_recompiles > (result.tc_recompiles or 0):   # a first call that changes a config recompiles both
        misses.append("recompiles")
    if result.tc_graphs is not None and (result.fj_graphs > max(result.tc_graphs, 1) or
                                         (result.tc_graphs == 1 and (result.fj_breaks or result.fj_eager_frames))):
        misses.append("more graphs than tc")
    elif result.fj_breaks or result.fj_eager_frames:
        misses.append("breaks")
    return ", ".join(misses) or "ok"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-tc", action="store_true", help="skip torch.compile")
    parser.add_argument("--scenarios", default=",".join(real_calls.SCENARIOS))
    parser.add_argument("--json", help="write the results here (rewritten after each call)")
    parser.add_argument("--causes", action="store_true", help="list each call's root break causes")
    parser.add_argument("models", nargs="*", default=zoo_real.names())
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    wanted = args.scenarios.split(",")
    results = []
    print("| model | call | match | fj graphs/breaks | tc graphs/breaks | fj re | tc re | verdict | s |")
    print("|---|---|---|---|---|---:|---:|---|---:|")
    for name in args.models:
        entry = zoo_real.get(name)
        for scenario in real_calls.scenarios_of(entry):
            if scenario not in wanted:
                continue
            framejit.reset()
            r = check(entry, scenario, with_tc=not args.no_tc)
            results.append(r)
            tc = "-" if r.tc_graphs is None else f"{r.tc_graphs}/{r.tc_breaks}"
            eager = f"+{len(r.fj_eager_frames)} eager" if r.fj_eager_frames else ""
            print(f"| {name} | {scenario} | {'yes' if r.match else 'NO'} | {r.fj_graphs}/{r.fj_breaks}{eager} | {tc} "
                  f"| {r.fj_recompiles} | {'-' if r.tc_recompiles is None else r.tc_recompiles} | {verdict(r)} "
                  f"| {r.seconds:.1f} |", flush=True)
            recompiles = [f"recompile: {x}" for x in dict.fromkeys(r.recompile_reasons)][:4]
            causes = [f"cause: {c}" for c in r.causes] if args.causes else []
            for line in r.problems[:3] + ([r.error] if r.error else []) + recompiles + causes:
                print(f"|   | | {line[:300]} | | | | | | |", flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps([asdict(x) for x in results], indent=1))
    causes = {}
    for r in results:
        for cause in set(r.causes) | {e.split(": ", 1)[1] for e in r.fj_eager_frames}:
            causes.setdefault(cause, set()).add(r.model)
    print("\nframejit break causes (innermost reason [file:line function]) -> entries:")
    for cause, models in sorted(causes.items(), key=lambda kv: -len(kv[1])):
        print(f"- {cause}: {', '.join(sorted(models))}")


if __name__ == "__main__":
    main(sys.argv[1:])
