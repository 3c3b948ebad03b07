"""framejit's differential fuzzer: generated programs run eagerly and compiled must behave the same.

A program is a pure function of its seed (`generator.generate(seed)`): Python source of a module
holding one entry function `f`, the helper classes, closures, modules and globals it uses, and
`make_inputs(call)`, which builds the call's arguments deterministically. The runner (`runner.py`)
loads the source twice (one namespace per side), calls `f` eagerly and `framejit.compile(f)` two or
three times on inputs built the same way, snapshots everything a caller could observe after each
call (`snapshot.py`) and reports every difference as a Mismatch of one kind (output, attr, arg,
global, stdout, exception, crash, aliasing, grad, rng, torch_state, fallback...).

    python -m tests.fuzz --count 2000 --seed 0 --jobs 1 --out /tmp/fuzz-out
    python -m tests.fuzz --replay /tmp/fuzz-out/seed_17/program.py
    python -m tests.fuzz --minimize /tmp/fuzz-out/seed_17/program.py

Programs run in worker processes (`pool.py`, `worker.py`) so a hang or a hard crash costs one
program, not the run.
"""
