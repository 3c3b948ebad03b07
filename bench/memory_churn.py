"""Memory of compiled functions that die: compile, call once and drop many small functions.

    .venv/bin/python bench/memory_churn.py                 # 10,000 cycles of each kind
    .venv/bin/python bench/memory_churn.py --cycles 2000 --kind break

A long-running process (a server building models, a notebook re-running cells, a test suite) compiles
functions and drops them. Each must free what its conversion made: its cache entries, graphs, resume
functions, guards and the objects they checked. Each kind runs in a fresh process: a warm-up of 200
cycles (fills the bounded stores: metrics, the report's last dead frames), then `--cycles` cycles,
and prints the growth of the resident set (MiB) and of the number of objects the cyclic GC tracks,
both after gc.collect(). Kinds:

  exec     a new function each time (the same shape of source exec'd with a new constant)
  break    the same with a graph break (break function and resume function)
  closure  closures of one function, each over a new constant (one shared code object)
  module   a new nn.Linear compiled as a module
"""
import argparse
import gc
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("exec", "break", "closure", "module")


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _scale(k):
    def f(x):
        return x * k + 1
    return f


def one_cycle(framejit, torch, kind, i, x):
    if kind == "exec":
        namespace = {}
        exec(f"def f(x):\n    return x * {i} + 1\n", namespace)
        fn = namespace["f"]
    elif kind == "break":
        namespace = {}
        exec(f"def f(x):\n    y = x * {i}\n    print(end='')\n    return y + 1\n", namespace)
        fn = namespace["f"]
    elif kind == "closure":
        fn = _scale(float(i))
    else:
        fn = torch.nn.Linear(4, 4)
    framejit.compile(fn)(x)


def measure(kind, cycles):
    sys.path.insert(0, str(ROOT))
    import torch
    import framejit
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    x = torch.ones(4)
    for i in range(200):
        one_cycle(framejit, torch, kind, -1 - i, x)
    gc.collect()
    rss0, objects0 = rss_mib(), len(gc.get_objects())
    clear_bounded_stores(framejit)
    gc.collect()
    cleared0, start = len(gc.get_objects()), time.perf_counter()
    for i in range(cycles):
        one_cycle(framejit, torch, kind, i, x)
    gc.collect()
    rss1, objects1 = rss_mib(), len(gc.get_objects())
    seconds = time.perf_counter() - start
    clear_bounded_stores(framejit)
    gc.collect()
    print(f"{kind:8s} {cycles:6d} cycles: RSS {rss1 - rss0:+8.1f} MiB   objects {objects1 - objects0:+9d}   "
          f"objects outside the bounded stores {len(gc.get_objects()) - cleared0:+9d}   ({seconds:.0f} s)",
          flush=True)


def clear_bounded_stores(framejit):
    """Empty the bounded process-wide stores: metrics and compile times, fake-op results by metadata
    (framejit's memo and torch's FakeTensorMode cache, 20,000 entries each: a new constant in each
    function is a new key). What is left beyond them is what the dead functions kept."""
    framejit.clear_metrics()
    from torch._subclasses.fake_tensor import FakeTensorMode
    FakeTensorMode.cache_clear()
    try:
        from framejit.translate import fake_memo
        fake_memo.SHARED.clear()
    except ImportError:
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=10_000)
    parser.add_argument("--kind", choices=KINDS, action="append")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    kinds = args.kind or list(KINDS)
    if args.child:
        measure(kinds[0], args.cycles)
        return
    env = dict(os.environ)
    env.setdefault("FRAMEJIT_DEBUG_DIR", str(Path("/tmp") / f"framejit-memory-churn-{os.getpid()}"))
    for kind in kinds:
        subprocess.run([sys.executable, __file__, "--child", "--kind", kind, "--cycles", str(args.cycles)],
                       env=env, check=True)


if __name__ == "__main__":
    main()
