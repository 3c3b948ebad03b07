"""Measures the incumbent, torch.compile(backend="eager"), on every model of bench/zoo.py.

Why this exists: framejit's frontend overhead and graph coverage need a yardstick. For each zoo
model this prints, measured in one process: eager forward time, torch.compile's first call
(capture) time, its steady per-call time, and how many graphs and graph breaks TorchDynamo
produced. The "eager" backend runs the captured graphs as plain PyTorch, so the difference
from eager is the frontend's own cost. This is bench/ code: it alone may touch torch._dynamo.

Usage: .venv/bin/python bench/baseline_torch_compile.py [--calls N] [--captures N]
           [--clock cpu|wall] [--variants] [model ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch._dynamo  # noqa: E402  (bench only: measuring the incumbent)
from torch._dynamo.utils import counters  # noqa: E402

from bench import zoo  # noqa: E402


CLOCKS = {
    # CPU time of this thread: with torch at one thread it is the work done, and it barely moves
    # when other processes compete for the 2 cores (wall time then can triple).
    "cpu": time.thread_time,
    "wall": time.perf_counter,
}


def median_call_seconds(fn, kwargs: dict, calls: int, clock) -> float:
    times = []
    for _ in range(calls):
        start = clock()
        fn(**kwargs)
        times.append(clock() - start)
    return statistics.median(times)


def variant_inputs(entry: zoo.ZooModel, variant: str) -> dict | None:
    """The entry's inputs changed to take a less simple path through transformers, or None."""
    kwargs = entry.inputs()
    if variant == "plain":
        return kwargs
    if variant == "labels":  # the model computes its own loss (transformers' loss registry)
        if entry.kind == "decoder":
            return {**kwargs, "labels": kwargs["input_ids"]}
        if entry.kind == "encoder-decoder":
            return {**kwargs, "labels": kwargs["decoder_input_ids"]}
        return None
    if variant == "attentions":  # attention maps, collected by transformers' output hooks
        return {**kwargs, "output_attentions": True}
    raise ValueError(variant)


def measure(entry: zoo.ZooModel, calls: int, captures: int, clock, variant: str = "plain") -> dict | None:
    kwargs = variant_inputs(entry, variant)
    if kwargs is None:
        return None
    start = clock()
    model = entry.build()
    build_s = clock() - start
    with torch.no_grad():
        try:
            eager_out = model(**kwargs)  # also warms up eager (lazy inits, allocator)
        except TypeError:  # e.g. output_attentions on a ConvNet
            return None
        eager_s = median_call_seconds(model, kwargs, calls, clock)

        # The first capture runs on a model that was never called, as a user's first call would:
        # transformers sets some things up lazily on a model's first call (e.g. output hooks).
        subject = entry.build()
        first_calls = []
        for _ in range(captures):  # capture time is one sample per reset: take a median
            torch._dynamo.reset()
            counters.clear()
            compiled = torch.compile(subject, backend="eager")
            start = clock()
            compiled_out = compiled(**kwargs)
            first_calls.append(clock() - start)
            if len(first_calls) == 1:
                cold = _capture_counts()
        steady_s = median_call_seconds(compiled, kwargs, calls, clock)
    return {
        "name": entry.name if variant == "plain" else f"{entry.name}+{variant}",
        "kind": entry.kind,
        "build_ms": build_s * 1e3,
        "eager_ms": eager_s * 1e3,
        "cold_ms": first_calls[0] * 1e3,
        "first_ms": statistics.median(first_calls) * 1e3,
        "steady_ms": steady_s * 1e3,
        **cold,
        "same": torch.equal(_first_tensor(eager_out), _first_tensor(compiled_out)),
    }


def _capture_counts() -> dict:
    """Graphs, breaks (by first line of reason) and captured calls TorchDynamo counted so far."""
    reasons: dict[str, int] = {}
    for reason, count in counters["graph_break"].items():
        line = reason.splitlines()[0]
        reasons[line] = reasons.get(line, 0) + count
    return {
        "graphs": counters["stats"]["unique_graphs"],
        "breaks": sum(reasons.values()),
        "ops": counters["stats"]["calls_captured"],
        "reasons": reasons,
    }


def _first_tensor(output) -> torch.Tensor:
    return output if isinstance(output, torch.Tensor) else next(iter(output.values()))


def _warm_up_dynamo() -> None:
    """Pay TorchDynamo's one-time import and setup cost before the first model is timed."""
    compiled = torch.compile(torch.nn.Linear(4, 4), backend="eager")
    with torch.no_grad():
        compiled(torch.ones(2, 4))
    torch._dynamo.reset()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="calls per median (>= 50)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu", help="what a time is")
    parser.add_argument("--captures", type=int, default=3, help="first calls (after reset) per median")
    parser.add_argument(
        "--variants",
        action="store_true",
        help="also measure each model with labels= and with output_attentions=True",
    )
    parser.add_argument("models", nargs="*", default=zoo.names())
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # stable timings on a 2-core machine; same for eager and compiled

    print(
        f"torch {torch.__version__}, threads 1, torch.no_grad(), {args.clock} time;"
        f" per-call times: median of {args.calls}"
        f" calls; compile first call: median of {args.captures} captures, torch._dynamo.reset() before each"
    )
    print(
        "| model | kind | build ms | eager ms | compile 1st call: cold ms | median ms | compiled steady ms"
        " | steady/eager | graphs (cold) | breaks (cold) | ops captured | out equal |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    load_at_start = os.getloadavg()[0]
    _warm_up_dynamo()
    reasons = {}
    variants = ["plain", "labels", "attentions"] if args.variants else ["plain"]
    runs = [(name, variant) for variant in variants for name in args.models]
    for name, variant in runs:
        r = measure(zoo.get(name), args.calls, args.captures, CLOCKS[args.clock], variant)
        if r is None:
            continue
        reasons[r["name"]] = r["reasons"]
        print(
            f"| {r['name']} | {r['kind']} | {r['build_ms']:.1f} | {r['eager_ms']:.3f} | {r['cold_ms']:.0f} | {r['first_ms']:.0f} "
            f"| {r['steady_ms']:.3f} | {r['steady_ms'] / r['eager_ms']:.2f} | {r['graphs']} | {r['breaks']} "
            f"| {r['ops']} | {r['same']} |",
            flush=True,
        )
    for name, why in reasons.items():
        for reason, count in why.items():
            print(f"- {name}: {count} x {reason}")
    print(f"load average at start {load_at_start:.2f}, at end {os.getloadavg()[0]:.2f} (2 cores)")


if __name__ == "__main__":
    main(sys.argv[1:])
