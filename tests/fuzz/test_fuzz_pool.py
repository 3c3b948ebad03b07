"""The fuzz pool's limits count a worker's CPU, not the wall clock (tests/fuzz/pool.py): a program that waits
without computing is not a timeout on a loaded machine, and one that computes past its limit is."""
from tests.fuzz.pool import Pool


def _kinds(answer):
    return [m["kind"] for m in answer.get("mismatches", [])]


def test_a_waiting_program_is_not_a_timeout_and_a_computing_one_is():
    waiting = "import time\ntime.sleep(2.5)\n"           # 2.5 s of wall, almost no CPU: over a 1 s limit of wall
    computing = "while True:\n    pass\n"
    with Pool(jobs=1, timeout=1.0) as pool:
        answers = {job["id"]: answer for job, answer in pool.run([
            {"id": "waiting", "source": waiting, "name": "waiting"},
            {"id": "computing", "source": computing, "name": "computing"}])}
    assert "timeout" not in _kinds(answers["waiting"]), answers["waiting"]
    assert _kinds(answers["computing"]) == ["timeout"]
