"""framejit.compile(DistributedDataParallel(model)) on 2 ranks: the wrapped forward is captured and cut at
DDP's gradient buckets (framejit/distributed/ddp_split.py), and training matches eager DDP."""
from .launch import run_ranks
from .ddp_workers import ddp_against_eager


def _common(ranks):
    for rank, run in enumerate(ranks):
        assert run["diffs"] == [], (rank, run["diffs"])          # losses, grads, params over 3 steps
        assert run["same_on_ranks"]
        # the buckets framejit cuts at are the ones DDP's reducer formed (after its rebuild)
        assert run["our_buckets"] == run["reducer_buckets"], (run["our_buckets"], run["reducer_buckets"])
    # every rank converted the same number of times, into the same pieces
    assert all((r["backend_calls"], r["ops"]) == (ranks[0]["backend_calls"], ranks[0]["ops"]) for r in ranks)


def test_a_large_bucket_cap_gives_one_graph_and_training_matches_eager_ddp():
    ranks = run_ranks(ddp_against_eager, 25, "eager", 3, False)
    _common(ranks)
    for run in ranks:
        assert run["buckets"] == [10]                 # the frozen parameter is in no bucket
        assert run["backend_calls"] == 1 and run["ops"] == [11]


def test_a_small_bucket_cap_gives_a_piece_per_bucket_each_named_in_explain():
    ranks = run_ranks(ddp_against_eager, 0.01, "aot_eager", 3, True, ("layers.0.bias",))
    _common(ranks)
    for run in ranks:
        assert run["buckets"] == [4, 2, 2, 1]         # the parameter DDP is told to ignore is in none
        # the user backend is called once per piece; the pieces hold the one graph's ops
        assert run["backend_calls"] == 4 and len(run["ops"]) == 4 and sum(run["ops"]) == 11
        reasons = run["break_reasons"]
        assert len(reasons) == 3 and all("DDP bucket" in r for r in reasons)
        assert [r.split(" (")[0] for r in reasons] == ["DDP bucket 2", "DDP bucket 1", "DDP bucket 0"]
