"""Per-call time of a small inductor graph with and without output_strides' wrapper in its call path.

Why this exists (issue 24, "per-call time no worse than today"): backends/passes/output_strides.py wraps
every inductor graph with a plain tensor output; when the plan made at its first call is empty, the wrapper
now steps out of the entry's call path. Two copies of one small function are compiled with inductor in this
process: one as before (the wrapper never steps aside: `LOOKS = 0`), one as now. Rounds alternate between
them; the figures are medians of per-round CPU time per call, in microseconds.

Usage: PYTHONPATH=$PWD .venv/bin/python bench/output_strides_overhead.py [--rounds N] [--calls N]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def kept(x):
    return torch.sin(x) * 2, x.sum(0)


def stepping_aside(x):
    return torch.sin(x) * 2, x.sum(0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=301)
    parser.add_argument("--calls", type=int, default=200)
    a = parser.parse_args()
    global torch
    import torch
    import framejit
    from framejit.backends.passes import output_strides
    torch.set_num_threads(1)
    x = torch.randn(4, 6)
    saved = output_strides.LOOKS
    output_strides.LOOKS = 0
    before = framejit.compile(kept, backend="inductor")
    before(x)
    output_strides.LOOKS = saved
    after = framejit.compile(stepping_aside, backend="inductor")
    after(x)
    for side in (before, after):
        side(x)
    graphs = [getattr(side._framejit_env.env.get("__fj_graph"), "__qualname__", "?") for side in (before, after)]
    assert graphs[0] == "restriding.<locals>.run" != graphs[1], graphs
    times = ([], [])
    for _ in range(a.rounds):
        for side, call in enumerate((before, after)):
            start = time.process_time()
            for _ in range(a.calls):
                call(x)
            times[side].append((time.process_time() - start) / a.calls * 1e6)
    b, n = statistics.median(times[0]), statistics.median(times[1])
    paired = statistics.median(p - q for p, q in zip(*times))      # each round's own difference
    print("| graph call (us/call) | wrapper kept (before) | wrapper stepped aside (now) | median of round differences |")
    print("|---|---:|---:|---:|")
    print(f"| sin(x) * 2, x.sum(0), x 4x6 | {b:.2f} | {n:.2f} | {paired:.2f} |")


if __name__ == "__main__":
    main()
