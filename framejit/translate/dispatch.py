"""The opcode handler table.

Handlers live in files grouped by family (ops_load_store, ops_calls, ops_operators, ops_control,
ops_containers, ops_exceptions) and register themselves with @handler("OPNAME", ...). A handler is
`fn(tx, inst)` and returns what happens next: None (fall through), an Instruction (jump there) or
RETURN (the frame returned). Unsupported situations raise GraphBreak.
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

