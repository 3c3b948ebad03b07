"""The PyTorch ecosystem zoo, framejit beside torch.compile (issue 25).

Why this exists: framejit was measured on transformers and timm; a user also compiles diffusers UNets
and VAEs, PEFT-wrapped models, PyG nets, einops code, torch.nn's own modules and library code annotated
for torch.compile. For every entry of bench/zoo_ecosystem_models.py this runs eager, framejit and
torch.compile (both with a counting backend, eager kernels) on fresh seeded copies, three calls each, and
prints one row:

  match         framejit's three outputs (and grads for training steps) equal eager's
  fj g/b        framejit's graphs / graph breaks over the first call (+N eager: frames run as Python)
  tc g/b        torch.compile's graphs / graph breaks over the first call
  fj conv       framejit's conversions in call 1 / call 2 / call 3 (a sampler loop calls 4 times)
  tc conv       torch.compile's graphs made in call 1 / 2 / 3
  tc frames     the frames torch.compile converted in call 1 / 2 / 3, graph or not (its frames counter):
                what fj conv counts too, so "more conversions" compares these two
  fj s, tc s    first-call wall time (capture included)
  verdict       ok, or how the row misses issue 25's targets

With --explain, each entry also runs framejit.explain on a cold first call in a fresh process
(--explain-only: that column alone).
Usage: .venv/bin/python bench/zoo_ecosystem.py [--no-tc] [--explain | --explain-only] [--causes] [name ...]
This is bench/ code: it alone (with comparing tests) may call torch.compile.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import framejit  # noqa: E402
from bench import zoo_ecosystem_models as zoo  # noqa: E402
from bench.real_calls import differences  # noqa: E402
from bench.zoo_real_check import TorchCompileCounter, framejit_compiled  # noqa: E402


@dataclass
class Row:
    name: str
    family: str
    skipped: str | None = None
    match: bool = True
    problems: list = field(default_factory=list)
    fj: tuple = (0, 0)
    fj_eager: list = field(default_factory=list)
    fj_conv: list = field(default_factory=list)
    fj_seconds: float = 0.0
    causes: list = field(default_factory=list)
    recompile_reasons: list = field(default_factory=list)
    tc: tuple | None = None
    tc_conv: list = field(default_factory=list)
    tc_frames: list = field(default_factory=list)
    tc_seconds: float = 0.0
    error: str | None = None
    explain: str = "-"


def _compiled_by_torch(model):
    import torch._dynamo
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    counter = TorchCompileCounter()
    return torch.compile(model, backend=counter), counter


def measure(e: zoo.Entry, with_tc: bool) -> Row:
    row = Row(e.name, e.family)
    row.skipped = e.available()
    if row.skipped:
        return row
    eager_model = e.build()      # one model for the three calls, as the compiled ones (state carries over)
    expected = [e.call(eager_model, seed) for seed in (1, 2, 3)]
    try:
        framejit.reset()
        compiled, record = framejit_compiled(e.build())
        outs = []
        for seed in (1, 2, 3):
            before = record.conversions
            start = time.perf_counter()
            outs.append(e.call(compiled, seed))
            if seed == 1:
                row.fj_seconds = time.perf_counter() - start
                row.fj = (record.graphs, record.breaks)
                row.fj_eager = list(record.eager_frames)
                row.causes = sorted(set(record.causes))
            row.fj_conv.append(record.conversions - before)
        row.recompile_reasons = list(dict.fromkeys(record.recompile_reasons))
        for seed, got, want in zip((1, 2, 3), outs, expected):
            row.problems += [f"call {seed}: {p}" for p in differences(got, want)[:3]]
        row.match = not row.problems
    except Exception as exc:     # a framejit crash is a finding, not the end of the run
        row.match = False
        row.error = f"framejit: {type(exc).__name__}: {str(exc)[:300]}"
    if with_tc:
        try:
            compiled, counter = _compiled_by_torch(e.build())
            from torch._dynamo.utils import counters
            for seed in (1, 2, 3):
                before, frames = counter.graphs, counters["frames"]["total"]
                start = time.perf_counter()
                e.call(compiled, seed)
                if seed == 1:
                    row.tc_seconds = time.perf_counter() - start
                    row.tc = (counter.graphs, counter.breaks())
                row.tc_conv.append(counter.graphs - before)
                row.tc_frames.append(counters["frames"]["total"] - frames)
        except Exception as exc:
            row.error = (row.error or "") + f" torch.compile: {type(exc).__name__}: {str(exc)[:200]}"
    return row


def explain_cold(name: str) -> str:
    """framejit.explain on a cold first call in a fresh process: 'ok' or the last line of its error."""
    script = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r}); import warnings; "
              "warnings.simplefilter('ignore'); import torch, framejit; from bench import zoo_ecosystem_models as z; "
              f"e = z.get({name!r}); m = e.build(); args = e.inputs(1); "
              "r = framejit.explain(m)(*args) if e.run is None else framejit.explain(lambda: e.run(framejit.compile(m), 1))(); "
              "str(r); print('EXPLAIN-OK')")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    if "EXPLAIN-OK" in proc.stdout:
        return "ok"
    tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
    return f"FAILS: {tail[:150]}"


def verdict(row: Row) -> str:
    misses = []
    if not row.match:
        misses.append("MISMATCH")
    tc_graphs, tc_breaks = row.tc if row.tc else (None, None)
    graphs, breaks = row.fj
    if tc_graphs is not None:
        if graphs > max(tc_graphs, 1):
            misses.append("more graphs than tc")
        if tc_graphs == 1 and tc_breaks == 0 and (graphs != 1 or breaks or row.fj_eager):
            misses.append("not one graph")
        if sum(row.fj_conv) > sum(row.tc_frames or row.tc_conv):
            misses.append("more conversions")
    elif breaks or row.fj_eager:
        misses.append("breaks")
    if row.explain.startswith("FAILS"):
        misses.append("explain fails")
    return ", ".join(misses) or "ok"


def print_row(row: Row, show_causes: bool):
    if row.skipped:
        print(f"| {row.name} | {row.family} | skipped: {row.skipped} | | | | | | | | | |", flush=True)
        return
    tc = "-" if row.tc is None else f"{row.tc[0]}/{row.tc[1]}"
    eager = f" +{len(row.fj_eager)} eager" if row.fj_eager else ""
    conv = lambda xs: "/".join(map(str, xs)) or "-"   # noqa: E731
    print(f"| {row.name} | {row.family} | {'yes' if row.match else 'NO'} | {row.fj[0]}/{row.fj[1]}{eager} | {tc} "
          f"| {conv(row.fj_conv)} | {conv(row.tc_conv)} | {conv(row.tc_frames)} | {row.fj_seconds:.2f} | {row.tc_seconds:.2f} "
          f"| {row.explain} | {verdict(row)} |", flush=True)
    extra = row.problems[:3] + ([row.error] if row.error else []) + [f"recompile: {r}" for r in row.recompile_reasons[:3]]
    if show_causes:
        extra += [f"cause: {c}" for c in row.causes] + [f"eager: {x}" for x in row.fj_eager]
    for line in extra:
        print(f"|   | | {line[:300]} | | | | | | | | | |", flush=True)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-tc", action="store_true", help="skip torch.compile")
    parser.add_argument("--explain", action="store_true", help="framejit.explain cold, in a fresh process each")
    parser.add_argument("--explain-only", action="store_true", help="only the cold explain column, one line per model")
    parser.add_argument("--causes", action="store_true", help="list framejit's root break causes per row")
    parser.add_argument("models", nargs="*", default=zoo.names())
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    if args.explain_only:
        print("| model | explain (cold, fresh process) |\n|---|---|")
    else:
        print("| model | family | match | fj g/b | tc g/b | fj conv 1/2/3 | tc conv 1/2/3 | tc frames 1/2/3 | fj s | tc s "
              "| explain | verdict |")
        print("|---|---|---|---|---|---|---|---|---:|---:|---|---|")
    rows = []
    for name in args.models:
        if args.explain_only:
            skipped = zoo.get(name).available()
            print(f"| {name} | {'skipped: ' + skipped if skipped else explain_cold(name)} |", flush=True)
            continue
        row = measure(zoo.get(name), not args.no_tc)
        if args.explain and not row.skipped:
            row.explain = explain_cold(name)
        rows.append(row)
        print_row(row, args.causes)
    if args.explain_only:
        return
    ran = [r for r in rows if not r.skipped]
    same = sum(verdict(r) == "ok" for r in ran)
    print(f"\n{len(ran)} models ran ({len(rows) - len(ran)} skipped); {same} ok; "
          f"{sum(r.match for r in ran)} match eager; framejit graphs {sum(r.fj[0] for r in ran)}, "
          f"torch.compile graphs {sum(r.tc[0] for r in ran if r.tc)}")
    causes = {}
    for r in ran:
        for cause in set(r.causes) | {x.split(": ", 1)[-1] for x in r.fj_eager}:
            causes.setdefault(cause, set()).add(r.name)
    print("\nframejit break causes (innermost reason [file:line function]) -> entries:")
    for cause, models in sorted(causes.items(), key=lambda kv: -len(kv[1])):
        print(f"- {cause}: {', '.join(sorted(models))}")


if __name__ == "__main__":
    main(sys.argv[1:])
