"""Every torch.nn module class, built with default (or the smallest usual) constructor arguments and
called on the first small input it accepts eagerly; with --refresh, torch.compile's graphs and breaks
for each, written to tests/models/nn_sweep_expected.py for tests/models/test_nn_sweep.py.

Why this exists: issue 25 asks that framejit captures every torch.nn module in one graph wherever
torch.compile does. Running torch.compile in the test suite is slow, so its answer is stored as data
and refreshed here: `.venv/bin/python bench/nn_sweep.py --refresh`. Without --refresh this prints
framejit's graphs/breaks beside the stored torch.compile answer.
This is bench/ code: it alone (with comparing tests) may call torch.compile.
"""
from __future__ import annotations

import inspect
import sys
import warnings
from pathlib import Path

import torch
from torch import nn

# constructor arguments tried in order, then inputs tried in order: the first pair that runs eagerly
CONSTRUCTORS = [(), (4,), (4, 4), (4, 4, 3), (4, 2, 8)]
INPUTS = [(2, 4), (2, 4, 8), (2, 4, 8, 8), (2, 4, 4, 4, 4), (4,), (3, 2, 4)]
SKIP = {"Module", "Container", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Sequential",
        "LazyModuleMixin", "RNNBase", "RNNCellBase", "Identity"}   # containers and bases: no forward of their own
EXPECTED = Path(__file__).resolve().parents[1] / "tests" / "models" / "nn_sweep_expected.py"


def module_classes():
    out = []
    for name in sorted(dir(nn)):
        cls = getattr(nn, name)
        if inspect.isclass(cls) and issubclass(cls, nn.Module) and name not in SKIP and not name.startswith("_") \
                and "Lazy" not in name and cls.forward is not nn.Module.forward:
            out.append(name)
    return out


def _randn(shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def build_case(name):
    """(module in eval mode, input tensor shape) for nn.<name>, or None when no tried pair runs eagerly.
    Multi-input modules (losses, bilinear, attention) get the same input several times when they take
    several tensors."""
    cls = getattr(nn, name)
    n_inputs = _tensor_arity(cls)
    for ctor in CONSTRUCTORS:
        try:
            torch.manual_seed(0)
            module = cls(*ctor).eval()
        except Exception:
            continue
        for shape in INPUTS:
            try:
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    module(*[_randn(shape, i) for i in range(n_inputs)])
            except Exception:
                continue
            return ctor, shape, n_inputs
    return None


def _tensor_arity(cls):
    params = list(inspect.signature(cls.forward).parameters.values())[1:]
    required = [p for p in params if p.default is inspect.Parameter.empty and
                p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return max(1, len(required))


def make(name, ctor):
    torch.manual_seed(0)
    return getattr(nn, name)(*ctor).eval()


def inputs(shape, n):
    return [_randn(shape, i) for i in range(n)]


def torch_compile_answer(name, ctor, shape, n):
    import torch._dynamo
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    graphs = []
    compiled = torch.compile(make(name, ctor), backend=lambda gm, ex: graphs.append(gm) or gm.forward)
    with torch.no_grad():
        compiled(*inputs(shape, n))
    return len(graphs), sum(counters["graph_break"].values())


def main(argv):
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    if "--refresh" in argv:
        rows = {}
        for name in module_classes():
            case = build_case(name)
            if case is None:
                continue
            ctor, shape, n = case
            try:
                rows[name] = (ctor, shape, n) + torch_compile_answer(name, ctor, shape, n)
            except Exception as exc:
                print(f"{name}: torch.compile raised {type(exc).__name__}", file=sys.stderr)
        lines = ['"""torch.compile (torch 2.13.0, eager backend) on every torch.nn module class bench/nn_sweep.py builds:',
                 'name -> (constructor args, input shape, number of inputs, graphs, breaks). Refreshed by',
                 '`.venv/bin/python bench/nn_sweep.py --refresh`; read by tests/models/test_nn_sweep.py."""', "",
                 "TORCH_COMPILE = {"]
        lines += [f"    {name!r}: {row!r}," for name, row in rows.items()]
        lines.append("}")
        EXPECTED.write_text("\n".join(lines) + "\n")
        print(f"{len(rows)} classes written to {EXPECTED}")
        return
    sys.path.insert(0, str(EXPECTED.parents[2]))
    import framejit
    from tests.models.nn_sweep_expected import TORCH_COMPILE
    for name, (ctor, shape, n, tc_graphs, tc_breaks) in TORCH_COMPILE.items():
        framejit.reset()
        with torch.no_grad():
            r = framejit.explain(make(name, ctor))(*inputs(shape, n))
        print(f"{name:32s} fj {r.graph_count}/{r.graph_break_count}  tc {tc_graphs}/{tc_breaks}")


if __name__ == "__main__":
    main(sys.argv[1:])
