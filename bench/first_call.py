"""Time to first result with inductor: framejit vs torch.compile, cold and warm, in fresh processes.

Why this exists (issue 24): users compile with inductor, and a process that starts again (checkpoint
restart, a serving replica, CI) pays the first compiled call again. This measures the compile call and
that first call (import of framejit / torch._dynamo and the model build excluded) in a fresh subprocess per measurement:

  cold   fresh, empty cache directories for both sides (TORCHINDUCTOR_CACHE_DIR, and FRAMEJIT_CACHE_DIR
         for framejit)
  warm   the same program started again, with the directories the cold run filled

for torch.compile (backend="inductor") and framejit (backend="inductor") in one of three modes of its
AOTInductor libraries (FRAMEJIT_CACHE_AOTI):

  framejit        the default (`background` libraries, compile behind): a static graph's first call (inference
                  or training) answers with its fx code while the JIT compile runs on a worker thread, and
                  the second call waits for it; once the worker is idle, a child at nice 19 builds the
                  graphs' libraries; the warm run starts once those children have ended (the time they took
                  is printed as `libraries`)
  framejit_waits  the default with FRAMEJIT_COMPILE_BEHIND=0: the first call waits for the JIT compile
  framejit_jit    `0`: no libraries; a warm process loads the stored conversion and inductor's own caches
  framejit_aoti   `1`: the libraries are built during the first call
  framejit_tiered the default libraries with FRAMEJIT_TIERED=1 (backends/tiered.py): the first calls run the
                  graphs' fx code while the child builds their libraries; the child process calls on
                  (every 0.5 s, at most --poll seconds) until every such graph runs its library (or its
                  JIT-compiled code): `compiled` is the time from the compile call until then, `fx call` a
                  call's time before the switch, and the steady per-call time is measured after it

Every child calls a second time right after the first (no work in between: the compile behind the first
call overlaps nothing of the user's), and reports when that call ended: `second`, from the compile call,
is when the first result of compiled code was there on every side but tiered's.

Then prints the table with the ratios framejit / torch.compile. Each child also checks that its result equals eager's (allclose),
and reports the steady per-call time (median of a few calls) so a faster start never hides a slower call.
Wall time is what the table shows; each line also gives the child's own CPU time of the first call (on a
loaded machine wall time mostly measures the other jobs; C++ compiler subprocesses are not in it).

Models: resnet (6 residual conv blocks, 32x32 images), vit and llama_kv (bench/zoo.py, llama with its
KV cache on), gpt2 (4 layers, 256 wide, 64 tokens), unet (diffusers' UNet2DModel, skipped with a note
when diffusers is not importable), train (a GPT-2 training step: 2 layers, forward + loss + backward +
SGD step compiled as one function).

Usage: .venv/bin/python bench/first_call.py [--runs N] [--sides framejit,torch] [model ...]
(--sides takes any of framejit, framejit_waits, framejit_jit, framejit_aoti, framejit_tiered, torch; the default is framejit,torch)
The default is every model, one run each (about 4 minutes per model on 2 cores: inductor is slow cold).
This is bench/ code: it alone may call torch.compile.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("resnet", "vit", "gpt2", "llama_kv", "unet", "train")
AOTI_MODES = {"framejit": "background", "framejit_jit": "0", "framejit_aoti": "1", "framejit_tiered": "background",
              "framejit_waits": "background"}
BACKGROUND_SIDES = ("framejit", "framejit_tiered", "framejit_waits")      # sides whose cold run leaves library builds behind


# ---------------------------------------------------------------- the models (built in the child)

def _resnet():
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(x + self.bn2(self.conv2(y)))

    class ResNet(nn.Module):
        def __init__(self, c=16, blocks=6, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
            self.blocks = nn.Sequential(*[Block(c) for _ in range(blocks)])
            self.head = nn.Linear(c, classes)

        def forward(self, x):
            x = self.blocks(self.stem(x))
            return self.head(x.mean((2, 3)))

    torch.manual_seed(0)
    return ResNet().eval(), (torch.randn(8, 3, 32, 32),), {}


def _zoo(name):
    sys.path.insert(0, str(ROOT))
    from bench import zoo
    entry = zoo.get(name)
    model = entry.build()
    return model, (), entry.inputs()


def _gpt2_config(layers):
    import transformers
    return transformers.GPT2Config(vocab_size=512, n_positions=64, n_embd=256, n_layer=layers, n_head=4,
                                   resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)


def _gpt2():
    import torch
    import transformers
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(_gpt2_config(4)).eval()
    ids = torch.randint(0, 512, (1, 64), generator=torch.Generator().manual_seed(1))
    return model, (), {"input_ids": ids}


def _unet():
    import torch
    import diffusers
    torch.manual_seed(0)
    model = diffusers.UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                                  block_out_channels=(16, 32), norm_num_groups=8,
                                  down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                                  up_block_types=("AttnUpBlock2D", "UpBlock2D")).eval()
    return model, (torch.randn(1, 3, 16, 16), torch.tensor([10])), {}


def _train():
    import torch
    import transformers
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(_gpt2_config(2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ids = torch.randint(0, 512, (2, 64), generator=torch.Generator().manual_seed(1))

    def step(ids):
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    return step, (ids,), {}


def build(name):
    if name == "resnet":
        return _resnet()
    if name in ("vit", "llama_kv"):
        return _zoo(name)
    if name == "gpt2":
        return _gpt2()
    if name == "unet":
        return _unet()
    if name == "train":
        return _train()
    raise KeyError(name)


def _first_tensor(out):
    import torch
    if isinstance(out, torch.Tensor):
        return out
    for attr in ("logits", "sample", "last_hidden_state"):
        if hasattr(out, attr):
            return getattr(out, attr)
    if isinstance(out, (tuple, list)):
        return _first_tensor(out[0])
    raise TypeError(f"no tensor in {type(out).__name__}")


def _collect_tiers(side):
    """The tiered graphs framejit makes in this process (their `framejit_tiers`: where each one is)."""
    seen = []
    if side != "framejit_tiered":
        return seen
    from framejit.backends import tiered
    make = tiered.answering_while_built

    def collecting(*args, **kwargs):
        run = make(*args, **kwargs)
        seen.append(run.framejit_tiers)
        return run
    tiered.answering_while_built = collecting
    return seen


def _until_compiled(compiled, args, kwargs, tiers, start, poll):
    """Call every 0.5 s until no tiered graph runs its fx code (at most `poll` s after `start`); (seconds from
    `start` to the call after the last switch or None, this process's CPU until then, median fx call s)."""
    import time as clock
    fx_times = []
    while any(t.now == "fx" for t in tiers) and clock.perf_counter() - start < poll:
        clock.sleep(0.5)
        began = clock.perf_counter()
        compiled(*args, **kwargs)
        fx_times.append(clock.perf_counter() - began)
    done = not any(t.now == "fx" for t in tiers)
    return (clock.perf_counter() - start if done else None, clock.process_time(),
            statistics.median(fx_times) if fx_times else None)


def child(name, side, poll=900.0):
    """Build `name`, compile it on `side`, time the first call; print one JSON line."""
    import torch
    torch.set_num_threads(1)
    is_train = name == "train"
    model, args, kwargs = build(name)
    # eager's result on a copy of the state (a training step changes the weights)
    if is_train:
        reference = None
    else:
        with torch.no_grad():
            reference = _first_tensor(model(*args, **kwargs)).clone()
    sys.path.insert(0, str(ROOT))
    if side.startswith("framejit"):
        import framejit
    tiers = _collect_tiers(side)
    # both sides' own imports stay outside the timing; torch._dynamo on both: torch.compile imports it,
    # and so does framejit's first conversion (torch's FakeTensorMode imports torch._dynamo.config). A
    # transformers model has imported it already; resnet's framejit row paid ~1.2 s CPU for it that
    # torch's row did not (session 24)
    import torch._dynamo  # noqa: F401
    grad = torch.enable_grad() if is_train else torch.no_grad()
    with grad:
        # the compile call is timed too: torch.compile imports inductor and starts its compile workers
        # there, framejit does that work in the first call
        start, cpu_start = time.perf_counter(), time.process_time()
        compiled = framejit.compile(model, backend="inductor") if side.startswith("framejit") else \
            torch.compile(model, backend="inductor")
        out = compiled(*args, **kwargs)
        first, first_cpu = time.perf_counter() - start, time.process_time() - cpu_start
        result = _first_tensor(out).detach().clone()
        compiled(*args, **kwargs)                   # at once: nothing of the program's overlaps a compile
        second = time.perf_counter() - start
        compiled_at, compiled_cpu, fx_call = first, first_cpu, None
        if tiers:
            compiled_at, compiled_cpu, fx_call = _until_compiled(compiled, args, kwargs, tiers, start, poll)
            compiled_cpu -= cpu_start
            tiered_out = _first_tensor(compiled(*args, **kwargs)).detach()
            if reference is not None and not torch.allclose(tiered_out, reference, rtol=1e-3, atol=1e-3):
                reference = reference + float("nan")        # the compiled code's result is checked too
        times = []
        for _ in range(5):
            start = time.perf_counter()
            compiled(*args, **kwargs)
            times.append(time.perf_counter() - start)
    if reference is not None:
        ok = bool(torch.allclose(result, reference, rtol=1e-3, atol=1e-3))
    else:
        ok = bool(torch.isfinite(result).all())
    print("RESULT " + json.dumps({"first": first, "cpu": first_cpu, "call": statistics.median(times), "ok": ok,
                                  "second": second,
                                  "compiled": compiled_at, "compiled_cpu": compiled_cpu, "fx_call": fx_call,
                                  "tiers": sorted({t.now for t in tiers}), "graphs_tiered": len(tiers)}))


# ---------------------------------------------------------------- the parent

def run_child(name, side, inductor_dir, framejit_dir, timeout, poll):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(inductor_dir), FRAMEJIT_CACHE_DIR=str(framejit_dir),
               PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1",
               FRAMEJIT_CACHE_AOTI=AOTI_MODES.get(side, "0"), FRAMEJIT_TIERED="1" if side == "framejit_tiered" else "0",
               FRAMEJIT_COMPILE_BEHIND="1" if side == "framejit" else "0")
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", name, side, "--poll", str(poll)], env=env,
                              capture_output=True, text=True, timeout=timeout + poll)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s wall"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
    return {"error": " | ".join(tail)}


