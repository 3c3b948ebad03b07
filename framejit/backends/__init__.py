"""Backends: turn a captured fx GraphModule into a callable.

A backend is `fn(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> callable`; example
inputs are always the real tensors of the call being converted. Register one by name with
`register_backend`, or pass any such callable to `framejit.compile(backend=...)`.
"""
from .registry import BACKENDS, CompileCounter, lookup_backend, register_backend

__all__ = ["BACKENDS", "CompileCounter", "lookup_backend", "register_backend"]
