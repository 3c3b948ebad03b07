"""An inference graph stored as an AOTInductor shared library, loaded by a later process without inductor.

Why this exists (issue 24): with inductor's own caches hitting, a program started again still spent its
first call importing torch._inductor's compile machinery, probing the CPU in a subprocess and loading the
generated modules through inductor's caches: as long as torch.compile's warm start. AOTInductor compiles a
graph into one self-contained .so (C++ wrapper and kernels), and torch's C++ runner
(`torch._C._aoti.AOTIModelContainerRunnerCpu`, in torch._C: no inductor import) loads and runs it in about a
millisecond. framejit's graphs take the model's parameters as inputs, so the library holds no weights: it is
keyed, like any entry, by the graph's code and its inputs' metadata, never by their values.

Which graphs (`aoti_candidate`, then `_behaves_like_eager` at conversion): every input a plain dense CPU
tensor with static sizes, and nothing to differentiate (grad mode off, or no input requires grad). Before a
library is stored, the graph is run eagerly and the library once, on copies of the inputs from the same
random state: the library must return eager's shapes, dtypes and strides (an output the library lays out
contiguously where eager's is a permuted layout of its own memory, like GPT-2's KV cache, is copied into
eager's strides at the boundary: `_restrided`, the strides kept in the entry) and (within inductor's usual
tolerance) values, draw as many random numbers, and the graph must not write an input in place or return an
output that shares memory with an input or another output. A graph that fails any of these, or that
AOTInductor cannot compile, gets a "no" entry and the JIT inductor path (backends/inductor_caches.py), in
this process and in later ones.

The entry (`persist/`, backend name "inductor-aoti", with the CPU's capability in the key) is the .so's
bytes, sealed under the user's key: a later process checks the seal, writes the bytes to a private fresh
directory, loads them and removes the file.

When: by default after the first result, in a child process (`mode()`, backends/aoti_background.py): the
library costs a cold first call more C++ compiler time than the JIT path (GPT-2: 12.2 s of this process's CPU
and 47 s of compiler CPU, against 7.0 s and 16.4 s), and the cold first call is what every user meets.
`FRAMEJIT_CACHE_AOTI=1` builds it at conversion instead (the first process runs the library too), `0` turns
libraries off. Tiered mode (Config.tiered, backends/tiered.py): the first process runs the graph's fx code
until the background build has stored the library, then the library.
"""
import contextlib
import copy
import logging
import os
import platform
import shutil
import sys
import tempfile
import threading

import torch

from ..persist.graph_key import graph_key
from .compile_behind import compiling
from .passes.output_strides import covers_memory_once, restrided_outputs

log = logging.getLogger(__name__)
BACKEND = "inductor-aoti"
_NO = b"no"


def mode():
    """`FRAMEJIT_CACHE_AOTI`: "1" builds a graph's library at conversion (the first call waits for it), "0"
    turns libraries off, and the default, "background", compiles on the JIT path and builds the library
    after, in a child process (backends/aoti_background.py). Stored libraries are loaded in both "1" and
    "background"."""
    value = os.environ.get("FRAMEJIT_CACHE_AOTI", "background").strip().lower()
    if value in ("1", "true", "yes", "on", "now"):
        return "now"
    if value in ("0", "false", "no", "off"):
        return "off"
    return "background"


def enabled():
    return mode() != "off"


_OPTIONS = threading.local()


@contextlib.contextmanager
def options_for_graphs(options):
    """The inductor options of the graphs compiled inside (a library's key holds them; the
    repeated-blocks pass, which decides about libraries, is not handed them)."""
    before = getattr(_OPTIONS, "value", None)
    _OPTIONS.value = options
    try:
        yield
    finally:
        _OPTIONS.value = before


def aoti_candidate(example_inputs):
    """Inputs the stored library can take as they are: plain dense CPU tensors, nothing to differentiate
    (the caller has checked the sizes are static)."""
    if not example_inputs:
        return False
    grad = torch.is_grad_enabled()
    return all(plain_dense(x) and x.device.type == "cpu" and not (grad and x.requires_grad) for x in example_inputs)


def plain_dense(x):
    """A plain dense tensor (or Parameter): no subclass, strided, not nested."""
    return type(x) in (torch.Tensor, torch.nn.Parameter) and x.layout is torch.strided and not x.is_nested


