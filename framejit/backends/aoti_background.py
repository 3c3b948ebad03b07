"""An inference graph's AOTInductor library built after the first result, in a child process, so that the
cold first call costs what the JIT path costs and the next process still starts from a stored library.

Why this exists (issue 24, "on by default"): building the library at conversion (inductor_aoti.py's route,
`FRAMEJIT_CACHE_AOTI=1`) made GPT-2's cold first call cost 12.2 s of this process's CPU and 47 s of C++
compiler CPU, against 7.0 s and 16.4 s on the JIT path (repeated blocks compiled once): a cost every user
meets on the first run. Here the first process compiles on the JIT path as without libraries, and hands
the graph (its module pickled, its example inputs saved with torch.save) to a child started, once the
conversion is done (`start_pending`), at the lowest priority in a session of its own; the child compiles,
checks against eager and stores the library under
the key the graph has in this process (`inductor_aoti.aoti_key`), the same the next process computes. The
JIT-compiled callable carries that key (`framejit_aoti_key`), so the frame's stored conversion
(runtime/warm_start.py) names the library; a later process loads both if the child has finished, and
converts as usual if it has not (or if the library did not behave as eager: a "no" entry).

A training graph's library pair (training_library.py) is a job of kind "training": scheduled from
inductor_caches.py's innermost compiler (its callable is not tagged: a stored conversion would run a tagged
library whole, without the passes), built with grad on and the inputs' requires_grad put back.

One build per key at a time across processes (a `<key>.building` marker in the cache directory, made
with O_EXCL; older than an hour it is taken as abandoned), and a process starts builders one after
another (a job queue file per child). The job folder is private (mode 0700) and removed by the child; what
the child reads is what this user's process wrote there, never another user's file.
"""
import atexit
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time

import torch

log = logging.getLogger(__name__)
_STARTED = set()
_PENDING = []                       # (job folder, environment) not started yet
_AT_EXIT = []
_LOCK = threading.Lock()
_STALE_SECONDS = 3600


def _marker(store, key):
    return os.path.join(store.directory, "building", key)


def _claim(store, key):
    """Take the build of `key` for this process's child, unless another process has it."""
    path = _marker(store, key)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    try:
        if time.time() - os.stat(path).st_mtime > _STALE_SECONDS:
            os.unlink(path)
    except OSError:
        pass
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        return True
    except OSError:
        return False


def later(gm, example_inputs, key):
    """`key` when the build of `gm`'s library under it is scheduled (inductor_aoti.library_route said
    "later"), else None (then nothing names the library)."""
    from ..persist.store import default_store
    from .inductor_aoti import current_options
    store = default_store()
    ok = store is not None and schedule(store, key, gm, example_inputs, current_options())
    return key if ok else None


def schedule(store, key, gm, example_inputs, options, kind="inference"):
    """Queue a child that builds and stores the library of `gm` under `key` (`start_pending` starts it);
    False when it cannot. Never raises. `kind`: "inference" (inductor_aoti.py) or "training" (a library
    pair, training_library.py: built with grad on, the inputs' requires_grad restored)."""
    with _LOCK:
        if key in _STARTED:
            return True
        _STARTED.add(key)
    try:
        if not _claim(store, key):
            return True                 # another process is building it
        folder = tempfile.mkdtemp(prefix="framejit-aoti-job-")
        with open(os.path.join(folder, "graph.pkl"), "wb") as f:
            pickle.dump({"gm": gm, "key": key, "options": options, "marker": _marker(store, key), "kind": kind,
                         "requires_grad": [bool(getattr(x, "requires_grad", False)) for x in example_inputs]}, f)
        torch.save([x.detach() for x in example_inputs], os.path.join(folder, "inputs.pt"))
        env = dict(os.environ, FRAMEJIT_CACHE_AOTI="1", PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
                   FRAMEJIT_CACHE_DIR=store.directory)
        with _LOCK:
            _PENDING.append((folder, env))
            if not _AT_EXIT:
                _AT_EXIT.append(atexit.register(start_pending))
        return True
    except Exception as e:              # an unpicklable graph, no disk: this graph gets no library
        log.debug("framejit cache: no background library for %s: %s", key, e)
        try:
            os.unlink(_marker(store, key))
        except OSError:
            pass
        return False


def start_pending():
    """Start the children of the jobs scheduled so far. The runtime calls this once a conversion is done
    (runtime/warm_start.py's `remember`), and at exit: a child started while the backend still compiles
    would take the CPU the first call needs (GPT-2: 462 s of wall time at load 19 instead of about 200)."""
    with _LOCK:
        jobs = list(_PENDING)
        _PENDING.clear()
    for folder, env in jobs:
        try:
            subprocess.Popen([sys.executable, "-c", "import framejit.backends.aoti_background as b; b.main()", folder],
                             env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True, preexec_fn=lambda: os.nice(19))
        except Exception as e:          # no child: the library is not built (the marker ages out)
            log.debug("framejit cache: background build not started: %s", e)


def main():
    """The child: build, check and store the library of the job in sys.argv[1], then remove the job."""
    import shutil
    folder = sys.argv[1]
    job = None
    try:
        with open(os.path.join(folder, "graph.pkl"), "rb") as f:
            job = pickle.load(f)            # written by this user's own process into its private folder
        inputs = torch.load(os.path.join(folder, "inputs.pt"), weights_only=True)
        from ..persist.store import default_store
        from . import inductor_aoti
        torch.set_num_threads(1)
        if job.get("kind") == "training":
            from . import training_library
            inputs = [x.requires_grad_(g) for x, g in zip(inputs, job["requires_grad"])]
            with torch.enable_grad():
                training_library.build_and_store(default_store(), job["key"], job["gm"], inputs, job["options"])
            return
        with torch.no_grad():
            inductor_aoti.build_and_store(default_store(), job["key"], job["gm"], inputs, job["options"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if job is not None:
            try:
                os.unlink(job["marker"])
            except OSError:
                pass
