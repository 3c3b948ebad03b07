"""Symbolic values: the kinds on the translator's stack, and how they behave as Python objects.

base.py holds the core kinds; other modules hold one kind each (cells, functions, objects made in
the frame, classes called, nn.Modules, model outputs, namedtuples, generators, exceptions, operator
callables) or one protocol over all kinds (protocol.py: real value, truth, items, type; attrs.py:
attribute reads and writes; operators.py; containers.py). Imports only source.py, dispatch.py and the
leaves: it calls back into the interpreter through the translator it is handed (tx.call,
tx.call_method, tx.inline, tx.child, tx.load_global).
"""
