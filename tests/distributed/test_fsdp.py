"""FSDP2 (fully_shard on each block and the root) with framejit on 2 ranks: blocks compiled in place
(regional) or the root compiled in place; prefetch_plan from the recorded order; the cross-rank check."""
import pytest

from .launch import run_ranks
from .fsdp_workers import fsdp_against_eager, prefetch_and_order_check


@pytest.mark.parametrize("mode", ["blocks", "root"])
def test_fsdp2_with_blocks_or_root_compiled_in_place_trains_like_eager_fsdp2(mode):
    ranks = run_ranks(fsdp_against_eager, mode)
    for rank, run in enumerate(ranks):
        where = (rank, mode)
        assert run["diffs"] == [], (where, run["diffs"])          # losses, grads, params over 3 steps
        # FSDP's hooks ran as eager FSDP runs them: the same unshard/reshard/backward calls, in order
        assert run["hook_diffs"] == [], (where, run["hook_diffs"])
        # the same parameters are resharded after forward
        assert run["forward_diffs"] == [], where
        # the FSDP structure is eager's: the same FSDP modules, one root, the same states it manages
        eager_structure, compiled_structure = run["structure"]
        assert compiled_structure == eager_structure, where
        assert compiled_structure["root"] == [""]
        # the three identical blocks share one conversion (one capture serves every instance of a
        # module class with the same structure), made on the first step, and nothing converts again
        assert run["calls"] == [1, 1, 1], (where, run["calls"])
        assert run["forward_keeps_object"]
    assert all(r["calls"] == ranks[0]["calls"] for r in ranks)


def test_prefetch_plan_follows_the_forward_order_and_ranks_that_differ_are_named():
    ranks = run_ranks(prefetch_and_order_check)
    for run in ranks:
        assert run["order"] == ["blocks.0", "blocks.1", "blocks.2"]
        assert run["forward"] == {"blocks.0": ["blocks.1"], "blocks.1": ["blocks.2"]}
        assert run["backward"] == {"blocks.1": ["blocks.0"], "blocks.2": ["blocks.1"]}
        # FSDP itself holds the plan
        assert run["held"] == run["forward"] and run["held_backward"] == run["backward"]
        assert run["losses"][0] == run["losses"][1] and run["grads_equal"]
        assert run["inplace_kept"]
        # rank 1 swaps its last two blocks: every rank raises, naming the first call where they part
        assert run["mismatch"] is not None
        assert "module call #6" in run["mismatch"] and "'blocks.1'" in run["mismatch"] and \
            "'blocks.2'" in run["mismatch"], run["mismatch"]
