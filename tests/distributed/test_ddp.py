"""framejit.compile(DistributedDataParallel(model)) on 2 ranks: the wrapped forward is captured and cut at
DDP's gradient buckets (framejit/distributed/ddp_split.py), and training matches eager DDP."""
from .launch import run_ranks
from .ddp_workers import ddp_scenarios


def test_ddp_graph_is_cut_at_the_reducers_buckets_and_training_matches_eager_ddp():
    ranks = run_ranks(ddp_scenarios)
    for rank, seen in enumerate(ranks):
        big, small = seen[25], seen[0.01]
        for cap, run in seen.items():
            assert run["diffs"] == [], (rank, cap, run["diffs"])     # losses, grads, params: 3 steps
            assert run["same_on_ranks"]
            # the buckets framejit cuts at are the ones DDP's reducer formed (after its rebuild)
            assert run["our_buckets"] == run["reducer_buckets"], (run["our_buckets"], run["reducer_buckets"])
        # large bucket_cap_mb: one bucket, one graph, one backend call
        assert big["buckets"] == [10] and big["backend_calls"] == 1
        # small: one piece per bucket, the user backend called once per piece, each cut named in explain()
        assert small["buckets"] == [4, 2, 2, 2]
        assert small["backend_calls"] == 4 and len(small["ops"]) == 4
        assert sum(small["ops"]) == big["ops"][0]
        assert len(small["break_reasons"]) == 3
        assert all("DDP bucket" in r for r in small["break_reasons"])
        assert "DDP bucket 0 " in small["break_reasons"][-1]
    # every rank converted the same number of times, into the same pieces
    assert all((r[c]["backend_calls"], r[c]["ops"]) == (ranks[0][c]["backend_calls"], ranks[0][c]["ops"])
               for r in ranks for c in r)
