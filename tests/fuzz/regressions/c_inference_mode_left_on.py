# (c, fixed: backends/grad_regions.py) aot_eager: an inference_mode block that writes a view of a global: the backend fails ("Cannot set
# version_counter for inference tensor"), framejit reports a framejit bug (global state changed,
# restored), yet inference mode stays ON after the call; later ops of the process then fail with an
# internal assert ("Hit PythonDispatcher dispatch key but PythonDispatcherTLS was not set").
# Run only in a worker process (the fuzz pool retires the worker after it).
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 1
G_T = torch.arange(4.0)


def f(y):
    z = y * 2
    with torch.inference_mode():
        view = G_T.view(2, 2)
        view.add_(1.0)
    return z


def make_inputs(call):
    return (torch.randn(4, generator=torch.Generator().manual_seed(call)),), {}
