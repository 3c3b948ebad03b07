"""Handlers: BINARY_OP, COMPARE_OP, IS_OP, CONTAINS_OP, UNARY_*."""
from ..dispatch import handler
from ..values.operator_rules import NB_SYMBOLS, binary_op, compare_op, unary_op


@handler("BINARY_OP")
def binary(tx, inst):
    b = tx.pop()
    a = tx.pop()
    tx.push(binary_op(tx, NB_SYMBOLS[inst.arg], a, b))


@handler("COMPARE_OP")
def compare(tx, inst):
    b = tx.pop()
    a = tx.pop()
    tx.push(compare_op(tx, inst.argval, a, b))


@handler("IS_OP")
def is_op(tx, inst):
    b = tx.pop()
    a = tx.pop()
    tx.push(compare_op(tx, "is not" if inst.arg else "is", a, b))


@handler("CONTAINS_OP")
def contains_op(tx, inst):
    b = tx.pop()
    a = tx.pop()
    tx.push(compare_op(tx, "not in" if inst.arg else "in", a, b))


@handler("UNARY_NEGATIVE")
def unary_negative(tx, inst):
    tx.push(unary_op(tx, "-", tx.pop()))


@handler("UNARY_POSITIVE")
def unary_positive(tx, inst):
    tx.push(unary_op(tx, "+", tx.pop()))


@handler("UNARY_INVERT")
def unary_invert(tx, inst):
    tx.push(unary_op(tx, "~", tx.pop()))


@handler("UNARY_NOT")
def unary_not(tx, inst):
    tx.push(unary_op(tx, "not", tx.pop()))
