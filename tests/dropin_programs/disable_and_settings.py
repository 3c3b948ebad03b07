"""torch.compiler.disable in user code, fullgraph=/dynamic=, torch._dynamo.config limits, set_stance."""
import torch
import torch._dynamo

printed = []


@torch.compiler.disable
def log_stats(t):
    printed.append(float(t.mean()))
    return t


def forward(x):
    y = torch.relu(x) * 2
    y = log_stats(y)
    return y.cumsum(0)


def main():
    torch.manual_seed(0)
    torch._dynamo.config.cache_size_limit = 2
    compiled = torch.compile(forward)
    outs = [compiled(torch.randn(n)) for n in (3, 4, 5, 6, 7)]
    whole = torch.compile(lambda a, b: (a * b).sum(), fullgraph=True, dynamic=True)
    sums = [whole(torch.randn(n), torch.randn(n)) for n in (2, 3)]
    with torch.compiler.set_stance("force_eager"):
        eager_out = torch.compile(forward)(torch.ones(2))
    off = torch.compile(forward, disable=True)
    return {"outs": outs, "sums": sums, "printed": list(printed), "stance": eager_out,
            "disabled_is_forward": off is forward}
