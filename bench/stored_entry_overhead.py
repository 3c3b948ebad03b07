"""Per-call cost of an entry built from a stored conversion against the converted entry it was made from.

Why this exists (issue 24): a warm-started process runs entries built from stored records
(runtime/warm_start.py); the issue's goal says their per-call time must be no worse than a converted
entry's. Both entries are made in this one process from the same conversion (the stored one after a JSON
round trip of its record, as a later process reads it) and call the same graph, which here returns the
outputs it computed on its first call: what is timed is the entry's own work (guards, the graph inputs'
reads, the result rebuilt), the part that differs. Rounds alternate between the two sides; the figures are
medians of per-round CPU time per call, in microseconds, and the median of each round's own difference
(stored - converted: rounds alternate, so the load changes both sides of one round alike).

Usage: PYTHONPATH=$PWD .venv/bin/python bench/stored_entry_overhead.py [--rounds N] [--calls N] [--through-model]
       [model ...]
Models: bench/first_call.py's (resnet, gpt2, vit, llama_kv).
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _replaying_backend(graphs):
    """A backend whose graph runs once and then returns the same outputs (so the graph costs nothing), and
    carries a library key as a stored library's callable does."""
    def backend(gm, example_inputs):
        memo = []

        def run(*inputs):
            if not memo:
                memo.append(gm(*inputs))
            return memo[0]
        run.framejit_aoti_key = f"graph{len(graphs)}"
        graphs.append(run)
        return run
    return backend


def entries(name, through_model=False):
    """(call converted, call stored): the two entries of `name`'s first conversion, as no-argument calls; with
    `through_model`, two compiled models' calls instead (the dispatcher, which inlines its first entry), one
    converted, one whose first miss took the stored entry (warm_start.load, as in a warm process)."""
    import torch
    import framejit
    from bench.first_call import build
    from framejit.backends import inductor_aoti
    from framejit.convert.codegen import MISS
    from framejit.runtime import warm_start

    model, args, kwargs = build(name)
    graphs = []
    compiled = framejit.compile(model, backend=_replaying_backend(graphs))
    with torch.no_grad():
        compiled(*args, **kwargs)
    fn = type(model).forward
    result = compiled.forward._framejit_state.results[0]
    record = json.loads(json.dumps(warm_start.plan_of(fn, result, (model, *args), kwargs)))
    inductor_aoti.load_stored = lambda store, key: (graphs[int(key[5:])], True)
    lead = (fn.__closure__,) if fn.__code__.co_freevars else ()
    with torch.no_grad():
        stored = warm_start._build(fn, record, None, (model, *args), kwargs).entry
    converted = result.entry
    if through_model:
        load = warm_start.load
        warm_start.load = lambda f, opts, a, k: warm_start._build(f, record, None, a, k) if f is fn else None
        warm = framejit.compile(model, backend=_replaying_backend([]))
        try:
            with torch.no_grad():
                warm(*args, **kwargs)
        finally:
            warm_start.load = load
        assert getattr(warm.forward._framejit_state.results[0], "stored", False)
        return (lambda: compiled(*args, **kwargs)), (lambda: warm(*args, **kwargs))
    with torch.no_grad():
        for entry in (converted, stored):
            assert entry(*lead, model, *args, **kwargs) is not MISS
    return (lambda: converted(*lead, model, *args, **kwargs)), (lambda: stored(*lead, model, *args, **kwargs))


def measure(name, rounds, calls, through_model=False):
    import torch
    sides = entries(name, through_model)
    times = ([], [])
    with torch.no_grad():
        for _ in range(rounds):
            for side, call in enumerate(sides):
                start = time.process_time()
                for _ in range(calls):
                    call()
                times[side].append((time.process_time() - start) / calls * 1e6)
    paired = statistics.median(s - c for c, s in zip(*times))      # each round's own difference
    return statistics.median(times[0]), statistics.median(times[1]), paired


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--through-model", action="store_true",
                        help="time the compiled models' calls (dispatcher included), not the entries")
    parser.add_argument("models", nargs="*", default=["resnet", "gpt2"])
    a = parser.parse_args()
    import torch
    torch.set_num_threads(1)
    if a.through_model:
        print("Through the compiled models' calls (dispatcher included):")
    print("| model | converted entry (us/call) | stored entry (us/call) | stored / converted | "
          "median of round differences (us) |")
    print("|---|---:|---:|---:|---:|")
    for name in a.models:
        converted, stored, paired = measure(name, a.rounds, a.calls, a.through_model)
        print(f"| {name} | {converted:.1f} | {stored:.1f} | {stored / converted:.2f} | {paired:+.2f} |", flush=True)


if __name__ == "__main__":
    main()
