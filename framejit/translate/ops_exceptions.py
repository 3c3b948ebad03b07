"""Handlers: raise, assert, with-blocks and exception handling.

For now a `raise` inside the translated region and every with-block are graph breaks: the converter
then runs the frame as plain Python, which raises exactly what the eager call raises.
"""
from ..errors import GraphBreak
from .dispatch import handler


@handler("RAISE_VARARGS", "RERAISE", "LOAD_ASSERTION_ERROR")
def raise_(tx, inst):
    raise GraphBreak("raise", "the function raises an exception here; it runs as plain Python")


@handler("BEFORE_WITH")
def before_with(tx, inst):
    raise GraphBreak("with", "with-blocks are not supported yet")
