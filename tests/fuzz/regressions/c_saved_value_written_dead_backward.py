# (c, fixed: backends/aot.py EAGER_TIME_AUTOGRAD_ERRORS) aot_eager: a value saved for backward then written in place (a dead op's
# input): the joint trace raised at compile time where eager never runs that backward; the graph now runs as its own fx code.
import torch
import torch.nn.functional as F
from torch import nn
import framejit
FUZZ_SEED = 214652
FUZZ_BACKEND = 'aot_eager'
FUZZ_CALLS = 1

class Box:

    def __init__(self, w, n, tag):
        self.w = w
        self.n = n
        self.tag = tag
        self.items = [n]

class Net(nn.Module):

    def __init__(self, seed):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.lin = nn.Linear(4, 4)
        with torch.no_grad():
            self.lin.weight.copy_(torch.randn(4, 4, generator=g) * 0.5)
            self.lin.bias.copy_(torch.randn(4, generator=g) * 0.1)
        self.register_buffer('buf', torch.zeros(4))
        self.calls = 0
        self.scale = 1.0

    def forward(self, x):
        self.calls += 1
        return torch.tanh(self.lin(x)) * self.scale + self.buf
G_BOX = Box(torch.ones(4), 1, 'global')

def f(net, m, y, box, y2):
    t1 = torch.hypot(y, net(y2) / 2)
    net.buf.abs_()
    y2 += G_BOX.w
_KEPT = {}

def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    VARY = 0
    B = (3, 1, 3)[call]
    n_value = (1, 1, 1)[call]
    g = torch.Generator().manual_seed(FUZZ_SEED * 10 + call * VARY)
    net = Net(FUZZ_SEED % 5)
    m = torch.randn(4, 4, generator=g)
    y = torch.randn(4, generator=g)
    box = Box(torch.randn(4, generator=g), n_value, 'b' + str(call))
    y2 = torch.randn(4, generator=g)
    args = (net, m, y, box)
    kwargs = {'y2': y2}
    _KEPT['args'] = (args, kwargs)
    return (args, kwargs)