def static_candidate(gm, example_inputs):
    return aoti_candidate(example_inputs) and static_sizes(gm)


def static_sizes(gm):
    """Are the sizes and strides of every input of `gm` plain ints (no symbol)?"""
    for node in gm.graph.nodes:
        value = node.meta.get("example_value") if node.op == "placeholder" else None
        if isinstance(value, torch.Tensor) and not all(type(d) is int for d in (*value.shape, *value.stride())):
            return False                   # a symbolic size: the JIT path (inductor_caches.can_use_caches)
    return True


def builds_library_now(gm, example_inputs):
    """Is `gm`'s library built at its compile (FRAMEJIT_CACHE_AOTI=1 and a graph a library can take)?"""
    from ..persist.store import default_store
    return mode() == "now" and default_store() is not None and static_candidate(gm, example_inputs)


def library_route(gm, example_inputs):
    """What passes/stored_libraries.py does with a graph that reached inductor's compiler:
    ("library", run) its library is stored: run it; ("now", key) FRAMEJIT_CACHE_AOTI=1 and none stored:
    build it now (`build_and_store`) and run it; ("later", key) its library is to be built in the background
    (aoti_background.schedule): compile on the JIT path and tag the callable with `key` (`tagged`); (None,
    None) the JIT path (not a candidate, libraries off, or a "no" entry). A library is compiled once, of the
    graph whole, and loaded by every later process; pieces each take the JIT path, whose warm start compiles
    them again (they take fakes)."""
    from ..persist.store import default_store
    how = mode()
    store = default_store() if how != "off" else None
    if store is None or not static_candidate(gm, example_inputs):
        return None, None
    options = getattr(_OPTIONS, "value", None)
    try:
        key = aoti_key(gm, example_inputs, options)
    except Exception as e:                  # something in the graph the key cannot read: no library
        log.debug("framejit cache: no key: %s", e)
        return None, None
    library, found = load_stored(store, key)
    if library is not None:
        return "library", library
    if found:                               # a "no" entry: the JIT path
        return None, None
    # "now": the caller builds it; "later": the caller schedules the build (aoti_background.schedule)
    return ("now" if how == "now" else "later"), key


def current_options():
    """The inductor options of the graph being compiled (`options_for_graphs`)."""
    return getattr(_OPTIONS, "value", None)


def tagged(compiled, key):
    """The JIT-compiled callable of a graph whose library is being built: it carries the library's key,
    so the frame's stored conversion names the library (runtime/warm_start.py)."""
    if key is None or compiled is None:
        return compiled
    if getattr(compiled, "framejit_aoti_key", key) != key:     # a callable another graph tagged: its own name
        inner = compiled

        def compiled(*inputs):
            return inner(*inputs)
        compiled.framejit_wraps = inner
    try:
        compiled.framejit_aoti_key = key
    except (AttributeError, TypeError):        # a callable that takes no attributes: no stored conversion
        pass
    return compiled


def aoti_key(gm, example_inputs, options, backend=BACKEND):
    """The entry's key: persist/graph_key.py's, with the machine and inductor's settings. A library runs
    as it is (no inductor key checks it, as inductor's caches check theirs), so everything its code
    depends on is in here."""
    machine = (platform.machine(), torch._C._get_cpu_capability())
    return graph_key(gm, example_inputs, backend, {**(options or {}), "__machine__": machine,
                                                    "__inductor__": _inductor_settings()})


def _inductor_settings():
    """inductor's settings that are not its defaults: the TORCHINDUCTOR_* environment variables, and the
    values a program set on torch._inductor.config (only if it imported it: importing it costs 2.5 s, and
    a process that never imported it has only the defaults the environment gives). Raises when the
    config cannot be read: then there is no key and no library."""
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("TORCHINDUCTOR_") and k != "TORCHINDUCTOR_CACHE_DIR")
    config = sys.modules.get("torch._inductor.config")
    if config is None:
        return env, ()
    from torch.utils._config_module import _UNSET_SENTINEL
    changed = []
    for name, entry in config._config.items():
        value = entry.user_override.get()
        if value is not _UNSET_SENTINEL and value != entry.default:
            changed.append((name, repr(value)))
    return env, tuple(sorted(changed))


