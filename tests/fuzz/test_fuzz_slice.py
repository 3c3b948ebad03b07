"""A fixed slice of the differential fuzzer, run with the test suite: every seed here must match.

Each test generates program `seed` (tests/fuzz/generator.py), runs it eagerly and through
framejit.compile two or three times, and fails with the list of differences (outputs, identity,
arguments, object attributes, globals, stdout, exceptions, grads, RNG, torch state, framejit-bug
warnings). Seeds that fail because of a known framejit bug someone is fixing are xfail(strict=True)
with the bug's class, so they flip to failures (remove the mark) once it is fixed.

The programs run in this process, without the fuzz CLI's worker time limit; every seed here is
known to finish in well under a second. Reproduce one outside pytest with
`python -m tests.fuzz --show SEED > p.py && python -m tests.fuzz --replay p.py`.
"""
import pytest

from tests.fuzz.runner import run_seed

SLICE = range(0, 400)

# seed -> the known bug (the issue-16 class: a, b, c, d or new) that makes it fail
B_ABSENCE = ("(b) absence guards: getattr(obj, name, default) / hasattr guard only the attribute's value when "
             "present, so a later call on which it is absent (or present) reuses the wrong entry")
B_DICT = ("(b) writes via obj.__dict__ (item store, update, pop) and object.__setattr__ are not seen by later "
          "reads of the attribute or of __dict__ in the same frame")
KNOWN = {
    83: B_ABSENCE,      # G_BOX.extra = getattr(G_BOX, 'extra', 0) + 1, two calls
    113: B_ABSENCE,     # print(getattr(G_BOX, 'extra', None)); G_BOX.__dict__['extra'] = ..., two calls
    137: B_DICT,        # for i in range(3): G_BOX.__dict__['n'] = G_BOX.n - 1
    193: B_ABSENCE,     # if hasattr(G_BOX, 'tag'): delattr(G_BOX, 'tag'), two calls
}


def _params():
    for seed in SLICE:
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN[seed])] if seed in KNOWN else []
        yield pytest.param(seed, id=f"seed{seed}", marks=marks)


@pytest.mark.parametrize("seed", _params())
def test_fuzz_seed(seed):
    outcome = run_seed(seed)
    assert not outcome.mismatches, f"fuzz program {seed}:\n" + "\n".join(m.line()[:1500] for m in outcome.mismatches)
