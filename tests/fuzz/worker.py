"""A fuzz worker process: reads jobs (JSON lines) on stdin, answers one JSON line per job.

A job is {"id": ..., "seed": S} (the program is generated here) or {"id": ..., "source": text}.
The answer is {"id", "mismatches": [...], "eager_raised", "graphs", "breaks"} or {"id", "harness": text}
when the runner itself failed, with "source" (the program as run) whenever something differed. The worker writes answers on a private copy of its stdout and points
file descriptor 1 at /dev/null, so nothing a program prints (even from C) can corrupt the protocol.
It answers {"ready": true} once torch and framejit are imported and both backends have run once,
so the first program's time limit does not pay for imports.
"""
import dataclasses
import json
import os
import sys
import traceback


def _warm_up():
    import torch

    import framejit

    def warm(x):
        return (x * 2).sum()

    for backend in ("eager", "aot_eager"):
        framejit.compile(warm, backend=backend)(torch.ones(2, requires_grad=True)).backward()
    framejit.reset()


def main():
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w")
    import logging

    import torch

    logging.disable(logging.CRITICAL)        # fake-tensor propagation logs every failing meta kernel
    torch.set_num_threads(1)
    _warm_up()
    from .generator import generate
    from .runner import run_source

    protocol.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        job = json.loads(line)
        answer = {"id": job["id"]}
        try:
            if "seed" in job:
                source, name = generate(job["seed"], version=job.get("version", 1)).source, str(job["seed"])
            else:
                source, name = job["source"], job.get("name", "src")
            outcome = run_source(source, name)
            answer.update(mismatches=[dataclasses.asdict(m) for m in outcome.mismatches],
                          eager_raised=outcome.eager_raised, graphs=outcome.graphs, breaks=outcome.breaks)
        except Exception:
            answer["harness"] = traceback.format_exc()[-3000:]
        if answer.get("mismatches") or "harness" in answer:
            answer["source"] = source       # the program exactly as this worker ran it
        healthy = _healthy()
        if not healthy:
            answer["retire"] = True     # the pool starts a fresh worker: no program inherits this state
        protocol.write(json.dumps(answer) + "\n")
        if not healthy:
            return


def _healthy():
    """Did the program leave this process fit for the next one? Inference mode cannot be switched
    off from outside its guard, a dispatch key left set breaks every later op, and autocast left on
    (or its nesting count left above zero, which keeps its cast cache forever) changes later dtypes."""
    import torch

    try:
        torch.ones(1) + 1
    except Exception:
        return False
    nesting = torch.autocast_increment_nesting()
    torch.autocast_decrement_nesting()
    return not torch.is_inference_mode_enabled() and torch.is_grad_enabled() and \
        not torch.is_autocast_enabled("cpu") and nesting == 1


if __name__ == "__main__":
    main()