def wait_for_libraries(framejit_dir, timeout):
    """Seconds until no background library build holds a marker in `framejit_dir` (aoti_background.py's
    `building/<key>` files, removed by each child when it ends), or None past `timeout`."""
    start = time.perf_counter()
    building = Path(framejit_dir, "building")
    while time.perf_counter() - start < timeout:
        if not building.is_dir() or not any(building.iterdir()):
            return time.perf_counter() - start
        time.sleep(1.0)
    return None


def _available(name):
    if name != "unet":
        return True
    try:
        import importlib.util
        return importlib.util.find_spec("diffusers") is not None
    except Exception:
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--runs", type=int, default=1, help="cold+warm pairs per model and side")
    parser.add_argument("--sides", default="framejit,torch")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--poll", type=float, default=900,
                        help="framejit_tiered: seconds to wait for the compiled code to run, at most")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "SIDE"), help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        child(*opts.child, poll=opts.poll)
        return
    sides = opts.sides.split(",")
    rows = []
    for name in opts.models:
        if not _available(name):
            print(f"{name}: skipped (diffusers is not importable)", flush=True)
            continue
        row = {"model": name}
        for side in sides:
            for run in range(opts.runs):
                with tempfile.TemporaryDirectory(prefix="first_call_") as tmp:
                    inductor_dir, framejit_dir = Path(tmp, "inductor"), Path(tmp, "framejit")
                    for phase in ("cold", "warm"):
                        r = run_child(name, side, inductor_dir, framejit_dir, opts.timeout, opts.poll)
                        row.setdefault((side, phase), []).append(r)
                        shown = f"{r['first']:.2f}s (this process's CPU {r['cpu']:.2f}s), second call ends " \
                            f"{r['second']:.2f}s, call {r['call'] * 1e3:.2f}ms ok={r['ok']}" if "first" in r \
                            else r["error"]
                        print(f"  {name:9} {side:13} {phase:5} run {run}: {shown}", flush=True)
                        if r.get("graphs_tiered"):
                            when = f"{r['compiled']:.2f}s (this process's CPU {r['compiled_cpu']:.2f}s)" \
                                if r["compiled"] is not None else "never (poll limit)"
                            fx = f"{r['fx_call'] * 1e3:.2f}ms" if r["fx_call"] is not None else "-"
                            print(f"  {name:9} {side:13} {phase:5} run {run}: {r['graphs_tiered']} graph(s) tiered, "
                                  f"now {r['tiers']}; compiled code runs {when} after the compile call; fx call {fx}, "
                                  f"call after the switch {r['call'] * 1e3:.2f}ms", flush=True)
                        if phase == "cold" and side in BACKGROUND_SIDES:
                            waited = wait_for_libraries(framejit_dir, opts.timeout)
                            r["libraries"] = waited
                            print(f"  {name:9} {side:13} libraries built in the background: "
                                  + (f"{waited:.0f}s wall after the cold process" if waited is not None
                                     else "not finished, warm run starts anyway"), flush=True)
        rows.append(row)
    _print_table(rows, sides)


