"""Calling inductor so that its own on-disk caches (FX graph cache, AOTAutograd cache) can hit.

Why this exists (issue 24): inductor's caches key a compiled graph on the graph's code, its inputs'
metadata and the *shape environment's* facts, which they read from the TracingContext torch.compile
sets around every backend call. framejit called `compile_fx` with real example inputs and no
TracingContext, so both caches bypassed every graph ("No shape env"): every process, even the same
program started again, lowered and C++-compiled every graph anew, and framejit's warm start was slower
than torch.compile's.

`compile_with_caches` runs `compile_fx` inside a TracingContext over a fresh FakeTensorMode with a
ShapeEnv, and hands it fake copies of the example inputs with *static* shapes (AOT autograd would give
real inputs fresh size symbols under a ShapeEnv: dynamic kernels framejit never asked for). Graphs whose
inputs are not all plain dense tensors (Python numbers, subclasses) or whose placeholders have symbolic
sizes (dynamic=True, automatic dynamic after a recompile) keep the old call:
their specialization would change, so they stay uncached rather than compiled differently.

An inference graph (nothing to differentiate, plain CPU tensors) goes first to inductor_aoti.py: compiled
once as an AOTInductor library, stored, and loaded by later processes without importing inductor at all.
A training graph (grad on, inputs that require grad) goes to training_library.py: its forward and
backward stored as a pair of AOTInductor libraries, built after the first result like an inference graph's.
For every other graph, framejit's own persistent cache (persist/) keeps, per graph, the artifacts
inductor wrote while compiling it (its mega-cache bytes: FX graph and AOTAutograd entries, the generated code and kernels), sealed with
the user's key under `FRAMEJIT_CACHE_DIR`. On a later compile of the same graph they are put back into
inductor's caches first, so a process whose TORCHINDUCTOR_CACHE_DIR is empty (a new container, a wiped
/tmp, another machine after `framejit.load_cache`) still hits. Backward graphs compile lazily, after the
forward call: their artifacts are not in the entry (inductor's own cache directory keeps them).
"""
import logging

import torch

from ..persist.graph_key import graph_key
from ..persist.store import default_store
from . import aoti_background, inductor_aoti, training_library

log = logging.getLogger(__name__)


def can_use_caches(example_inputs, gm=None):
    """Are all graph inputs plain dense tensors with static sizes in the graph (so static fake copies
    stand for them exactly; a symbolic size: the graph is dynamic, keep it so)?"""
    return all(inductor_aoti.plain_dense(x) for x in example_inputs) and \
        (gm is None or inductor_aoti.static_sizes(gm))


def compile_with_caches(compile_fx, gm, example_inputs, options=None):
    """`compile_fx(gm, example_inputs)`, inside the TracingContext inductor's caches need to hit, with
    framejit's persistent entry for this graph loaded first (and written when there was none)."""
    if not can_use_caches(example_inputs, gm):
        return compile_fx(gm, example_inputs)
    store = default_store()
    library = _stored_library(store, gm, example_inputs, options)
    if library is None:                     # a training graph's library pair (training_library.py)
        library = _training_library(store, gm, example_inputs, options)
    if library is not None:
        return library
    from torch._guards import TracingContext, tracing
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.compiler._cache import CacheArtifactManager
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    try:
        key = graph_key(gm, example_inputs, "inductor", options) if store is not None else None
    except Exception as e:                  # something in the graph the key cannot read: no entry
        log.debug("framejit cache: no key: %s", e)
        store = key = None
    entry = _load_entry(store, key)
    fake_mode = FakeTensorMode(shape_env=ShapeEnv())
    with fake_mode:
        fakes = [fake_mode.from_tensor(x, static_shapes=True) for x in example_inputs]
    with tracing(TracingContext(fake_mode)), CacheArtifactManager.with_fresh_cache():
        compiled = compile_fx(gm, fakes)
        recorded = [a for group in getattr(CacheArtifactManager, "_new_cache_artifacts", {}).values() for a in group]
        made = CacheArtifactManager.serialize() if store is not None and entry is None else None
    _record_outside(CacheArtifactManager, recorded)
    if made is not None:
        try:
            store.put(key, made[0], {"backend": "inductor", "graph": _first_line(gm)})
        except Exception as e:              # a full disk, a foreign key file: no entry, not a failure
            log.debug("framejit cache: could not write %s: %s", key, e)
    return compiled


def _stored_library(store, gm, example_inputs, options):
    """The graph as an AOTInductor library (inductor_aoti.py): loaded from its entry, or compiled, checked
    and stored when there is none; None when the graph takes the JIT path (no cache, not an inference
    graph, a "no" entry, or a library that does not behave as eager)."""
    if store is None or inductor_aoti.mode() != "now" or not inductor_aoti.aoti_candidate(example_inputs):
        return None                         # background libraries: passes/repeated_blocks.py asks for them
    try:
        key = inductor_aoti.aoti_key(gm, example_inputs, options)
    except Exception as e:                  # something in the graph the key cannot read: no entry
        log.debug("framejit cache: no key: %s", e)
        return None
    library, found = inductor_aoti.load_stored(store, key)
    if library is not None or found:
        return library
    return inductor_aoti.build_and_store(store, key, gm, example_inputs, options)


def _training_library(store, gm, example_inputs, options):
    """A training graph's stored library pair (training_library.py) as its compiled callable, or None (the
    JIT path compiles it). With no entry yet: FRAMEJIT_CACHE_AOTI=1 builds the pair now (the first call
    waits for it and runs it); the default, background, schedules its build (aoti_background.py, a job of
    kind "training") for after the first result. A "no" entry, mode "0", or a graph the pair cannot take:
    None. The callable is not tagged with the key (inductor_aoti.tagged): a stored conversion runs a tagged
    library whole, without the passes that wrap this one."""
    how = inductor_aoti.mode()
    if store is None or how == "off" or not training_library.enabled() or \
            not training_library.training_candidate(example_inputs):
        return None
    try:
        key = training_library.training_key(gm, example_inputs, options)
    except Exception as e:                  # something in the graph the key cannot read: no library
        log.debug("framejit cache: no key: %s", e)
        return None
    run, found = training_library.load_stored(store, key, gm)
    if run is not None or found:
        return run
    if how == "now":
        return training_library.build_and_store(store, key, gm, example_inputs, options)
    aoti_background.schedule(store, key, gm, example_inputs, options, kind="training")
    return None


def _record_outside(manager, artifacts):
    """Put the artifacts recorded in the fresh record back into the process's own record, so that
    torch.compiler.save_cache_artifacts() still returns framejit's graphs too."""
    try:
        for artifact in artifacts:
            if artifact not in manager._seen_artifacts:
                manager._new_cache_artifacts[artifact.type()].append(artifact)
                manager._seen_artifacts.add(artifact)
    except (AttributeError, TypeError) as e:      # another torch's private layout: only the record misses them
        log.debug("framejit cache: artifacts not re-recorded: %s", e)


def _load_entry(store, key):
    """Put entry `key`'s artifacts back into inductor's caches; the entry or None."""
    if store is None:
        return None
    try:
        entry = store.get(key)
    except Exception as e:                  # an unreadable key file or directory: no cache, not a failure
        log.debug("framejit cache: %s", e)
        return None
    if entry is None:
        return None
    try:
        torch.compiler.load_cache_artifacts(entry[1])
    except Exception as e:
        log.debug("framejit cache: entry %s did not load: %s", key, e)
        return None
    return entry


def _first_line(gm):
    ops = [str(n.target) for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
    return f"{len(ops)} ops: " + ", ".join(ops[:4]) + (", ..." if len(ops) > 4 else "")
