"""Start N processes on this machine, each a rank of one gloo process group on CPU, run a worker
function in each and bring back what each returned (or raised).

Each rank is a fresh `python -m tests.distributed.launch` subprocess (no fork of the test process, no
re-import of pytest's main module). Rendezvous is a FileStore in a fresh temporary directory, so no port
is chosen up front (gloo's own pair sockets bind ephemeral ports on 127.0.0.1, picked by the OS). The
ranks are watched with a deadline: when one fails the others are stopped at once (they may be waiting for
it in a collective), and any still alive past the deadline are killed; the call then fails naming them.
"""
import datetime
import importlib
import os
import pickle
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_ranks(worker, *args, world_size=2, timeout=None):
    """[worker's return value on rank 0, rank 1, ...]; `worker(rank, world_size, *args)` must be a
    module-level function (each rank imports it). The deadline is 57 s (FRAMEJIT_TEST_DIST_TIMEOUT
    overrides it, for a machine too loaded to start two torch processes in that time)."""
    if timeout is None:
        timeout = float(os.environ.get("FRAMEJIT_TEST_DIST_TIMEOUT", "57"))
    with tempfile.TemporaryDirectory(prefix="framejit-dist-") as tmp:
        with open(os.path.join(tmp, "job"), "wb") as f:
            pickle.dump((worker.__module__, worker.__qualname__, args), f)
        env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        procs = []
        try:
            for rank in range(world_size):
                log = open(os.path.join(tmp, f"log{rank}"), "wb")
                procs.append(subprocess.Popen([sys.executable, "-m", "tests.distributed.launch", tmp, str(rank),
                                               str(world_size)], cwd=ROOT, env=env, stdout=log,
                                              stderr=subprocess.STDOUT))
                log.close()
            deadline = time.monotonic() + timeout
            while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
                if any(_failed(tmp, rank) for rank in range(world_size)):
                    break
                time.sleep(0.05)
        finally:
            hung = [rank for rank, p in enumerate(procs) if p.poll() is None]
            for p in procs:
                if p.poll() is None:
                    p.kill()
            for p in procs:
                p.wait(10)
        failed = [rank for rank in range(world_size) if _failed(tmp, rank)]
        if failed:
            raise AssertionError(f"rank {failed[0]} failed:\n{_result(tmp, failed[0])[1]}")
        if hung:
            raise TimeoutError(f"ranks {hung} did not finish within {timeout} s (killed); rank {hung[0]}'s "
                               f"output:\n{_log(tmp, hung[0])}")
        results = []
        for rank, p in enumerate(procs):
            got = _result(tmp, rank)
            if got is None:
                raise RuntimeError(f"rank {rank} exited with code {p.returncode} and no result:\n{_log(tmp, rank)}")
            results.append(got[1])
        return results


def _result(tmp, rank):
    path = os.path.join(tmp, f"result{rank}")
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        return pickle.load(f)


def _failed(tmp, rank):
    got = _result(tmp, rank)
    return got is not None and not got[0]


def _log(tmp, rank):
    with open(os.path.join(tmp, f"log{rank}"), "rb") as f:
        return f.read().decode(errors="replace")[-4000:]


def _rank_main(tmp, rank, world_size):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    try:
        with open(os.path.join(tmp, "job"), "rb") as f:
            module, name, args = pickle.load(f)
        worker = getattr(importlib.import_module(module), name)
        store = dist.FileStore(os.path.join(tmp, "store"), world_size)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size,
                                timeout=datetime.timedelta(seconds=40))
        try:
            out = (True, worker(rank, world_size, *args))
        finally:
            dist.destroy_process_group()
    except BaseException:
        out = (False, traceback.format_exc())
    with open(os.path.join(tmp, f"result{rank}.tmp"), "wb") as f:
        pickle.dump(out, f)
    os.replace(os.path.join(tmp, f"result{rank}.tmp"), os.path.join(tmp, f"result{rank}"))


if __name__ == "__main__":
    _rank_main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
