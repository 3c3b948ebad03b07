"""Symbolic sizes: which dimensions of a conversion's inputs are dynamic, the symbols standing for them
(torch's ShapeEnv under the conversion's FakeTensorMode), and the relations between them turned into
framejit's guard text.

    marks.py        framejit.mark_dynamic / maybe_mark_dynamic / mark_static: what the user asked
    memory.py       automatic dynamic: the sizes and numbers seen to change, per code and source
    policy.py       which dims of a tensor, and which numbers, a conversion makes symbolic
    symbols.py      ShapeContext: one ShapeEnv per conversion, its symbols and where each was read
    guard_text.py   the ShapeEnv's facts as one Python boolean expression, and in words

Imports only the leaves and torch: the translator hands it source expressions as text.
"""
