"""The public face of the persistent cache: framejit.cache_info / clear_cache / save_cache / load_cache
and `python -m framejit cache info|clear|save|load`.

Why this exists: a cache on disk that users cannot see, bound or empty is one they cannot trust. A
bundle (save_cache) is how a deployment builds the cache once and ships it: load_cache checks the
bundle's integrity and seals its entries under the loading user's key; a bundle is trusted as a whole,
like a checkpoint passed to torch.load, so it must be the user's own private file unless trust=True.
"""
from .store import DiskStore, default_dir, default_store, enabled


def _store():
    return default_store() or DiskStore(default_dir())


def cache_info():
    """A dict: the directory, entry count and bytes, the size bound, this process's hits / misses /
    writes / refused entries, whether the cache is on, and `listed` (one dict per entry)."""
    info = _store().info()
    info["enabled"] = enabled()
    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir
        info["inductor_cache_dir"] = cache_dir()
    except Exception:
        pass
    return info


def clear_cache():
    """Remove every entry of the framejit cache; returns how many."""
    return _store().clear()


def save_cache(path):
    """Write every entry of the framejit cache into the bundle file `path`; returns how many."""
    return _store().save_bundle(path)


def load_cache(path, trust=False):
    """Add the entries of bundle `path` (written by save_cache) to this user's cache; returns how many."""
    return _store().load_bundle(path, trust=trust)


def format_info(info):
    lines = [f"framejit cache: {info['directory']} ({'on' if info.get('enabled') else 'off'})",
             f"  {info['entries']} entries, {info['bytes'] / 2 ** 20:.1f} MiB of {info['max_bytes'] / 2 ** 20:.0f} MiB"]
    if info.get("inductor_cache_dir"):
        lines.append(f"  inductor's own caches: {info['inductor_cache_dir']}")
    for entry in info["listed"]:
        state = "REFUSED (foreign, truncated or not signed by you)" if entry.get("refused") else \
            f"{entry.get('backend', '?')}: {entry.get('graph', '')}"
        lines.append(f"  {entry['key'][:16]}  {entry['size'] / 1024:8.1f} KiB  {state}")
    return "\n".join(lines)
