"""Command line of the differential fuzzer.

    python -m tests.fuzz --count N --seed S [--jobs J] [--out DIR] [--timeout T] [--minimize] [--gen-version 2|3]
        run programs S .. S+N-1; print "N programs, M mismatches by kind: ..."; write every failing
        program (program.py), its differences (diff.txt) and, with --minimize, a minimized program
        (min.py) to DIR/seed_<S>/, and DIR/summary.json
    python -m tests.fuzz --rerun DIR [--out DIR2]   run again the failing seeds of an earlier run
    python -m tests.fuzz --triage DIR               group an earlier run's failures by their first mismatch
    python -m tests.fuzz --show S                   print program S
    python -m tests.fuzz --replay FILE              run one program file, print its mismatches
    python -m tests.fuzz --shrink FILE --kind K [--needle TEXT]
                                                    minimize a program file for mismatch kind K
"""
import argparse
import collections
import json
import re
import sys
import time
from pathlib import Path

PRIORITY = ("worker_died", "timeout", "harness", "crash", "bug_warning", "fallback", "missing_exception",
            "exception", "aliasing", "attr", "arg", "global", "output", "stdout", "grad", "rng", "torch_state")


def primary_kind(kinds):
    for kind in PRIORITY:
        if kind in kinds:
            return kind
    return sorted(kinds)[0]


def _kinds(answer):
    kinds = {m["kind"] for m in answer.get("mismatches", ())}
    if "harness" in answer:
        kinds.add("harness")
    return kinds


def _write_failure(out, seed, answer, source):
    folder = out / f"seed_{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "program.py").write_text(source)
    lines = [f"[{m['kind']}] call {m['call']}: {m['where']}: {m['detail']}" for m in answer.get("mismatches", ())]
    if "harness" in answer:
        lines.append("[harness] " + answer["harness"])
    (folder / "diff.txt").write_text("\n".join(lines) + "\n")
    return folder


def run_many(args):
    from .generator import generate
    from .minimize import minimize
    from .pool import Pool

    out = Path(args.out) if args.out else None
    seeds = range(args.seed, args.seed + args.count)
    if args.rerun:
        seeds = sorted(int(s) for s in json.loads((Path(args.rerun) / "summary.json").read_text())["seeds"])
        args.count = len(seeds)
        args.gen_version = json.loads((Path(args.rerun) / "summary.json").read_text()).get("version", 1)
    per_kind = collections.Counter()
    primary = collections.Counter()
    failing = {}
    stats = collections.Counter()
    start = time.monotonic()
    done = 0
    with Pool(args.jobs, args.timeout) as pool:
        for job, answer in pool.run({"id": s, "seed": s, "version": args.gen_version} for s in seeds):
            done += 1
            seed = job["seed"]
            kinds = _kinds(answer)
            stats["eager_raised"] += bool(answer.get("eager_raised"))
            stats["no_graph"] += answer.get("graphs", 0) == 0
            stats["graphs"] += answer.get("graphs", 0)
            if kinds:
                failing[seed] = sorted(kinds)
                per_kind.update(kinds)
                primary[primary_kind(kinds)] += 1
                if out:
                    _write_failure(out, seed, answer,
                                   answer.get("source") or generate(seed, version=args.gen_version).source)
            if done % args.progress == 0:
                rate = done / (time.monotonic() - start)
                print(f"  {done}/{args.count} programs, {len(failing)} failing, {rate:.1f} programs/s",
                      file=sys.stderr, flush=True)
        elapsed = time.monotonic() - start
        if out and args.minimize:
            for seed, kinds in sorted(failing.items()):
                kind = primary_kind(kinds)
                if kind in ("timeout", "worker_died", "harness"):
                    continue
                print(f"minimizing seed {seed} ({kind})", file=sys.stderr, flush=True)
                try:
                    text, runs = minimize(generate(seed, version=args.gen_version).source, kind, pool)
                except ValueError as exc:               # not reproducible alone (order-dependent)
                    text, runs = f"# not minimized: {exc}\n", 0
                (out / f"seed_{seed}" / "min.py").write_text(text)
    summary = (f"{args.count} programs, {len(failing)} mismatches by kind: "
               + (", ".join(f"{k}={v}" for k, v in primary.most_common()) or "none"))
    print(summary)
    print(f"  (programs showing each kind, a program may show several: "
          f"{', '.join(f'{k}={v}' for k, v in per_kind.most_common()) or 'none'})")
    print(f"  {elapsed:.0f} s, {args.count / elapsed:.1f} programs/s; eagerly raising: {stats['eager_raised']}, "
          f"no graph compiled: {stats['no_graph']}, graphs compiled: {stats['graphs']}")
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(
            {"count": args.count, "seed": args.seed, "version": args.gen_version, "failing": len(failing),
             "primary": primary,
             "per_kind": per_kind, "seeds": failing, "seconds": elapsed, "stats": stats}, indent=1, default=dict))
    return 1 if failing else 0


