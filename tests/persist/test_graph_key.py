"""A graph's cache key changes with everything that makes an entry valid (source, globals the graph
reads, inputs, grad mode, versions, backend options) and is the same in a fresh process for the same
program (or the cache could never hit)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

import framejit
from framejit.persist import graph_key as graph_key_module
from framejit.persist.graph_key import graph_key

ROOT = Path(__file__).resolve().parents[2]
SCALE = 2.0


def _keys_of(fn, *args, backend_name="inductor", options=None):
    keys = []

    def backend(gm, example_inputs):
        keys.append(graph_key(gm, example_inputs, backend_name, options))
        return gm.forward

    framejit.compile(fn, backend=backend)(*args)
    return keys


def scaled(x):
    return torch.relu(x) * SCALE


def test_changed_source_changes_the_key():
    def f(x):
        return torch.relu(x) * 2

    def g(x):
        return torch.relu(x) * 3

    x = torch.randn(4)
    assert _keys_of(f, x) != _keys_of(g, x)


def test_changed_global_changes_the_key():
    global SCALE
    x = torch.randn(4)
    before = _keys_of(scaled, x)
    SCALE = 3.0
    try:
        after = _keys_of(scaled, x)
    finally:
        SCALE = 2.0
    assert before != after


def test_inputs_state_versions_and_options_change_the_key(monkeypatch):
    x = torch.randn(4, 4)

    def f(x):
        return torch.relu(x) + 1

    base = _keys_of(f, x)
    assert _keys_of(f, torch.randn(4, 5)) != base
    assert _keys_of(f, x.t()) != base
    assert _keys_of(f, x.double()) != base
    assert _keys_of(f, x.requires_grad_(False).clone().requires_grad_(True)) != base
    with torch.no_grad():
        assert _keys_of(f, x) != base
    assert _keys_of(f, x, options={"mode": "max-autotune"}) != base
    assert _keys_of(f, x, backend_name="aot_eager") != base
    monkeypatch.setattr(torch, "__version__", "9.9.9")          # another torch
    assert _keys_of(f, x) != base
    monkeypatch.undo()
    assert _keys_of(f, x) == base
    monkeypatch.setattr(graph_key_module, "_FRAMEJIT_SOURCES", "another framejit")
    assert _keys_of(f, x) != base


def test_changed_parameter_values_of_a_constant_change_the_key():
    def f(x):
        return x + torch.tensor([1.0, 2.0])

    def g(x):
        return x + torch.tensor([1.0, 3.0])

    x = torch.randn(2)
    assert _keys_of(f, x) != _keys_of(g, x)


_PROGRAM = textwrap.dedent("""
    import torch, framejit
    from framejit.persist.graph_key import graph_key
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.LayerNorm(8))
    keys = []
    def backend(gm, example_inputs):
        keys.append(graph_key(gm, example_inputs, "inductor"))
        return gm.forward
    framejit.compile(model, backend=backend)(torch.randn(2, 8))
    print("KEYS", *keys)
""")


def test_same_program_same_key_in_a_fresh_process():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    outs = [subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    keys = [next(line for line in o.stdout.splitlines() if line.startswith("KEYS")) for o in outs]
    assert len(keys[0].split()) > 1 and keys[0] == keys[1], (keys, outs[0].stderr[-2000:])
