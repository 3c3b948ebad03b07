"""Lookasides: callables the translator runs symbolically instead of inlining or calling them.

Python builtins, the standard library, dict/str methods, torch ops and state queries, context
managers, nn.Module calls. Each entry is `fn(tx, args, kwargs) -> Value`, registered in
dispatch.LOOKASIDES. Imports values/, source.py, dispatch.py and the leaves.
"""
