"""Callables made in the frame: functions and lambdas (with their closure cells), functools.partial,
operator.itemgetter / attrgetter / methodcaller, and the compiled callee a graph break calls.
"""
