"""Issue 26's FSDP2 and DDP programs written for torch.compile, run on 2 ranks with torch.compile replaced
by framejit.compile (and nothing else changed): FSDP runs as eager FSDP2 (one root managing every
state, parameters resharded to DTensor shards after forward) and training matches the eager program."""
import pytest
import torch

from .launch import run_ranks
from .dropin_workers import run_program
from tests.test_dropin import same

TIMEOUT = 300          # two torch processes each; the suite runs beside them on a 2-core machine


@pytest.mark.parametrize("what", ["blocks", "root"])
def test_fsdp2_with_torch_compile_replaced_runs_as_eager_fsdp2(what):
    eager = run_ranks(run_program, "fsdp2", "eager", what, timeout=TIMEOUT)
    compiled = run_ranks(run_program, "fsdp2", "framejit", what, timeout=TIMEOUT)
    for rank, (e, c) in enumerate(zip(eager, compiled)):
        assert c["structure"] == e["structure"], (rank, c["structure"], e["structure"])
        assert c["structure"]["roots"] == [""] and c["structure"]["managed_by_root"] == 4
        # resharded after forward exactly as eager: every block's parameters are DTensor shards again
        assert c["sharded_after_forward"] == e["sharded_after_forward"], rank
        assert all(n.startswith("blocks.") for n in c["sharded_after_forward"][0])
        assert len(c["sharded_after_forward"][0]) == 18
        same(e["losses"], c["losses"], f"rank {rank} losses")
        same(e["params"], c["params"], f"rank {rank} params")
        assert c["failures"] == [], c["failures"]
        # the blocks' compute is in graphs (torch.compile puts the blocks' 6 linears there too)
        assert c["graph_ops"].get("forward", 0) >= 5, c["graph_ops"]


def test_ddp_with_torch_compile_replaced_trains_like_eager_ddp():
    eager = run_ranks(run_program, "ddp", "eager", timeout=TIMEOUT)
    compiled = run_ranks(run_program, "ddp", "framejit", timeout=TIMEOUT)
    for rank, (e, c) in enumerate(zip(eager, compiled)):
        same(e["losses"], c["losses"], f"rank {rank} losses")
        same(e["params"], c["params"], f"rank {rank} params")
        assert c["failures"] == [] and c["graph_ops"], c
