"""framejit's persistent cache: what a later process needs to skip work a conversion already did.

Why this exists (issue 24): a program started again paid inductor's whole compile again. This package
keeps, per compiled graph, the backend's compiled artifact on disk (`FRAMEJIT_CACHE_DIR`), signed with a
per-user key so that nothing another user could have written is ever unpickled. It sits beside the
leaves: it imports nothing of framejit, and the inductor backend uses it (backends/inductor_caches.py).

* `signing.py`  -- framejit's one kind of per-user HMAC key (mode 0600): sealing/unsealing of entry bytes,
                   and the signatures of execution records (observe/record_file.py)
* `store.py`    -- the directory of entries: atomic writes, size bound, info, clear, save/load bundles
* `graph_key.py` -- what an entry is keyed by: the graph's code and constants, its inputs' metadata, the
                   global torch state compiling depends on, framejit/torch/Python versions, backend options
* `commands.py` -- framejit.cache_info / clear_cache / save_cache / load_cache and the `cache` CLI command
"""