def stored_entry(store, key):
    """(meta, payload) of the library entry `key`; "no" for a "no" entry; None when there is no usable
    entry (training_library.py reads its pairs' entries with this too)."""
    try:
        entry = store.get(key)
    except Exception as e:                  # an unreadable key file or directory: no entry
        log.debug("framejit cache: %s", e)
        return None
    if entry is None:
        return None
    return "no" if entry[1] == _NO else entry


def load_stored(store, key):
    """(callable or None, found): the stored library of `key` loaded, None with found=True for a "no"
    entry, (None, False) when there is no usable entry."""
    entry = stored_entry(store, key)
    if entry is None or entry == "no":
        return None, entry == "no"
    meta, payload = entry
    try:
        return _keyed(_restrided(_load_library(payload), meta.get("restride")), key), True
    except Exception as e:                  # a library this torch cannot load: compile again
        log.debug("framejit cache: library %s did not load: %s", key, e)
        return None, False


def build_and_store(store, key, gm, example_inputs, options):
    """Compile `gm` with AOTInductor, check it against eager, store the library (or a "no" entry when it
    does not behave as eager); the loaded library, or None."""
    so_bytes, why = _compile_library(gm, example_inputs, options)
    run, restride = None, None
    if so_bytes is not None:
        run = _load_library(so_bytes)
        why, restride = _behaves_like_eager(gm, run, example_inputs)
        run = _keyed(_restrided(run, restride), key)
    stored = store_outcome(store, key, so_bytes, {"backend": BACKEND, "graph": _summary(gm), "restride": restride}, why)
    return run if stored else None


def store_outcome(store, key, payload, meta, why):
    """Store a built library's `payload` under `key`, or, when `why` says why it is refused, a "no" entry (the
    JIT path for this graph, here and in later processes); True when the library is the outcome. A full disk
    or a foreign key file leaves no entry, which is not a failure. (Shared by training_library.py.)"""
    if why is not None:
        log.debug("framejit cache: graph %s not stored as a library: %s", key, why)
        payload, meta["why_not"] = _NO, why
    if store is not None:
        try:
            store.put(key, payload, meta)
        except Exception as e:
            log.debug("framejit cache: could not write %s: %s", key, e)
    return why is None


def _compile_library(gm, example_inputs, options):
    """(bytes of the .so, None), or (None, why it could not be compiled)."""
    from torch._inductor import aot_compile
    folder = tempfile.mkdtemp(prefix="framejit-aoti-")
    try:
        options = {**(options or {}), "aot_inductor.output_path": os.path.join(folder, "graph.so")}
        with compiling(), torch.no_grad(), _inductor_config_kept():
            made = aot_compile(copy.deepcopy(gm), tuple(example_inputs), options=options)
        if not isinstance(made, str) or not os.path.isfile(made):
            return None, f"AOTInductor made {type(made).__name__}, not one library"
        with open(made, "rb") as f:
            return f.read(), None
    except Exception as e:                  # what AOTInductor does not compile: the JIT path
        return None, f"AOTInductor failed: {type(e).__name__}: {str(e)[:200]}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _inductor_config_kept():
    """Put inductor's config back as it was after AOTInductor ran. AOTInductor writes into its settings in
    place (it fills `aot_inductor.metadata`, a dict default, with the CPU's details), and every setting is
    part of the FX graph cache and AOTAutograd cache keys: a JIT graph compiled after a library in the same
    process was keyed on the filled dict, so the next process, which loads the library and never fills it,
    missed inductor's caches for every such graph."""
    from torch._inductor import config
    before = {}
    for name in list(config._config):
        try:
            live = getattr(config, name)    # the live value, as code reading it sees it
            before[name] = (live, copy.deepcopy(live) if isinstance(live, (dict, list)) else None)
        except Exception:                   # a hidden or uncopyable setting: AOTInductor does not fill those
            continue
    try:
        yield
    finally:
        for name, (live, kept) in before.items():
            now = getattr(config, name)
            if now is not live:
                setattr(config, name, live)             # rebound: the old object back
            elif isinstance(now, dict) and now != kept:
                now.clear()
                now.update(kept)            # filled in place: emptied again, so a default stays the default
            elif isinstance(now, list) and now != kept:
                now[:] = kept


