"""Symbolic execution of one frame's bytecode into a torch.fx graph (the run loop is translator.py).

Its rooms, lowest first; a module imports only its own room and the rooms below (tests/test_layout.py):

    dispatch.py, source.py    the opcode and lookaside tables; Sources (where a value came from)
    values/                   the symbolic value kinds, and how they behave as Python objects
    graph/, lookasides/       the fx graph with fake-tensor metadata; tables of special-cased callables
    guards/                   guards, and the machine words and state they read
    side_effects.py, context.py, calls.py
                              mutations to replay; the state of one conversion; the call dispatch
    ops/                      opcode handlers by family
    translator.py             the run loop

Calling a function runs its code, which calls more functions: the rooms below calls.py call back in
through the translator they are handed (tx.call, tx.call_method, tx.inline, tx.child, tx.load_global),
never by importing the rooms above them.
"""
