"""What tiered first calls (backends/tiered.py) cost per call, before and after the switch to the library.

Why this exists (issue 24): a tiered graph's fx code answers while its library builds, looking at the build
at most every 0.5 s; after the switch it steps out of the entry's path. This measures, in one process, on a
small MLP (per-call times are microseconds, so any wrapper shows):

  fx tier        framejit.compile(tiered=True)'s calls before the library lands, against backend="eager"
                 (the same fx code with nothing around it)
  library tier   the same compiled function after the switch, against a second framejit.compile of the same
                 model without tiered=True, which loads the stored library at its first call (what a later
                 process runs)

The library is built in this process (aoti_background.build_pending_here), in a private cache directory.
Usage: PYTHONPATH=$PWD .venv/bin/python bench/tiered_overhead.py [--calls N] [--rounds N]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def per_call(a, b, x, calls, repeats=101):
    """(median a, median b, median of the rounds' differences b - a), in microseconds per call: `repeats`
    rounds of `calls` calls each, a and b alternating (the machine is shared: both see the same load)."""
    rounds = []
    for i in range(repeats):
        pair = [0.0, 0.0]               # (a compiled module equals its model as a key: no dict by function)
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):   # which goes first alternates too
            fn = (a, b)[which]
            start = time.perf_counter()
            for _ in range(calls):
                fn(x)
            pair[which] = (time.perf_counter() - start) / calls * 1e6
        rounds.append(pair)
    return (statistics.median(r[0] for r in rounds), statistics.median(r[1] for r in rounds),
            statistics.median(r[1] - r[0] for r in rounds))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=101)
    opts = parser.parse_args()
    os.environ["FRAMEJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="tiered_overhead_")
    os.environ["FRAMEJIT_CACHE_AOTI"] = "background"
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import torch
    import framejit
    from framejit.backends import aoti_background, tiered
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
    x = torch.randn(2, 16)
    with torch.no_grad(), aoti_background.children_held():
        eager_backend = framejit.compile(model, backend="eager")
        tiered_fn = framejit.compile(model, backend="inductor", tiered=True)
        eager_backend(x), tiered_fn(x)
        tiers = next(g.framejit_tiers for g in _graph_chain(tiered_fn) if hasattr(g, "framejit_tiers"))
        fx = per_call(eager_backend, tiered_fn, x, opts.calls, opts.rounds)
        start = time.perf_counter()
        aoti_background.build_pending_here()
        built = time.perf_counter() - start
        tiered.LOOK_EVERY = 0.0
        tiered_fn(x)
        assert tiers.now == "library", tiers.now
        for _ in range(20):
            tiered_fn(x)                     # it steps aside
        loaded = framejit.compile(model, backend="inductor")
        loaded(x)
        library = per_call(loaded, tiered_fn, x, opts.calls, opts.rounds)
    print(f"library built in this process in {built:.1f} s")
    print(f"fx tier:      backend='eager' {fx[0]:.2f} us/call, tiered before the switch {fx[1]:.2f} us/call "
          f"(median round difference {fx[2]:+.2f})")
    print(f"library tier: stored library loaded {library[0]:.2f} us/call, tiered after the switch "
          f"{library[1]:.2f} us/call (median round difference {library[2]:+.2f})")


def _graph_chain(compiled):
    graph = compiled.forward._framejit_state.results[0].ns.env["__fj_graph"]
    while graph is not None:
        yield graph
        graph = getattr(graph, "framejit_wraps", None)


if __name__ == "__main__":
    main()