def _load_library(so_bytes):
    """The library loaded from a private copy (removed once loaded) as a callable graph."""
    folder = tempfile.mkdtemp(prefix="framejit-aoti-")        # mode 0700: nobody can swap the file
    try:
        path = os.path.join(folder, "graph.so")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
        with os.fdopen(fd, "wb") as f:
            f.write(so_bytes)
        runner = torch._C._aoti.AOTIModelContainerRunnerCpu(path, 1)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    run_flat = runner.run

    def run_library(*inputs):
        return tuple(run_flat(list(inputs)))
    run_library.runner = runner
    return run_library


def _keyed(run, key):
    """`run` carrying its entry's key (`framejit_aoti_key`, with which runtime/warm_start.py names the
    library in a stored conversion)."""
    if run is not None:
        run.framejit_aoti_key = key
    return run


def _restrided(run, restride):
    """`run` whose outputs take eager's strides where the library lays them out otherwise: `restride` has,
    per output, None or eager's strides. A library lays every output out contiguously, where eager can
    return a permuted layout (GPT-2's KV cache: `cat` keeps its input's transposed strides). The output is
    copied into a fresh tensor with eager's strides (eager's output owns its storage too: outputs that share
    memory never get a library), so strides, `is_contiguous()` and every later view match eager's."""
    if not restride or not any(restride):
        return run
    plan = [(i, tuple(stride)) for i, stride in enumerate(restride) if stride is not None]

    def run_restrided(*inputs):
        return tuple(restrided_outputs(run(*inputs), plan))
    run_restrided.runner = getattr(run, "runner", None)
    return run_restrided


def _behaves_like_eager(gm, run, example_inputs):
    """(None, restride) when the library `run`, its outputs given eager's strides where `restride` says
    (`_restrided`: per output None or eager's strides), does what `gm` does eagerly on copies of
    `example_inputs`; else (why not, None)."""
    def copies():
        return [x.detach().clone() for x in example_inputs]
    rng = torch.get_rng_state()
    eager_inputs = copies()
    versions = [x._version for x in eager_inputs]
    with torch.no_grad():
        expected = gm(*eager_inputs)
    eager_rng = torch.get_rng_state()
    expected = tuple(expected) if isinstance(expected, (tuple, list)) else (expected,)
    if [x._version for x in eager_inputs] != versions:
        return "the graph writes an input in place", None
    if not all(isinstance(e, torch.Tensor) for e in expected):
        return "an output is not a tensor", None
    storages = [x.untyped_storage().data_ptr() for x in eager_inputs]
    seen = set()
    for e in expected:
        ptr = e.untyped_storage().data_ptr()
        if ptr in storages or ptr in seen:
            return "an output shares memory with an input or another output", None
        seen.add(ptr)
    torch.set_rng_state(rng)
    try:
        got = run(*copies())
    except Exception as e:
        return f"the library raised {type(e).__name__}: {str(e)[:200]}", None
    finally:
        library_rng = torch.get_rng_state()
        torch.set_rng_state(eager_rng)
    if not torch.equal(library_rng, eager_rng):
        return "the library draws other random numbers", None
    if len(got) != len(expected):
        return f"{len(got)} outputs, eager {len(expected)}", None
    restride = [None if g.stride() == e.stride() else list(e.stride()) for g, e in zip(got, expected)]
    if any(s is not None and (e.storage_offset() != 0 or not covers_memory_once(e)) for s, e in zip(restride, expected)):
        return "an output differs in layout, and eager's layout is not a dense one of its own", None
    got = _restrided(lambda: got, restride)()
    for g, e in zip(got, expected):
        if (g.shape, g.dtype, g.stride(), g.device) != (e.shape, e.dtype, e.stride(), e.device):
            return f"an output differs in layout: {tuple(g.shape)} {g.dtype} {g.stride()} vs " \
                   f"{tuple(e.shape)} {e.dtype} {e.stride()}", None
        if e.is_floating_point() or e.is_complex():
            if not torch.allclose(g, e, rtol=1e-3, atol=1e-4, equal_nan=True):
                return "an output differs in value", None
        elif not torch.equal(g, e):
            return "an output differs in value", None
    return None, restride


def _summary(gm):
    ops = [str(n.target) for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
    return f"{len(ops)} ops: " + ", ".join(ops[:4]) + (", ..." if len(ops) > 4 else "")
