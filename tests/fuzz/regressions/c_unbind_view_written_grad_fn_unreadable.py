# (c, fixed: backends/aot.py keep_none_grads) aot_eager: a view of a grad-requiring input made by tensor iteration (unbind) and written under no_grad:
# reading the fake view's grad_fn raised in the None-gradient analysis, and the frame fell back with a framejit-failed warning.
import torch
import torch.nn.functional as F
from torch import nn
import framejit
FUZZ_SEED = 201424
FUZZ_BACKEND = 'aot_eager'
FUZZ_CALLS = 1

class EntryModule(nn.Module):

    def __init__(self):
        super().__init__()
        self.calls = 0
        self.register_buffer('steps', torch.zeros(()))

    def forward(self, fl, w, dt, dt2):
        for i1 in w:
            with torch.no_grad():
                v3 = w[0]
                v3.zero_()
G_ENTRY = EntryModule()
f = G_ENTRY
_KEPT = {}

def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    VARY = 0
    B = (3, 1, 3)[call]
    n_value = (3, 0, 3)[call]
    g = torch.Generator().manual_seed(FUZZ_SEED * 10 + call * VARY)
    fl = 0.5 + call * 0.25 * VARY
    w = torch.randn(4, 4, generator=g).requires_grad_()
    dt = {'a': torch.randn(4, generator=g), 'b': torch.randn(4, generator=g)}
    dt2 = {'a': torch.randn(4, generator=g), 'b': torch.randn(4, generator=g)}
    args = (fl, w, dt, dt2)
    kwargs = {}
    _KEPT['args'] = (args, kwargs)
    return (args, kwargs)

