"""Where framejit's cold inductor first call spends its time: a CPU-clock stack sampler in one fresh process.

Why this exists (issue 24): bench/first_call.py says how long the first compiled call takes; this says
what in it takes the time, so that cold-start work goes where the time is. One child process per model
compiles it with framejit (backend="inductor") on empty cache directories. While the compile call and
the first call run, a thread samples the main thread's stack every few milliseconds and charges the main
thread's CPU time since the last sample (its own CPU clock, so the other jobs of a loaded machine do not
count) to the phase of the innermost phase function on the stack. cProfile was tried first: it made
vit's first call 5x slower and skewed the shares towards Python-heavy phases.

The phases are named by the functions that start them (torch's inductor and AOTAutograd functions are
only named here, to read the stack; nothing of torch._dynamo runs):

  imports                 importing modules (inductor's, on its first use in the process)
  framejit translate      framejit/translate/ (capture: bytecode to fx), minus the fake tensors it runs
  framejit fake tensors   FakeTensor dispatch under the translator (its shape propagation)
  framejit convert        framejit/convert/, runtime/, shapes/ outside the above (entry code, guards)
  framejit backend        framejit/backends/ outside inductor (passes, cache keys, fake copies)
  AOTAutograd             aot_module_simplified outside inductor's compile (tracing the joint/inference graph)
  inductor graph passes   pre-grad, joint-graph and post-grad passes
  lowering                GraphLowering.run (fx to inductor IR)
  scheduling + codegen    GraphLowering.codegen (fusion, kernel and wrapper source)
  load generated code     PyCodeCache.load_by_key_path (import of the wrapper module, waiting for the C++ builds)
  inductor (other)        the rest of compile_fx (cache keys and saves, setup)
  C++ compiler            the compiler subprocesses' own CPU (TORCHINDUCTOR_COMPILE_THREADS=1 here, so g++ is a
                          waited child of this process, not of inductor's worker pool); not in the main total

Usage: PYTHONPATH=$PWD .venv/bin/python bench/first_call_profile.py [model ...]
(models as in bench/first_call.py; default gpt2 resnet vit)
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INTERVAL = 0.01

# (path fragment, function name or None for any): phase. The innermost match on the stack wins, except that
# fake tensors count as their own phase only under framejit's translator.
PHASE_FUNCTIONS = (
    ("framejit/translate/", None, "framejit translate"),
    ("framejit/convert/", None, "framejit convert"),
    ("framejit/runtime/", None, "framejit convert"),
    ("framejit/shapes/", None, "framejit convert"),
    ("framejit/backends/", None, "framejit backend"),
    ("framejit/persist/", None, "framejit backend"),
    ("torch/_inductor/compile_fx.py", "compile_fx", "inductor (other)"),
    ("torch/_functorch/aot_autograd.py", "aot_module_simplified", "AOTAutograd"),
    ("torch/_inductor/compile_fx.py", "compile_fx_inner", "inductor (other)"),
    ("torch/_inductor/compile_fx.py", "run_pre_grad_passes", "inductor graph passes"),
    ("torch/_inductor/compile_fx.py", "_recursive_joint_graph_passes", "inductor graph passes"),
    ("torch/_inductor/compile_fx.py", "_recursive_post_grad_passes", "inductor graph passes"),
    ("torch/_inductor/graph.py", "run", "lowering"),
    ("torch/_inductor/graph.py", "codegen", "scheduling + codegen"),
    ("torch/_inductor/codecache.py", "load_by_key_path", "load generated code"),
)
FAKE_TENSORS = "torch/_subclasses/fake_tensor.py"
PHASES = ("imports", "framejit translate", "framejit fake tensors", "framejit convert", "framejit backend", "AOTAutograd",
          "inductor graph passes", "lowering", "scheduling + codegen", "load generated code", "inductor (other)",
          "other")


def _phase_of(frame):
    """The phase of the innermost phase function on `frame`'s stack ("imports" while a module is imported)."""
    fake = False
    stack = []
    while frame is not None:
        stack.append(frame.f_code)
        frame = frame.f_back
    if any(code.co_filename.startswith("<frozen importlib") for code in stack):
        return "imports"
    for code in stack:
        filename = code.co_filename.replace(os.sep, "/")
        if filename.endswith(FAKE_TENSORS):
            fake = True
        for fragment, name, phase in PHASE_FUNCTIONS:
            if fragment in filename and (name is None or code.co_name == name):
                if phase == "framejit translate" and fake:
                    return "framejit fake tensors"
                if phase == "framejit backend":       # which of framejit's backend modules
                    return f"{phase}: {Path(filename).stem}.{code.co_name}"
                return phase
    return "other"


