"""How many graphs torch.compile(backend="eager") makes of a function: the graph count framejit's tests
compare with (tests only; framejit itself never calls torch.compile)."""
import copy

import torch


def torch_compile_graphs(fn, *args, **kwargs):
    import torch._dynamo

    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    try:
        torch.compile(fn, backend=counting)(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    finally:
        torch._dynamo.reset()
    return len(graphs)
