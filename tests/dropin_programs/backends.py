"""Backends as torch.compile users pass them: registry names, a custom callable taking extra keyword
arguments, and one calling AOTAutograd itself."""
import torch
from torch._dynamo.backends.common import aot_autograd

seen = []


def my_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    seen.append(len(list(gm.graph.nodes)))
    return gm.forward


def my_compiler(gm, example_inputs):
    seen.append("aot")
    return gm.forward


aot_backend = aot_autograd(fw_compiler=my_compiler)


def step(x, w):
    return torch.tanh(x @ w).sum(-1)


def main():
    torch.manual_seed(0)
    results = {}
    for name in ("aot_eager", "cudagraphs", "eager"):
        fn = torch.compile(step, backend=name)
        x, w = torch.randn(3, 4), torch.randn(4, 4, requires_grad=True)
        out = fn(x, w)
        out.sum().backward()
        results[name] = (out.detach(), w.grad)
    for label, backend in (("custom", my_backend), ("aot_autograd", aot_backend)):
        fn = torch.compile(step, backend=backend)
        x, w = torch.randn(3, 4), torch.randn(4, 4, requires_grad=True)
        out = fn(x, w)
        out.sum().backward()
        results[label] = (out.detach(), w.grad)
    return results