def _shape_of(text):
    """A mismatch's text with the numbers, quoted strings and tensor values taken out."""
    text = re.sub(r"eager=.*", "values", text.split("\n")[0])
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "S", text)
    return re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "N", text)[:110]


def triage(args):
    """Group the failures of an earlier run by the shape of their first mismatch."""
    groups = collections.defaultdict(list)
    for folder in sorted(Path(args.triage).glob("seed_*")):
        lines = (folder / "diff.txt").read_text().split("\n")
        first = next((line for line in lines if line.startswith("[")), "[?]")
        kind, _, rest = first.partition("] ")
        where = rest.split(": ", 2)
        key = (kind + "]", _shape_of(where[1] if len(where) > 1 else rest),
               _shape_of(where[2] if len(where) > 2 else ""))
        groups[key].append(int(folder.name[5:]))
    for key, seeds in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(seeds):5d}  {' '.join(key)}\n       seeds {' '.join(map(str, seeds[:8]))}")
    return 0


def replay(args):
    from .pool import Pool

    with Pool(1, args.timeout) as pool:
        answer = pool.run_one(Path(args.replay).read_text(), name="replay")
    for m in answer.get("mismatches", ()):
        print(f"[{m['kind']}] call {m['call']}: {m['where']}: {m['detail']}")
    if "harness" in answer:
        print("[harness]", answer["harness"])
    print(f"graphs: {answer.get('graphs')}, graph breaks: {answer.get('breaks')}, "
          f"eager raised on {answer.get('eager_raised')} call(s)")
    return 1 if _kinds(answer) else 0


def shrink(args):
    from .minimize import minimize
    from .pool import Pool

    with Pool(1, args.timeout) as pool:
        text, runs = minimize(Path(args.shrink).read_text(), args.kind, pool, needle=args.needle,
                              log=lambda s: print(s, file=sys.stderr))
    print(text)
    print(f"# {runs} runs", file=sys.stderr)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per program (default 10)")
    parser.add_argument("--minimize", action="store_true", help="also write a minimized min.py per failure")
    parser.add_argument("--progress", type=int, default=500, help="print progress every this many programs")
    parser.add_argument("--rerun", metavar="DIR", help="run again the failing seeds of an earlier --out DIR")
    parser.add_argument("--triage", metavar="DIR", help="group the failures of an earlier --out DIR")
    parser.add_argument("--gen-version", type=int, default=1, choices=(1, 2, 3),
                        help="generator version: 1 (the CI slice's), 2 (adds stmts_v2's families) or 3 (adds "
                             "autocast blocks, aot_eager weighted up)")
    parser.add_argument("--show", type=int, metavar="SEED")
    parser.add_argument("--replay", metavar="FILE")
    parser.add_argument("--shrink", metavar="FILE")
    parser.add_argument("--kind", help="with --shrink: the mismatch kind to keep")
    parser.add_argument("--needle", help="with --shrink: text the kept mismatch must contain")
    args = parser.parse_args(argv)
    if args.show is not None:
        from .generator import generate
        print(generate(args.show, version=args.gen_version).source)
        return 0
    if args.replay:
        return replay(args)
    if args.triage:
        return triage(args)
    if args.shrink:
        if not args.kind:
            parser.error("--shrink needs --kind")
        return shrink(args)
    return run_many(args)


if __name__ == "__main__":
    sys.exit(main())
