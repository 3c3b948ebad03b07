"""framejit vs torch.compile(backend="eager") on every zoo model, side by side in one process.

Why this exists: the zoo is where capture cost and per-call overhead meet real model code. For each
model (eval, torch.no_grad(), one thread) this measures:

  eager       the plain model call
  capture     the first compiled call after a reset (translation + backend + the call itself), after
              a full garbage collection (both frontends; see collect_garbage)
  graphs / breaks
  call        the steady compiled call
  floor       the captured graph called directly on its example inputs (what a compiled call cannot beat)

  frontend    the compiled call with its graph stubbed out (the graph returns its saved outputs): the
              frontend's own work per call (guards, argument loading, rebuilding the result)
  overhead    call - floor: the median over 20 alternating rounds of (call - floor), never less than
              frontend (on a loaded machine noise can only hide cost);
              it also counts what a frontend adds *while* the graph runs (torch.compile's frame
              callback sees every Python frame the graph enters, e.g. torch.nn.functional wrappers)
  control     the graph called right after ~1us of unrelated Python: on a loaded machine that alone
              adds tens of microseconds to the graph (cache/scheduling), which call - floor charges to
              the frontend; the summary also gives the ratio measured against the control

for framejit and for torch.compile, then prints the geometric means of the capture-time ratio
(framejit / torch.compile) and of the overhead ratio (framejit overhead / torch.compile overhead).
Targets: <= 0.25 and <= 0.10. Overheads are compared on models both compile into exactly one graph.
Call and floor are medians over the same alternating rounds; frontend is the fastest batch of 20 calls.

Usage: .venv/bin/python bench/models.py [--zoo toy|real] [--calls N] [--captures N] [model ...]
--zoo real measures bench/zoo_real.py (real checkpoints' structure, called with padded masks and the
cache at its default) instead of bench/zoo.py; the models default to every entry of the chosen zoo.
This is bench/ code: it alone may import torch._dynamo.
"""
from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import framejit  # noqa: E402
from bench import zoo, zoo_real  # noqa: E402

ZOOS = {"toy": zoo, "real": zoo_real}


class Capture:
    """A backend that keeps every graph with its example inputs and hands the frontend the graph's own
    forward, as the eager backends do: a compiled call then runs exactly what the floor runs, with no
    wrapper frame of the benchmark's own in between (such a frame costs ~4-5 us in situ, added to both
    frontends alike). With `stub=True` the graphs return their first outputs again without computing
    anything, so a compiled call costs only the frontend's own work (guards, argument loading,
    rebuilding the result)."""

    def __init__(self, stub=False):
        self.graphs = []
        self.stub = stub

    def __call__(self, gm, example_inputs):
        self.graphs.append((gm, list(example_inputs)))
        if not self.stub:
            return gm.forward
        saved = []

        def run(*args):
            if not saved:
                saved.append(gm.forward(*args))
            return saved[0]
        return run


