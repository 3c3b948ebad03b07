"""An inference graph's AOTInductor library: loaded when stored, scheduled for a background build when not.

Why this exists (issue 24): a later process should start from a stored library, not from inductor's
lowering. This decision was made inside repeated_blocks.py; when that pass became opt-in (session 24) it
left the inductor pipeline by default, and with it every library: the default `background` mode built
none, and every warm process converted and lowered again (GPT-2's warm first call 3.5 s instead of about
0.3 s). It is its own pass now, in the inductor pipeline always:

  a stored library for this graph's key     run it (nothing else compiles)
  FRAMEJIT_CACHE_AOTI=1                     the library is built now, of the graph whole, and runs; the
                                            passes after this one do not wrap it (a stored conversion runs
                                            it whole: runtime/warm_start.py). Before session 26 the rest
                                            built it inside inductor_caches.py, wrapped by the later passes
                                            (unreached_inputs' detaching wrapper hid its key: the frame's
                                            conversion was never stored)
  background (the default), none stored     the rest compiles on the JIT path; the build is scheduled
                                            (aoti_background.py) and the callable carries the key
  ... and tiered (Config.tiered)            nothing compiles now: the graph's fx code answers until the
                                            library lands, then the library (backends/tiered.py)
  a static CPU graph, inference or training, compiled behind its first call (Config.compile_behind,
  libraries on or off                       on by default): the first call answers with the fx code, the rest
                                            compiles on the compile worker, the second call waits for it
                                            (backends/compile_behind.py, tiered.answering_while_compiled)
  anything else                             the rest, as it is

(inductor_aoti.library_route decides; it refuses graphs that are not plain static CPU inference graphs.)
"""
from .. import aoti_background, compile_behind, inductor_aoti, tiered
from ..training_library import training_candidate
from .output_strides import expected_strides, restriding


def apply(gm, example_inputs, compile_rest):
    """The pass: the stored library of `gm`, or what the rest compiles (tagged with a scheduled build's key),
    or in tiered mode the fx code until the scheduled library lands."""
    action, value = inductor_aoti.library_route(gm, example_inputs)
    if action == "library":
        return value
    if action == "now":                 # built of the graph whole, so a stored conversion can run it whole
        from ...persist.store import default_store
        library = inductor_aoti.build_and_store(default_store(), value, gm, example_inputs,
                                                inductor_aoti.current_options())
        if library is not None:
            return library
        return compile_rest(gm, example_inputs)     # it did not behave as eager: the JIT path ("no" stored)
    later = aoti_background.later(gm, example_inputs, value) if action == "later" else None
    if later is not None and tiered.wanted():
        return tiered.answering_while_built(gm.forward, aoti_background.coming(later),
                                            lambda inputs: compile_restrided(gm, inputs, compile_rest))
    if tiered.behind_wanted() and behind_candidate(gm, example_inputs) and \
            not compile_behind.autotunes(inductor_aoti.current_options()):
        return tiered.answering_while_compiled(gm.forward, later,
                                               lambda inputs: compile_restrided(gm, inputs, compile_rest))
    return inductor_aoti.tagged(compile_rest(gm, example_inputs), later)


def behind_candidate(gm, example_inputs):
    """A graph compiled behind its first call: static sizes, plain CPU tensors; inference (a library could
    take it) or training (grad on, inputs that require grad: the first call's fx code records eager's
    autograd graph; the backward of the compiled graph is compiled at its first backward, under the lock)."""
    return inductor_aoti.static_sizes(gm) and (inductor_aoti.aoti_candidate(example_inputs) or
                                               training_candidate(example_inputs))


def compile_restrided(gm, inputs, compile_rest):
    """The JIT path of a tiered graph whose library did not come, its outputs in eager's strides: the
    output_strides pass's wrapper outside this pass stepped aside after the fx code's first call (whose
    strides are eager's), so the restriding it would do is done here."""
    expected = expected_strides(gm, inputs)
    compiled = compile_rest(gm, inputs)
    return restriding(compiled, expected) if any(s is not None for s in expected) else compiled
