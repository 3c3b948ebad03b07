"""An AOTInductor library runs as it is, with no inductor key to check it: its key must change with
everything its code depends on beyond the graph key (inductor's settings a program changed, the
TORCHINDUCTOR_* environment, the machine), and only inference graphs of plain CPU tensors may take it."""
import torch

import framejit
from framejit.backends import inductor_aoti
from framejit.persist import graph_key as graph_key_module


def _aoti_keys(fn, *args):
    keys = []

    def backend(gm, example_inputs):
        keys.append(inductor_aoti.aoti_key(gm, example_inputs, {"fallback_random": True}))
        return gm.forward

    framejit.compile(fn, backend=backend)(*args)
    return keys


def f(x):
    return torch.relu(x) + 1


def test_library_key_changes_with_inductor_settings_machine_and_versions(monkeypatch):
    import torch._inductor.config as inductor_config
    x = torch.randn(4, 4)
    base = _aoti_keys(f, x)
    assert base and _aoti_keys(f, x) == base
    with inductor_config.patch({"cpp.simdlen": 8}):            # a program's own inductor setting
        assert _aoti_keys(f, x) != base
    assert _aoti_keys(f, x) == base
    monkeypatch.setenv("TORCHINDUCTOR_CPP_WRAPPER", "1")
    assert _aoti_keys(f, x) != base
    monkeypatch.undo()
    monkeypatch.setattr(torch._C, "_get_cpu_capability", lambda: "ANOTHER_CPU")
    assert _aoti_keys(f, x) != base
    monkeypatch.undo()
    monkeypatch.setattr(torch, "__version__", "9.9.9")
    assert _aoti_keys(f, x) != base
    monkeypatch.undo()
    monkeypatch.setattr(graph_key_module, "_FRAMEJIT_SOURCES", "another framejit")
    assert _aoti_keys(f, x) != base


def test_only_inference_graphs_of_plain_cpu_tensors_are_candidates():
    x, w = torch.randn(3), torch.randn(3, requires_grad=True)
    assert inductor_aoti.aoti_candidate([x])
    assert not inductor_aoti.aoti_candidate([x, w])           # w's gradient: a backward, not a library
    with torch.no_grad():
        assert inductor_aoti.aoti_candidate([x, w])
    assert not inductor_aoti.aoti_candidate([x, 2])
    assert not inductor_aoti.aoti_candidate([x.to_sparse()])
    assert not inductor_aoti.aoti_candidate([])
