"""The bugs the fuzzer found, one minimal program each: open ones (tests/fuzz/repros/) as strict
xfails, fixed ones (tests/fuzz/regressions/, moved there by the fix) as tests that must match eager.

Each file is a fuzz-format program (f, make_inputs, FUZZ_BACKEND, FUZZ_CALLS) whose first comment
says the bug and its class from issue 16 ((b), (c)...). The test runs it eagerly and compiled in a
fuzz worker process (one pool for the module: some of these leave the process unfit, e.g. inference
mode on, and the worker then retires) and expects no difference; it fails today, so it is xfail
(strict): when the bug is fixed it passes and the mark must go.
"""
from pathlib import Path

import pytest

from tests.fuzz.pool import Pool

REPROS = sorted((Path(__file__).parent / "repros").glob("*.py"))
FIXED = sorted((Path(__file__).parent / "regressions").glob("*.py"))


class DifferenceFound(AssertionError):
    """The compiled run differed from the eager one (the expected failure; anything else is not)."""


def _reason(path):
    return path.read_text().splitlines()[0].lstrip("# ").strip()


@pytest.fixture(scope="module")
def pool():
    with Pool(jobs=1, timeout=60.0) as workers:
        yield workers


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem, marks=pytest.mark.xfail(
    strict=True, raises=DifferenceFound, reason=_reason(p)))
                                  for p in REPROS])
def test_repro_matches_eager(pool, path):
    answer = pool.run_one(path.read_text(), name=path.stem)
    assert "harness" not in answer, answer["harness"]
    found = [f"[{m['kind']}] {m['where']}: {m['detail'][:300]}" for m in answer["mismatches"]]
    if found:
        raise DifferenceFound("\n".join(found))


@pytest.mark.parametrize("path", FIXED, ids=[p.stem for p in FIXED])
def test_fixed_bug_stays_fixed(pool, path):
    answer = pool.run_one(path.read_text(), name=path.stem)
    assert "harness" not in answer, answer["harness"]
    assert not answer["mismatches"], [f"[{m['kind']}] {m['where']}: {m['detail'][:300]}" for m in answer["mismatches"]]


def test_repros_are_there():
    assert len(REPROS) + len(FIXED) >= 10
