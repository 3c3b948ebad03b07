"""Dynamic shapes: conversions and per-call times of eager / framejit / torch.compile side by side.

Workloads (CPU, one thread, random weights, nothing downloaded):
  seq-sweep     attention-like function over 32 sequence lengths (3..34)
  batch-sweep   an MLP over batch sizes 1, 2, 3, 5, 8, 13, 21, 34
  generate      greedy generate() of 24 new tokens on a tiny Llama (KV cache on)
  train         a training step (forward, loss, backward) of the tiny Llama over 8 sequence lengths

For each: conversions (graphs compiled; for torch.compile, graphs its backend received), the total
time of the first pass (capture included) and the median per-call time of a second pass over the same
inputs (every size then hits), for eager, framejit (dynamic=None: automatic dynamic; and dynamic=True)
and torch.compile (its default, automatic dynamic). Both compilers use the eager backend.

Usage: .venv/bin/python bench/dynamic.py [workload ...]
This is bench/ code: it alone may import torch._dynamo.
"""
from __future__ import annotations

import copy
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import framejit  # noqa: E402


def attention(x, w):
    h = x @ w
    scores = h @ h.transpose(-1, -2) / h.shape[-1] ** 0.5
    return scores.softmax(-1) @ h


def seq_sweep():
    w = torch.randn(64, 64)
    return attention, [((torch.randn(4, n, 64), w), {}) for n in range(3, 35)], torch.no_grad


def batch_sweep():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 10))
    return mlp, [((torch.randn(b, 64),), {}) for b in (1, 2, 3, 5, 8, 13, 21, 34)], torch.no_grad


def tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      attn_implementation="eager")
    return LlamaForCausalLM(cfg)


def generate():
    model = tiny_llama().eval()
    ids = torch.randint(0, 256, (1, 8), generator=torch.Generator().manual_seed(1))

    def run(m, ids):
        return m.generate(ids, max_new_tokens=24, do_sample=False, pad_token_id=0)
    return run, [((ids,), {})], torch.no_grad, model


def train():
    model = tiny_llama()
    gen = torch.Generator().manual_seed(2)

    def step(m, ids):
        loss = m(input_ids=ids, labels=ids).loss
        loss.backward()
        m.zero_grad(set_to_none=True)
        return loss.detach()
    calls = [((torch.randint(0, 256, (2, n), generator=gen),), {}) for n in (7, 12, 9, 20, 15, 31, 11, 26)]
    return step, calls, _grad_on, model


class _grad_on:
    def __enter__(self):
        self.was = torch.is_grad_enabled()
        torch.set_grad_enabled(True)

    def __exit__(self, *exc):
        torch.set_grad_enabled(self.was)


WORKLOADS = {"seq-sweep": seq_sweep, "batch-sweep": batch_sweep, "generate": generate, "train": train}


class Counting:
    def __init__(self):
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return gm.forward


def _time_pass(fn, calls):
    times = []
    for args, kwargs in calls:
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - t0)
    return sum(times), statistics.median(times)


def measure(name):
    made = WORKLOADS[name]()
    fn, calls, mode = made[:3]
    module = made[3] if len(made) > 3 else None
    rows = {}

    def variants():
        yield "eager", None, lambda: fn
        for label, dynamic in (("framejit", None), ("framejit dyn=True", True)):
            counter = framejit.CompileCounter()

            def make(counter=counter, dynamic=dynamic):
                framejit.reset()
                if module is not None:
                    compiled = framejit.compile(module, backend=counter, dynamic=dynamic)
                    return lambda *a, **k: fn(compiled, *a, **k)
                return framejit.compile(fn, backend=counter, dynamic=dynamic)
            yield label, counter, make
        counter = Counting()

        def make_tc(counter=counter):
            torch._dynamo.reset()
            if module is not None:      # its forward compiled, as generate() calls self(...) on the module
                compiled = copy.deepcopy(module)
                compiled.forward = torch.compile(compiled.forward, backend=counter)
                return lambda *a, **k: fn(compiled, *a, **k)
            return torch.compile(fn, backend=counter)
        yield "torch.compile", counter, make_tc

    for label, counter, make in variants():
        run = make()
        if module is not None and label == "eager":
            run = (lambda *a, **k: fn(module, *a, **k))
        with mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first, _ = _time_pass(run, calls)
            _, steady = _time_pass(run, calls)
        graphs = "-" if counter is None else getattr(counter, "frame_count", getattr(counter, "graphs", "-"))
        rows[label] = (graphs, first, steady)
    print(f"\n{name}: {len(calls)} calls")
    print(f"  {'':<18} {'conversions':>11} {'first pass':>12} {'per call (2nd pass, median)':>30}")
    for label, (graphs, first, steady) in rows.items():
        print(f"  {label:<18} {graphs!s:>11} {first * 1e3:10.1f}ms {steady * 1e6:26.1f}us")
    return rows


def main(argv):
    torch.set_num_threads(1)
    names = argv or list(WORKLOADS)
    print(f"torch {torch.__version__}, 1 thread, eager backends")
    for name in names:
        measure(name)


if __name__ == "__main__":
    main(sys.argv[1:])
