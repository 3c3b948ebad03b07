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

In tiered mode (backends/tiered.py) the first process does not compile the graph at all: its fx code
answers until the library is stored here, and `coming` is how it looks at the build (the first look also
starts the pending builds, so a frame that warm_start does not store, a recompile, gets its child too).
`children_held` and `build_pending_here` let a test drive the build in its own process.

A training graph's library pair (training_library.py) is a job of kind "training": scheduled from
inductor_caches.py's innermost compiler (its callable is not tagged: a stored conversion would run a tagged
library whole, without the passes), built with grad on and the inputs' requires_grad put back.

One build per key at a time across processes (a `<key>.building` marker in the cache directory, made
with O_EXCL; older than an hour it is taken as abandoned), and a process starts builders one after
another (a job queue file per child). The job folder is private (mode 0700) and removed by the child; what
the child reads is what this user's process wrote there, never another user's file.
"""
import atexit
import contextlib
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time

import torch

from . import compile_behind

log = logging.getLogger(__name__)
_STARTED = set()
_PENDING = []                       # (job folder, environment, key) not started yet
_AT_EXIT = []
_HELD = []                          # `children_held`: jobs stay pending (tests build them here)
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


def coming(key):
    """The library of `key`, scheduled here, as backends/tiered.py waits for it: a look starts the builds
    scheduled so far (the conversion is done when its graph first runs), then loads the library if it is
    stored; the build has failed when a "no" entry is stored, or when no build holds the key's marker
    and nothing was stored (a child that died, a full disk)."""
    from ..persist.store import default_store
    from .inductor_aoti import load_stored
    from .tiered import BUILDING, FAILED, READY, Coming
    store = default_store()

    def look():
        try:
            start_pending()
            library, found = load_stored(store, key)
            if library is None and not found and not _building(store, key):
                library, found = load_stored(store, key)    # stored between the two looks: the child ended
                if library is None:
                    return FAILED, None
            if library is not None:
                return READY, library
            return (FAILED, None) if found else (BUILDING, None)
        except Exception as e:          # a look must never fail a call: the fx code goes on answering
            log.debug("framejit cache: looking at the build of %s: %s", key, e)
            return BUILDING, None
    return Coming(key, look)


def _building(store, key):
    """Is a build of `key` scheduled here or under way (its marker, this process's or another's)?"""
    with _LOCK:
        if any(job_key == key for _, _, job_key in _PENDING):
            return True
    return os.path.exists(_marker(store, key))


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
            _PENDING.append((folder, env, key))
            if not _AT_EXIT:
                _AT_EXIT.append(atexit.register(_start_at_exit))
        return True
    except Exception as e:              # an unpicklable graph, no disk: this graph gets no library
        log.debug("framejit cache: no background library for %s: %s", key, e)
        try:
            os.unlink(_marker(store, key))
        except OSError:
            pass
        return False


def start_pending(at_exit=False):
    """Start the children of the jobs scheduled so far. The runtime calls this once a conversion is done
    (runtime/warm_start.py's `remember`), the compile worker when its queue runs dry (compile_behind.py),
    and at exit: a child started while the backend still compiles would take the CPU the first call needs
    (GPT-2: 462 s of wall time at load 19 instead of about 200). A child is a session of its own, so its
    nice 19 weighs only inside it: its autogroup is set to 19 too (`_lowest_priority`)."""
    if not at_exit and compile_behind.busy():
        return                          # the worker starts them when it has compiled what it holds
    with _LOCK:
        if _HELD:
            return
        jobs = list(_PENDING)
        _PENDING.clear()
    for folder, env, _ in jobs:
        try:
            subprocess.Popen([sys.executable, "-c", "import framejit.backends.aoti_background as b; b.main()", folder],
                             env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True, preexec_fn=_lowest_priority)
        except Exception as e:          # no child: the library is not built (the marker ages out)
            log.debug("framejit cache: background build not started: %s", e)


def _lowest_priority():
    """In the child, before it runs: nice 19, for its threads and for its session's autogroup (Linux's
    scheduler shares the CPU between autogroups first, so a new session at nice 19 would still take half
    of it from the process that started it)."""
    os.nice(19)
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("19")
    except OSError:
        pass


def _start_at_exit():
    start_pending(at_exit=True)


compile_behind.on_idle(start_pending)


@contextlib.contextmanager
def children_held():
    """Inside, `start_pending` starts no child: the jobs wait, for `build_pending_here` (tests drive the build
    in their own process, synchronously). The jobs still pending at the end are dropped."""
    with _LOCK:
        _HELD.append(True)
    try:
        yield
    finally:
        with _LOCK:
            _HELD.pop()
            dropped = [] if _HELD else list(_PENDING)
            if not _HELD:
                _PENDING.clear()
        for folder, _, key in dropped:
            _drop(folder, key)


def build_pending_here():
    """Build the pending jobs in this process, as their children would (`main`); the keys built."""
    with _LOCK:
        jobs = list(_PENDING)
        _PENDING.clear()
    for folder, env, _ in jobs:
        _build(folder)
    return [key for _, _, key in jobs]


def _drop(folder, key):
    """Forget a job that was not built: its folder and marker go, and the key may be scheduled again."""
    import shutil
    with _LOCK:
        _STARTED.discard(key)
    try:
        with open(os.path.join(folder, "graph.pkl"), "rb") as f:
            marker = pickle.load(f)["marker"]
        os.unlink(marker)
    except Exception:
        pass
    shutil.rmtree(folder, ignore_errors=True)


def main():
    """The child: build, check and store the library of the job in sys.argv[1], then remove the job."""
    torch.set_num_threads(1)
    _build(sys.argv[1])


def _build(folder):
    """Build, check and store the library of the job in `folder` in the default store (the child's environment
    names the scheduling process's), then remove the job and its marker."""
    import shutil
    job = None
    try:
        with open(os.path.join(folder, "graph.pkl"), "rb") as f:
            job = pickle.load(f)            # written by this user's own process into its private folder
        inputs = torch.load(os.path.join(folder, "inputs.pt"), weights_only=True)
        from ..persist.store import default_store
        from . import inductor_aoti
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
