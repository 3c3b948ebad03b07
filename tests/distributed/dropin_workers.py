"""Rank function of the drop-in tests: run a torch.compile program of tests/dropin_programs/ with
torch.compile replaced by framejit.compile (or by a no-op: eager) and bring back what it returned."""
import warnings

import framejit


def run_program(rank, world_size, name, frontend, *args):
    from tests.test_dropin import load
    framejit.clear_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", framejit.GraphBreakWarning)
        out = load(name, frontend).main(rank, world_size, *args)
    out["graph_ops"] = {m.co_name: m.graph_op_count for m in framejit.metrics() if m.graph_op_count}
    out["failures"] = [m.fail_reason for m in framejit.metrics()          # internal failures, not breaks
                       if m.fail_type not in (None, "eager fallback", "run once eagerly")]
    return out
