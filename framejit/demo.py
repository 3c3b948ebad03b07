"""`make demo` / `python -m framejit demo`: compile the built-in examples and show what happened.

For each example it checks the compiled result against eager, then prints graphs, graph breaks with
their source lines, guards, capture time and per-call time next to eager.
"""
import statistics
import time

import torch

import framejit
from framejit.examples import MLP, TransformerBlock, log_progress


def _time(fn, *args, number=300):
    for _ in range(20):
        fn(*args)
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(number):
            fn(*args)
        runs.append((time.perf_counter() - t0) / number)
    return statistics.median(runs)


def _show(title, fn, args, eager_fn=None):
    eager_fn = eager_fn or fn
    print(f"\n=== {title} ===")
    t0 = time.perf_counter()
    report = framejit.explain(fn)(*args)
    capture = time.perf_counter() - t0
    expected = eager_fn(*args)
    ok = torch.allclose(report.result, expected, atol=1e-5)
    print(f"matches eager: {ok}")
    print(f"graphs: {report.graph_count}, graph breaks: {report.graph_break_count}, "
          f"ops per graph: {report.ops_per_graph}, capture (first call): {capture * 1000:.1f} ms")
    for b in report.break_reasons:
        print(f"break: {b.reason}")
        print(b.where)
    print(f"guards ({len(report.guards)}):")
    for g in report.guards[:8]:
        print(f"  {g}")
    if len(report.guards) > 8:
        print(f"  ... {len(report.guards) - 8} more")
    if report.graphs:
        print("graph 1:")
        print("\n".join("  " + l for l in report.graphs[0].code.strip().splitlines()[:16]))
    return ok


def main():
    torch.manual_seed(0)
    ok = True
    with torch.no_grad():
        mlp = MLP().eval()
        x = torch.randn(16, 32)
        ok &= _show("2-layer MLP", mlp, (x,))
        block = TransformerBlock().eval()
        xb = torch.randn(2, 8, 32)
        ok &= _show("tiny transformer block", block, (xb,))
        ok &= _show("function with a print (a graph break)", log_progress, (3, torch.tensor(4.0)))

        print("\n=== per-call time (median) ===")
        for name, model, inp in (("MLP", mlp, x), ("transformer block", block, xb)):
            compiled = framejit.compile(model)
            compiled(inp)
            te, tc = _time(model, inp), _time(compiled, inp)
            print(f"{name:<18} eager {te * 1e6:8.1f} us   framejit {tc * 1e6:8.1f} us   "
                  f"ratio {tc / te:5.2f}")
    print("\nall results match eager" if ok else "\nMISMATCH against eager")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
