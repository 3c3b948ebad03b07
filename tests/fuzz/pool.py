"""Worker processes with a time limit per program: a hang or a hard crash costs one program.

`Pool(jobs, timeout)` starts `jobs` workers (python -m tests.fuzz.worker) in the repository root and
hands each one job at a time. A worker that does not answer within `timeout` seconds is killed (its
program is reported as a "timeout" mismatch) and replaced; one that dies is reported as
"worker_died" with the end of its stderr. A worker retires after a program that left its process
unfit (inference mode on, a broken dispatch state: worker._healthy) and is replaced. Workers are replaced
after `recycle` programs, so memory a long run leaks in one process stays bounded.
"""
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 180.0
# a worker that does not start in READY_TIMEOUT is replaced this many times in a row before the run gives up
START_RETRIES = 3
# Both limits (a worker's start, a job's timeout) count the worker's own CPU seconds, not the wall clock: on a
# machine loaded by others (sessions 22 and 24: load 10-20 on 2 cores, the fuzzer at nice 19) torch's import took
# longer than READY_TIMEOUT of wall time, the run died with "a fuzz worker did not start", and slow programs were
# reported as timeouts. A worker that waits without using CPU is still stopped after WALL_FACTOR times the limit.
WALL_FACTOR = 10
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds(pid):
    """The process's user + system CPU seconds so far (Linux /proc), or None where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (OSError, IndexError, ValueError):
        return None


class _Worker:
    def __init__(self, env):
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fuzz.worker"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
        self.buffer = b""
        self.job = None
        self.deadline = None
        self.ready = False
        self.done = 0

    def limit(self, seconds):
        """Start a limit of `seconds` of this worker's CPU (wall-capped at WALL_FACTOR times as much)."""
        now = time.monotonic()
        self.budget, self.cpu_start, self.wall_cap = seconds, _cpu_seconds(self.proc.pid), now + WALL_FACTOR * seconds
        self.deadline = now + seconds

    def over_limit(self, now):
        """Is the limit used up? If not (the machine was busy, the worker got less CPU), move the deadline on."""
        used = _cpu_seconds(self.proc.pid)
        if used is None or self.cpu_start is None or now >= self.wall_cap:
            return True
        left = self.budget - (used - self.cpu_start)
        if left <= 0:
            return True
        self.deadline = min(now + max(left, 1.0), self.wall_cap)
        return False

    def send(self, job, timeout):
        self.job = job
        self.limit(timeout)
        self.proc.stdin.write((json.dumps(job) + "\n").encode())
        self.proc.stdin.flush()

    def stderr_tail(self):
        self.log.seek(0)
        return self.log.read()[-2000:].decode(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


class Pool:
    def __init__(self, jobs=1, timeout=10.0, recycle=1500):
        self.size = jobs
        self.timeout = timeout
        self.recycle = recycle
        self.env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
        self.env.setdefault("FRAMEJIT_DEBUG_DIR", tempfile.mkdtemp(prefix="framejit-fuzz-"))
        self.selector = selectors.DefaultSelector()
        self.workers = []
        self.failed_starts = 0            # workers in a row that did not start (START_RETRIES)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        for worker in self.workers:
            self._drop(worker)
        self.workers = []

    def _spawn(self):
        worker = _Worker(self.env)
        worker.limit(READY_TIMEOUT)
        self.selector.register(worker.proc.stdout, selectors.EVENT_READ, worker)
        self.workers.append(worker)
        return worker

    def _drop(self, worker):
        try:
            self.selector.unregister(worker.proc.stdout)
        except (KeyError, ValueError):
            pass
        worker.stop()

    def _replace(self, worker):
        self._drop(worker)
        self.workers.remove(worker)
        self._spawn()

    def run(self, jobs):
        """Yield (job, answer) for every job (a dict with "id" and "seed" or "source"), as they finish."""
        pending = list(jobs)[::-1]
        while len(self.workers) < self.size:
            self._spawn()
        running = 0
        while pending or running:
            for worker in list(self.workers):
                if worker.ready and worker.job is None and pending:
                    if worker.done >= self.recycle:
                        self._replace(worker)
                        continue
                    worker.send(pending.pop(), self.timeout)
                    running += 1
            now = time.monotonic()
            wait = min((w.deadline for w in self.workers if w.deadline), default=now + 1) - now
            for key, _ in self.selector.select(timeout=max(0.0, wait)):
                worker = key.data
                chunk = os.read(worker.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    job = worker.job
                    tail = worker.stderr_tail()
                    self._replace(worker)
                    if job is None:
                        raise RuntimeError(f"a fuzz worker died before taking a job:\n{tail}")
                    running -= 1
                    yield job, _problem(job, "worker_died", f"the worker process died:\n{tail}")
                    continue
                worker.buffer += chunk
                while b"\n" in worker.buffer:
                    line, worker.buffer = worker.buffer.split(b"\n", 1)
                    answer = json.loads(line)
                    if answer.get("ready"):
                        self.failed_starts = 0
                        worker.ready = True
                        worker.deadline = None
                        continue
                    job, worker.job, worker.deadline = worker.job, None, None
                    worker.done += 1
                    running -= 1
                    retired = answer.pop("retire", False)
                    if retired:
                        self._replace(worker)
                    yield job, answer
                    if retired:
                        break               # that worker and its buffer are gone
            now = time.monotonic()
            for worker in list(self.workers):
                if worker.deadline is not None and now > worker.deadline and worker.over_limit(now):
                    job = worker.job
                    if job is None:
                        self.failed_starts += 1
                        if self.failed_starts > START_RETRIES:
                            raise RuntimeError(f"a fuzz worker did not start:\n{worker.stderr_tail()}")
                        self._replace(worker)
                        continue
                    self._replace(worker)
                    running -= 1
                    yield job, _problem(job, "timeout", f"no answer within {self.timeout:.0f} s of its CPU")

    def run_one(self, source, name="src"):
        for _, answer in self.run([{"id": 0, "source": source, "name": name}]):
            return answer


def _problem(job, kind, detail):
    return {"id": job["id"], "mismatches": [{"kind": kind, "call": -1, "where": kind, "detail": detail}],
            "eager_raised": 0, "graphs": 0, "breaks": 0}