class CpuSampler:
    """Charges the CPU time of thread `ident` to the phase its stack is in, sampled every INTERVAL s."""

    def __init__(self, ident):
        self.ident, self.clock = ident, time.pthread_getcpuclockid(ident)
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.samples = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        last = time.clock_gettime(self.clock)
        while not self.stop.wait(INTERVAL):
            now = time.clock_gettime(self.clock)
            frame = sys._current_frames().get(self.ident)
            phase = _phase_of(frame)
            self.seconds[phase] = self.seconds.get(phase, 0.0) + now - last
            self.samples += 1
            last = now
        self.own_cpu = time.thread_time()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def child(name):
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, str(ROOT))
    from bench import first_call
    model, args, kwargs = first_call.build(name)
    import framejit
    import torch._dynamo  # noqa: F401  (as bench/first_call.py: outside the timing on both sides)
    grad = torch.enable_grad() if name == "train" else torch.no_grad()
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with grad:
        start, cpu_start = time.perf_counter(), time.process_time()
        with CpuSampler(threading.get_ident()) as sampler:
            compiled = framejit.compile(model, backend="inductor")
            compiled(*args, **kwargs)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    phases = dict(sampler.seconds)
    phases["the sampler itself"] = sampler.own_cpu
    phases["other threads"] = cpu - sum(sampler.seconds.values()) - sampler.own_cpu
    backend = {k: v for k, v in phases.items() if k.startswith("framejit backend: ")}
    phases["framejit backend"] = sum(backend.values())
    libraries = sum(1 for _ in Path(os.environ["TORCHINDUCTOR_CACHE_DIR"]).rglob("*.so"))
    phases["C++ compiler"] = (children.ru_utime + children.ru_stime) - \
        (children_before.ru_utime + children_before.ru_stime)
    print("RESULT " + json.dumps({"wall": wall, "cpu": cpu, "phases": phases, "samples": sampler.samples,
                                  "conversions": len(framejit.metrics()), "libraries": libraries,
                                  "backend_functions": sorted(backend.items(), key=lambda kv: -kv[1])[:8]}))


def run_child(name):
    with tempfile.TemporaryDirectory(prefix="first_call_profile_") as tmp:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(Path(tmp, "inductor")),
                   FRAMEJIT_CACHE_DIR=str(Path(tmp, "framejit")), PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1",
                   TORCHINDUCTOR_COMPILE_THREADS="1", FRAMEJIT_CACHE_AOTI="0")
        proc = subprocess.run([sys.executable, __file__, "--child", name], env=env, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{name}: " + " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-5:]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=["gpt2", "resnet", "vit"])
    parser.add_argument("--child", metavar="MODEL", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        child(opts.child)
        return
    results = {}
    for name in opts.models:
        results[name] = r = run_child(name)
        print(f"{name}: first call {r['wall']:.2f} s wall, {r['cpu']:.2f} s CPU (process), "
              f"{r['conversions']} conversions, {r['libraries']} C++ libraries built, {r['samples']} samples", flush=True)
        for where, seconds in r["backend_functions"]:
            print(f"    {seconds:6.2f} s  {where}")
    print()
    print("CPU s by phase (share of the first call's process CPU without the sampler's own), cold caches")
    names = list(results)
    print("| phase | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for phase in (*PHASES, "the sampler itself", "other threads", "C++ compiler"):
        cells = []
        for name in names:
            phases = results[name]["phases"]
            value = phases.get(phase, 0.0)
            total = results[name]["cpu"] - phases["the sampler itself"]     # the work the sampler watched
            cells.append(f"{value:.2f}" + ("" if phase == "C++ compiler" else f" ({100 * value / total:.0f}%)"))
        print(f"| {phase} | " + " | ".join(cells) + " |")
    print("| first call, process CPU | " + " | ".join(f"{results[n]['cpu']:.2f}" for n in names) + " |")
    print("| C++ libraries built | " + " | ".join(str(results[n]["libraries"]) for n in names) + " |")
    print("| first call, wall | " + " | ".join(f"{results[n]['wall']:.2f}" for n in names) + " |")


if __name__ == "__main__":
    main()
