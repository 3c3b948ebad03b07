"""Differential tests: ops that can fail on tensor values inside try blocks and with-blocks stay in the
graph (translate/ops/exceptions.py flags them; convert/raising_graphs.py reruns the frame as Python
when such a graph raises, so the frame's own handler sees eager's exception).

PEFT's forward runs the model inside a Python context manager, PyG's aggregation inside a try block:
both frames ran as plain Python (PEFT LoRA: 0 graphs, torch.compile 1)."""
import contextlib

import torch

from tests.differential import check, check_calls, randint, randn

LOG = []


def gather_or_default(x, idx):
    try:
        y = x[idx] * 2          # indexing with tensor values: raises when idx is out of range
    except IndexError:
        y = x.sum(0, keepdim=True)
    return y.relu()


def test_op_in_try_is_one_graph():
    check(gather_or_default, randn(5, 3), torch.tensor([0, 4]), graphs=1, breaks=0)


def test_op_in_try_that_raises_reaches_the_handler():
    check_calls(gather_or_default, [(randn(5, 3), torch.tensor([0, 4])), (randn(5, 3), torch.tensor([9])),
                                    (randn(5, 3), torch.tensor([1]))])


class Quiet:
    """A Python context manager whose __exit__ swallows the error (PEFT's hook manager shape)."""

    def __enter__(self):
        LOG.append("enter")
        return self

    def __exit__(self, *exc):
        LOG.append(("exit", exc[0].__name__ if exc[0] else None))
        return True


def effects_then_raising_op(x, idx, out):
    out.append("before")
    with Quiet():
        out.append(x.index_select(0, idx).sum())
        out.append("after")
    return x.exp(), len(out)


def test_with_block_keeps_effects_order_when_the_op_raises():
    check_calls(effects_then_raising_op, [(randn(4, 2), torch.tensor([1]), []), (randn(4, 2), torch.tensor([7]), []),
                                          (randn(4, 2), torch.tensor([3]), [])])


class Embedder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(10, 4)

    @contextlib.contextmanager
    def hooks(self):
        LOG.append("hooks on")
        try:
            yield
        finally:
            LOG.append("hooks off")

    def forward(self, ids):
        with self.hooks():
            return self.emb(ids).mean(1)


def test_module_forward_inside_a_generator_context_manager():
    model = Embedder()
    check(model, randint(0, 10, 2, 3), graphs=1, breaks=0)
    check_calls(model, [(randint(0, 10, 2, 3),), (torch.tensor([[1, 12]]),), (randint(0, 10, 1, 3, seed=3),)])
