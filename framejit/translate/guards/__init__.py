"""Guards: what a cache entry checks before it runs, and the words and state it reads to do it cheaply.

guard_set.py and identity.py record guards while translating, each of a kind in kinds/ (its words,
text and miss explanation); dict_guards.py and module_guards.py plan how an entry evaluates them
(versioned words, module-watch epoch), through guard_paths.py (cached, pinned and aliased Sources) and
guard_blocks.py (out-of-line blocks);
dict_versions.py, tensor_words.py, native_state.py and module_watch.py read CPython, TensorImpl and
libtorch state (probed at import, with plain fallbacks); autocast.py decides when a graph depends on
autocast. Imports values/, lookasides/, source.py, bytecode/ (3.11 layouts) and the leaves; the
runtime imports the readers.
"""
