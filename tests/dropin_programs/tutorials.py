"""The patterns of torch.compile's own tutorials, as they write them: a compiled function and a
decorated one, `@torch.compile(...)` with arguments, a compiled module with mode="reduce-overhead",
a compiled optimizer step (a decorated function calling opt.step(), and torch.compile(opt.step)),
torch.compiler.reset() between experiments."""
import torch


def foo(x, y):
    a = torch.sin(x)
    b = torch.cos(y)
    return a + b


@torch.compile
def opt_foo2(x, y):
    a = torch.sin(x)
    b = torch.cos(y)
    return a + b


@torch.compile(backend="eager", fullgraph=True, dynamic=False)
def scaled(x, scale: float):
    return x * scale


class MyModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(100, 10)

    def forward(self, x):
        return torch.nn.functional.relu(self.lin(x))


def main():
    torch.manual_seed(0)
    out = {}
    opt_foo1 = torch.compile(foo)
    x, y = torch.randn(10, 10), torch.randn(10, 10)
    out["foo"] = (opt_foo1(x, y), opt_foo2(x, y))
    out["scaled"] = scaled(torch.ones(3), 2.0)

    mod = MyModule()
    opt_mod = torch.compile(mod, mode="reduce-overhead")
    inp = torch.randn(10, 100)
    out["module"] = opt_mod(inp)

    model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(3)])
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(4, 16)).sum().backward()

    @torch.compile(fullgraph=False)
    def step():
        opt.step()

    for _ in range(2):
        step()
    compiled_step = torch.compile(opt.step)
    compiled_step()
    out["after_steps"] = [p.detach().clone() for p in model.parameters()]

    torch.compiler.reset()
    out["after_reset"] = opt_foo1(x, y)
    return out
