"""The translator's two dispatch tables: opcode -> handler, and callable -> lookaside.

Handlers live in files grouped by family (ops/load_store, ops/calls, ops/operators, ops/control,
ops/containers, ops/exceptions, ops/match, ops/imports) and register themselves with
@handler("OPNAME", ...). A handler is `fn(tx, inst)` and returns what happens next: None (fall
through), an Instruction (jump there) or RETURN (the frame returned). Unsupported situations raise
GraphBreak.

Lookasides are `fn(tx, args, kwargs) -> Value` standing in for a real callable (builtins, stdlib, torch
state queries, nn.Module calls, what a value kind needs: functools.partial, object.__new__...); the
module that implements one registers it with @lookaside(callable). calls.py looks calls up here.
"""
import dis

HANDLERS = {}
RETURN = object()


def handler(*opnames):
    def register(fn):
        for name in opnames:
            if name not in dis.opmap:
                raise ValueError(f"unknown opcode {name}")
            HANDLERS[name] = fn
        return fn
    return register


LOOKASIDES = {}


def lookaside(*fns):
    def register(impl):
        for f in fns:
            LOOKASIDES[f] = impl
        return impl
    return register


# Stand-ins for every function of one code object (decorator wrappers made per class or per call):
# `fn(tx, function, function_source, args, kwargs) -> Value`, looked up when a Python function is inlined.
CODE_LOOKASIDES = {}
