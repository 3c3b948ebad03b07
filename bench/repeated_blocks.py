"""Per-call time of inductor graphs with repeated blocks cut into pieces (on) against one whole graph (off).

Why this exists (issue 24): backends/passes/repeated_blocks.py compiles each distinct repeated block
once, which shortens the cold first call, but a graph run as pieces may cost per call (fusion lost at
the pieces' edges, the Python runner between pieces, one autograd Function per piece). The pass stays
where it does not cost per call; this measures that, side by side in one process so that the load of
a shared machine falls on both sides alike:

  for each model, the same model compiled twice with framejit's inductor backend, the pass on and off;
  then ROUNDS alternating rounds (on first, then off first), each timing CALLS calls of one side;
  the table gives each side's median per-call wall time and CPU time (this process's; on a loaded machine
  wall time mostly measures the other jobs) over the rounds, the ratios on / off, and the number of
  inductor compiles each side made (pieces of one structure share one compile).

Modes: `infer` (eval, torch.no_grad()) and `train` (train mode, forward + loss + backward; gradients
set to None between steps, no optimizer so both sides run the same weights).
Models: gpt2 (4 layers, 256 wide, 64 tokens: bench/first_call.py's), llama (4 layers, 256 wide, 64
tokens), bert (4 layers, 256 wide, 64 tokens), resnet (bench/first_call.py's: 6 residual blocks).

Usage: PYTHONPATH=$PWD .venv/bin/python bench/repeated_blocks.py [--modes infer,train] [--rounds N]
       [--calls N] [--repeated-blocks on,off] [model ...]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import framejit  # noqa: E402
from bench import first_call  # noqa: E402
from framejit.backends.inductor import compile_inductor  # noqa: E402

MODELS = ("gpt2", "llama", "bert", "resnet")


def _tokens():
    return torch.randint(0, 512, (1, 64), generator=torch.Generator().manual_seed(1))


def _llama():
    import transformers
    config = transformers.LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                      attention_dropout=0.0, use_cache=False)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config), {"input_ids": _tokens()}


def _bert():
    import transformers
    config = transformers.BertConfig(vocab_size=512, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                     intermediate_size=512, max_position_embeddings=64, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    return transformers.BertForMaskedLM(config), {"input_ids": _tokens()}


def build(name):
    """(model, kwargs of its call)."""
    if name == "gpt2":
        model, _, kwargs = first_call._gpt2()
        model.config.use_cache = False
        return model, kwargs
    if name == "llama":
        return _llama()
    if name == "bert":
        return _bert()
    if name == "resnet":
        model, args, _ = first_call._resnet()
        return model, {"x": args[0]}
    raise KeyError(name)


class Backend:
    """framejit's inductor backend with the repeated-blocks pass on or off, counting inductor compiles."""

    def __init__(self, on):
        self.on = on
        self.compiles = 0

    def __call__(self, gm, example_inputs):
        import torch._inductor.compile_fx as compile_fx_module
        real = compile_fx_module.compile_fx

        def counted(*args, **kwargs):
            self.compiles += 1
            return real(*args, **kwargs)
        compile_fx_module.compile_fx = counted
        try:
            return compile_inductor(gm, example_inputs, repeated_blocks=self.on)
        finally:
            compile_fx_module.compile_fx = real


def _output_tensor(out):
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits"):
        return out.logits
    return out[0]


def step_for(mode, compiled, model, kwargs):
    if mode == "infer":
        def step():
            with torch.no_grad():
                return _output_tensor(compiled(**kwargs))
        return step

    def step():
        out = _output_tensor(compiled(**kwargs))
        out.float().square().mean().backward()
        for p in model.parameters():
            p.grad = None
        return out
    return step


def time_calls(step, calls):
    """(median wall time, median CPU time of this process) of one call, over `calls` calls."""
    walls, cpus = [], []
    for _ in range(calls):
        start, cpu_start = time.perf_counter(), time.process_time()
        step()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu_start)
    return statistics.median(walls), statistics.median(cpus)


def measure(name, mode, sides, rounds, calls):
    model, kwargs = build(name)
    model.train(mode == "train")
    steps, backends = {}, {}
    for side in sides:
        backends[side] = Backend(side == "on")
        compiled = framejit.compile(model, backend=backends[side])
        steps[side] = step_for(mode, compiled, model, kwargs)
        for _ in range(3):                          # compile (and the backward's lazy compile), then warm up
            steps[side]()
    with torch.no_grad():
        if mode == "infer" and len(sides) == 2:     # both sides compute the same thing
            a, b = (steps[s]() for s in sides)
            torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-3)
    compiled_before = {side: backends[side].compiles for side in sides}
    walls, cpus = {side: [] for side in sides}, {side: [] for side in sides}
    for r in range(rounds):
        for side in (sides if r % 2 == 0 else sides[::-1]):
            wall, cpu = time_calls(steps[side], calls)
            walls[side].append(wall)
            cpus[side].append(cpu)
    if any(backends[s].compiles != compiled_before[s] for s in sides):
        print(f"  ({name} {mode}: compiled again while timing)", flush=True)
    return {side: (statistics.median(walls[side]), statistics.median(cpus[side]), backends[side].compiles)
            for side in sides}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="infer,train")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--repeated-blocks", default="on,off", help="the sides, in order: on,off (or one of them)")
    parser.add_argument("models", nargs="*")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    sides = args.repeated_blocks.split(",")
    print(f"{'model':8} {'mode':6} " + " ".join(f"{s + ' ms':>9} {s + ' cpu ms':>10} {s + ' compiles':>12}"
                                                for s in sides) + ("   on/off  cpu on/off" if len(sides) == 2 else ""))
    for name in args.models or MODELS:
        for mode in args.modes.split(","):
            got = measure(name, mode, sides, args.rounds, args.calls)
            line = f"{name:8} {mode:6} " + " ".join(f"{got[s][0] * 1e3:9.3f} {got[s][1] * 1e3:10.3f} {got[s][2]:12d}"
                                                    for s in sides)
            if len(sides) == 2:
                line += f"   {got['on'][0] / got['off'][0]:6.3f}  {got['on'][1] / got['off'][1]:10.3f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