def _fmt(results, key="first"):
    vals = [r for r in results if key in r]
    if not vals:
        return "error"
    if key == "call":
        return " / ".join(f"{r[key] * 1e3:.2f}" for r in vals)
    if key == "second":
        return " / ".join(f"{r[key]:.2f}" for r in vals)
    return " / ".join(f"{r['first']:.2f} [{r['cpu']:.2f}]" for r in vals)


def _best(results, key="first"):
    vals = [r[key] for r in results if key in r]
    return min(vals) if vals else None


def _print_table(rows, sides):
    ours = [side for side in sides if side != "torch"]
    print()
    print("wall s [this process's CPU s]; ratios framejit / torch.compile, wall then CPU")
    heads = [f"{side} {phase}" for phase in ("cold", "warm") for side in sides]
    heads += [f"{side} {phase} ratio" for side in ours for phase in ("cold", "warm")]
    heads += ["call ms " + " / ".join(sides)]
    heads += ["cold: second call ends s " + " / ".join(sides)]
    tiered = [side for side in sides if side == "framejit_tiered"]
    heads += [f"{side} cold: compiled code runs s [CPU s] / fx call ms / call after ms" for side in tiered]
    print("| model | " + " | ".join(heads) + " |")
    print("|---|" + "---:|" * len(heads))
    for row in rows:
        cells = [row["model"]]
        for phase in ("cold", "warm"):
            for side in sides:
                cells.append(_fmt(row.get((side, phase), [])))
        for side in ours:
            for phase in ("cold", "warm"):
                ratios = []
                for key in ("first", "cpu"):
                    t, f = _best(row.get(("torch", phase), []), key), _best(row.get((side, phase), []), key)
                    ratios.append(f"{f / t:.3f}" if t and f else "-")
                cells.append(" [".join(ratios) + "]")
        cells.append(" / ".join(_fmt(row.get((side, "warm"), []), "call") for side in sides))
        cells.append(" / ".join(_fmt(row.get((side, "cold"), []), "second") for side in sides))
        for side in tiered:
            runs = row.get((side, "cold"), [])
            cells.append(" / ".join(("never" if r.get("compiled") is None else f"{r['compiled']:.2f} [{r['compiled_cpu']:.2f}]")
                                    + (f" / {r['fx_call'] * 1e3:.2f}" if r.get("fx_call") is not None else " / -")
                                    + f" / {r['call'] * 1e3:.2f}"
                                    for r in runs if "first" in r) or "error")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
