"""Accuracy tools: is a compiled graph's answer eager's answer, and if not, which op is wrong?

Why this exists: a backend (inductor, a user's compiler) can compute something slightly or badly
different from the fx graph it was handed, and a user then sees a wrong loss far from its cause.
`compare.py` says whether two results are the same (tensors by dtype tolerance, NaN and -0.0, nested
structures); `inputs.py` clones a call's inputs (strides and aliasing kept) and preserves the RNG;
`first_call.py` is the accuracy mode (Config.check_accuracy / FRAMEJIT_CHECK_ACCURACY=1): each new graph
runs once against its own fx code on cloned inputs; `minify.py` shrinks a graph that differs to the
smallest set of its nodes that still differs; `accuracy_record.py` writes what was found to the debug
directory. This room imports only the leaves: convert/ hands it the graph, the compiled callable and
the backend.
"""