def median_seconds(fn, calls, warmup=10):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def best_seconds(fn, calls, batch=20):
    """Per-call time of the fastest batch of `batch` calls (robust to a loaded machine)."""
    for _ in range(batch):
        fn()
    best = float("inf")
    for _ in range(max(calls // batch, 5)):
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        best = min(best, (time.perf_counter() - start) / batch)
    return best


_PRELUDE_OBJECTS = [type("Slot", (), {"a": 1})() for _ in range(30)]


def python_prelude():
    """About a microsecond of plain Python work (the control: see call_and_floor)."""
    total = 0
    for obj in _PRELUDE_OBJECTS:
        total += obj.a
    return total


def call_and_floor(compiled, kwargs, capture, calls, rounds=20):
    """Median per-call times of the compiled call, of its graph called directly (floor), and of the
    graph called right after ~1us of unrelated Python (the control), measured in alternating rounds;
    plus the medians of the per-round differences call - floor and call - control. On a loaded machine
    the control shows that *any* Python work before a graph call adds tens of microseconds to it (cache
    and scheduling effects), which call - floor charges to the frontend. NaN unless exactly one graph."""
    per_round = max(calls // rounds, 5)
    if len(capture.graphs) != 1:
        nan = float("nan")
        return median_seconds(lambda: compiled(**kwargs), calls), nan, nan, nan
    gm, inputs = capture.graphs[0]

    def control():
        python_prelude()
        return gm.forward(*inputs)
    calls_t, floors_t, diffs, control_diffs = [], [], [], []
    for _ in range(rounds):
        c = median_seconds(lambda: compiled(**kwargs), per_round, warmup=2)
        f = median_seconds(lambda: gm.forward(*inputs), per_round, warmup=2)
        k = median_seconds(control, per_round, warmup=2)
        calls_t.append(c)
        floors_t.append(f)
        diffs.append(c - f)
        control_diffs.append(c - k)
    return (statistics.median(calls_t), statistics.median(floors_t), statistics.median(diffs),
            statistics.median(control_diffs))


def frontend_seconds(reset, compile_model, kwargs, calls, graphs):
    """The frontend's own cost per call: a fresh compile whose graph is stubbed out. Only for models
    captured into one graph (`graphs`): with breaks, code between graphs would run on stale outputs."""
    if graphs != 1:
        return float("nan")
    reset()
    capture = Capture(stub=True)
    compiled = compile_model(capture)
    compiled(**kwargs)
    if len(capture.graphs) != 1:
        return float("nan")
    return best_seconds(lambda: compiled(**kwargs), calls)


def collect_garbage():
    """Before each timed first call, on both sides: a full collection, so the call pays for the
    collections its own allocations trigger but not for garbage (or a pending full collection,
    ~200 ms with transformers and torch loaded) left over by whatever ran before it."""
    gc.collect()


def first_calls(reset, compile_model, kwargs, captures):
    """Seconds of each of `captures` first calls, each after `reset()` and a fresh compile (the same
    procedure for both frontends); returns the last compiled model and its Capture backend too."""
    first = []
    for _ in range(captures):
        reset()
        capture = Capture()
        compiled = compile_model(capture)
        collect_garbage()
        start = time.perf_counter()
        compiled(**kwargs)
        first.append(time.perf_counter() - start)
    return first, compiled, capture


def measure_framejit(model, kwargs, calls, captures):
    first, _, _ = first_calls(framejit.reset, lambda backend: framejit.compile(model, backend=backend), kwargs,
                              captures)
    framejit.reset()
    explained = framejit.explain(model)(**kwargs)
    framejit.reset()
    capture = Capture()
    compiled = framejit.compile(model, backend=capture)
    compiled(**kwargs)
    call, floor, diff, control_diff = call_and_floor(compiled, kwargs, capture, calls)
    return {"capture": statistics.median(first), "graphs": explained.graph_count,
            "breaks": explained.graph_break_count, "call": call, "floor": floor, "diff": diff,
            "control_diff": control_diff,
            "frontend": frontend_seconds(framejit.reset, lambda backend: framejit.compile(model, backend=backend),
                                         kwargs, calls, len(capture.graphs)),
            "eager_frames": len(explained.eager_reasons)}


def measure_torch_compile(model, kwargs, calls, captures):
    import torch._dynamo
    from torch._dynamo.utils import counters

    def reset():
        torch._dynamo.reset()
        counters.clear()
    first, compiled, capture = first_calls(reset, lambda backend: torch.compile(model, backend=backend), kwargs,
                                           captures)
    breaks = sum(counters["graph_break"].values())
    call, floor, diff, control_diff = call_and_floor(compiled, kwargs, capture, calls)
    return {"capture": statistics.median(first), "graphs": len(capture.graphs), "breaks": breaks,
            "call": call, "floor": floor, "diff": diff, "control_diff": control_diff,
            "frontend": frontend_seconds(reset, lambda backend: torch.compile(model, backend=backend), kwargs,
                                         calls, len(capture.graphs))}


def _warm_up():
    """Pay both frontends' one-time import/setup costs before the first model is timed."""
    import torch._dynamo
    lin = torch.nn.Linear(4, 4)
    x = torch.ones(2, 4)
    framejit.compile(lin)(x)
    torch.compile(lin, backend="eager")(x)
    framejit.reset()
    torch._dynamo.reset()


def geomean(values):
    values = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per median")
    parser.add_argument("--captures", type=int, default=3, help="first calls (after a reset) per median")
    parser.add_argument("--zoo", choices=sorted(ZOOS), default="toy", help="bench/zoo.py (toy) or bench/zoo_real.py")
    parser.add_argument("models", nargs="*")
    args = parser.parse_args(argv)
    chosen = ZOOS[args.zoo]
    models = args.models or chosen.names()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(f"torch {torch.__version__}, 1 thread, torch.no_grad(), eval; times in ms; call/floor: medians over 20 alternating rounds of "
          f"{args.calls} calls in all; frontend: fastest batch of 20; capture: median of {args.captures} first calls after a reset")
    print("| model | eager | fj capture | tc capture | capture ratio | fj graphs/breaks | tc graphs/breaks "
          "| fj call | fj floor | fj frontend | fj overhead | tc call | tc floor | tc frontend | tc overhead "
          "| overhead ratio |")
    print("|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    _warm_up()
    capture_ratios, overhead_ratios, control_ratios, frontend_ratios = [], [], [], []
    for name in models:
        entry = chosen.get(name)
        model = entry.build()
        kwargs = entry.inputs()
        with torch.no_grad():
            eager = median_seconds(lambda: model(**kwargs), args.calls)
            fj = measure_framejit(model, kwargs, args.calls, args.captures)
            tc = measure_torch_compile(model, kwargs, args.calls, args.captures)
        capture_ratio = fj["capture"] / tc["capture"]
        capture_ratios.append(capture_ratio)
        one_graph = fj["graphs"] == 1 and not fj["eager_frames"] and tc["graphs"] == 1
        # call - floor, but never below the frontend's own measured cost (noise can only hide cost)
        fj_over = max(fj["diff"], fj["frontend"]) if one_graph else float("nan")
        tc_over = max(tc["diff"], tc["frontend"]) if one_graph else float("nan")
        ratio = fj_over / tc_over if one_graph and tc_over > 0 else float("nan")
        # the same, measured against the control (graph after ~1us of Python) instead of the bare floor
        fj_ctl = max(fj["control_diff"], fj["frontend"]) if one_graph else float("nan")
        tc_ctl = max(tc["control_diff"], tc["frontend"]) if one_graph else float("nan")
        if one_graph:
            overhead_ratios.append(max(ratio, 1e-3))
            control_ratios.append(max(fj_ctl / tc_ctl, 1e-3) if tc_ctl > 0 else float("nan"))
            frontend_ratios.append(fj["frontend"] / tc["frontend"])
        ms = 1e3
        print(f"| {name} | {eager * ms:.3f} | {fj['capture'] * ms:.0f} | {tc['capture'] * ms:.0f} | {capture_ratio:.2f} "
              f"| {fj['graphs']}/{fj['breaks']} | {tc['graphs']}/{tc['breaks']} | {fj['call'] * ms:.3f} "
              f"| {fj['floor'] * ms:.3f} | {fj['frontend'] * ms:.3f} | {fj_over * ms:.3f} | {tc['call'] * ms:.3f} "
              f"| {tc['floor'] * ms:.3f} | {tc['frontend'] * ms:.3f} | {tc_over * ms:.3f} | {ratio:.3f} |", flush=True)
    print(f"\ngeometric mean capture ratio (framejit / torch.compile): {geomean(capture_ratios):.3f} "
          f"over {len(capture_ratios)} models (target <= 0.25)")
    print(f"geometric mean overhead ratio (framejit / torch.compile, call - floor): {geomean(overhead_ratios):.3f} "
          f"over {len(overhead_ratios)} one-graph models (target <= 0.10)")
    print(f"  ... measured against the control (graph after ~1us of Python): {geomean(control_ratios):.3f}")
    print(f"  ... frontend only (graphs stubbed out): {geomean(frontend_ratios):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
