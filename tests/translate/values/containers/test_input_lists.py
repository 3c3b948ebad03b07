"""Lists the frame receives and only appends to (translate/values/containers/input_lists.py): their contents are not
guarded, so a list that grows between calls does not convert again; a read of the contents (len,
indexing, iteration, `in`, other methods) guards and rebuilds them as before.

Each case: eager vs compiled on fresh copies (outputs, the list's final contents, globals), over calls
whose lists differ in length and contents, and the number of graphs compiled over all of them."""
import torch

import framejit
from tests.differential import check_calls, randn

LOG = []


def collect(x, out):
    y = x.sin()
    out.append(y)
    return y + 1


def collect_many(x, out):
    out.append(x * 2)
    out.extend([x + 1, x - 1])
    out.append("tag")
    return x


def log_to_global(x):
    y = x.cos()
    LOG.append(y)
    return y * 2


def append_then_read_length(x, out):
    out.append(x)
    return x * len(out)


def read_then_append(x, out):
    total = out[0] + x
    out.append(total)
    return total


def append_then_index(x, out):
    out.append(x * 3)
    return out[-1] + out[0]


def same_list_twice(x, a, b):
    a.append(x)
    b.append(x + 1)
    return x


def append_then_break(x, out):
    out.append(x * 2)
    print("logged", len(out))
    out.append(x * 3)
    return x


def append_in_helper(x, out):
    def emit(v):
        out.append(v)
        return v
    return emit(x.exp()) + emit(x.neg())


def _lists(n_calls, start=0):
    return [[randn(3, seed=s) for s in range(start, start + k)] for k in range(1, n_calls + 1)]


def _calls(*, n=4, with_list=True):
    xs = [randn(3, seed=10 + i) for i in range(n)]
    if not with_list:
        return [(x,) for x in xs]
    return [(x, lst) for x, lst in zip(xs, _lists(n))]


def test_append_only_list_converts_once():
    _, counter = check_calls(collect, _calls())
    assert counter.frame_count == 1


def test_extend_and_non_tensor_items():
    _, counter = check_calls(collect_many, _calls())
    assert counter.frame_count == 1


def test_global_log_list_converts_once():
    LOG.clear()
    framejit.reset()
    counter = framejit.backends.CompileCounter()
    compiled = framejit.compile(log_to_global, backend=counter)
    xs = [randn(3, seed=i) for i in range(12)]
    outs = [compiled(x) for x in xs]
    assert counter.frame_count == 1
    assert len(LOG) == 12
    for x, out, logged in zip(xs, outs, LOG):
        assert torch.equal(out, x.cos() * 2)
        assert torch.equal(logged, x.cos())
    LOG.clear()


def test_reads_of_the_contents_are_guarded():
    # the length is read: each length is its own conversion, as for any read sequence
    _, counter = check_calls(append_then_read_length, _calls(n=3))
    assert counter.frame_count >= 2
    check_calls(read_then_append, _calls())
    check_calls(append_then_index, _calls())


def test_aliasing_lists():
    lst = [randn(3, seed=1)]
    check_calls(same_list_twice, [(randn(3, seed=2), lst, lst), (randn(3, seed=3), [], [])])


def test_break_between_appends_replays_in_order():
    check_calls(append_then_break, _calls(n=3))


def test_appends_by_an_inlined_closure():
    _, counter = check_calls(append_in_helper, _calls())
    assert counter.frame_count == 1
