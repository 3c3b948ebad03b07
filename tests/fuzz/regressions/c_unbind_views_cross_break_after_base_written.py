# (c, fixed: backends/multi_output_views.py, translate/graph/fake_inputs.py) aot_eager: unbind views of a grad-requiring input, its base written under no_grad, then a graph break: the views left the graph as outputs of CompiledFunction, and the resume function receiving them could not be converted (reading their history raised), so it fell back with a framejit-failed warning (seed 709501).
import random
import torch
import torch.nn.functional as F
import framejit
FUZZ_SEED = 709501
FUZZ_BACKEND = 'aot_eager'
FUZZ_CALLS = 2

def f(dt, w):
    tl2 = list(torch.unbind(w))
    with torch.no_grad():
        v5 = w.t()
        v5.zero_()
        k7 = random.randint(0, 3)
    tl2.extend([dt.get('c', torch.ones(4)), F.log_softmax(dt.get('a', torch.ones(4)), dim=-1)])
    return len(tl2), tl2[-1]
_KEPT = {}

def make_inputs(call):
    """The arguments of call number `call` (0-based): fresh objects built the same way on both sides."""
    g = torch.Generator().manual_seed(FUZZ_SEED * 10 + call)
    dt = {'a': torch.randn(4, generator=g), 'b': torch.randn(4, generator=g)}
    w = torch.randn(4, 4, generator=g).requires_grad_()
    args = (dt, w)
    kwargs = {}
    _KEPT['args'] = (args, kwargs)
    return (args, kwargs)
