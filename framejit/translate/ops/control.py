"""Handlers: returns, jumps, branches, iteration.

Branches on values known at translation time (constants, shapes, None checks, container truth) pick
one side; a branch on a tensor's value is a graph break ("data-dependent branch"). Loops over
containers, ranges and iterators of known length are unrolled: FOR_ITER walks an IteratorValue.
"""
from ...errors import GraphBreak
from ..lookasides.builtins_table import truth, unpack_iterable
from ..values.objects.user_dunders import is_user_object, user_iterate
from ..dispatch import RETURN, handler
from ..values.base import GENERIC, Const, IteratorValue, TensorValue

MAX_INSTRUCTIONS = 200_000


@handler("RETURN_VALUE")
def return_value(tx, inst):
    tx.return_value = tx.pop()
    return RETURN


@handler("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT")
def jump(tx, inst):
    tx.ctx.count_backedge(tx)
    return inst.target


def _branch_truth(tx, v):
    if isinstance(v, TensorValue):
        raise GraphBreak("data-dependent branch", "a branch on a tensor's value (Python `if`/`while`/`and`/`or` on a "
                         "tensor) needs the value", hint="use torch.where, or move the condition out of the function")
    return truth(tx, v)


@handler("POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE")
def pop_jump_if_true(tx, inst):
    if _branch_truth(tx, tx.peek()):
        tx.pop()
        return inst.target
    tx.pop()


@handler("POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE")
def pop_jump_if_false(tx, inst):
    if not _branch_truth(tx, tx.peek()):
        tx.pop()
        return inst.target
    tx.pop()


def _is_none(v):
    return isinstance(v, Const) and v.value is None


@handler("POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE")
def pop_jump_if_none(tx, inst):
    if _is_none(tx.pop()):
        return inst.target


@handler("POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE")
def pop_jump_if_not_none(tx, inst):
    if not _is_none(tx.pop()):
        return inst.target


@handler("JUMP_IF_TRUE_OR_POP")
def jump_if_true_or_pop(tx, inst):
    if _branch_truth(tx, tx.peek()):
        return inst.target
    tx.pop()


@handler("JUMP_IF_FALSE_OR_POP")
def jump_if_false_or_pop(tx, inst):
    if not _branch_truth(tx, tx.peek()):
        return inst.target
    tx.pop()


@handler("GET_ITER")
def get_iter(tx, inst):
    v = tx.pop()
    if isinstance(v, IteratorValue) or v.is_lazy_iterator():       # lazy iterators (generators) stay lazy
        tx.push(v)
        return
    it = v.iterate(tx)                                              # an object with a Python __iter__
    if it is not GENERIC:
        tx.push(it)
        return
    if is_user_object(v):                                           # ... from outside the frame
        tx.push(user_iterate(tx, v))
        return
    tx.push(IteratorValue(unpack_iterable(tx, v)))


@handler("FOR_ITER")
def for_iter(tx, inst):
    it = tx.peek()
    if not isinstance(it, IteratorValue):
        v = it.next_value(tx)          # a generator: run it to its next yield
        if v is None:
            tx.pop()
            return inst.target
        tx.push(v)
        return None
    if it.pos < len(it.items):
        it.pos += 1
        tx.push(it.items[it.pos - 1])
        return None
    tx.pop()
    return inst.target
