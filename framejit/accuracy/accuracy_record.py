"""What the accuracy mode found, written where a person (and a bug report) can read it.

One directory per finding under <debug_dir>/accuracy/ (directories mode 0700, created exclusively, never
overwritten): `report.txt` (which graph, the first differing output, the smallest failing subgraph),
`graph.py` (the graph's fx code), `inputs.pt` (its tensor inputs, detached; other inputs as None, their
repr in the report), and when the minifier found a subgraph `minified.py` and `minified_inputs.pt`.
The tensor files hold only tensors and lists: `torch.load(path, weights_only=True)` reads them without
unpickling code.
"""
from __future__ import annotations

import datetime
import os
import re
from pathlib import Path

import torch


def write_accuracy_record(debug_dir, graph_name, message, gm, inputs, minified=None):
    """Write the finding; the directory's path, or None when it could not be written (never raises)."""
    try:
        where = _new_directory(Path(debug_dir) / "accuracy", graph_name)
        _write(where / "report.txt", message + "\n\ninputs:\n" + "".join(
            f"  [{i}] {_describe(v)}\n" for i, v in enumerate(inputs)))
        _write(where / "graph.py", gm.code)
        _save(where / "inputs.pt", inputs)
        if minified is not None:
            _write(where / "minified.py", minified.graph_module.code)
            _save(where / "minified_inputs.pt", minified.inputs)
        return where
    except Exception:
        return None


def _new_directory(root, graph_name):
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", graph_name)[:80]
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        path = root / f"{stem}-{stamp}-{os.getpid()}-{n}"
        try:
            path.mkdir(mode=0o700)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(root)


def _write(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _save(path, values):
    tensors = [v.detach().clone() if isinstance(v, torch.Tensor) else v if isinstance(v, (int, float, bool))
               else None for v in values]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        torch.save(tensors, f)


def _describe(value):
    if isinstance(value, torch.Tensor):
        return f"tensor {value.dtype} {tuple(value.shape)} stride {value.stride()} requires_grad={value.requires_grad}"
    return f"{type(value).__name__} {value!r:.80}"
