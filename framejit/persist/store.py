"""The directory of cache entries: one sealed file per key, written atomically, bounded in size.

Why this exists: several processes (serving replicas, a test suite under xdist) fill one cache at once,
and a process killed mid-write must not leave an entry another one trusts. An entry is written to a
private temporary file in the same directory and renamed over its name (os.replace is atomic), so a
reader sees a whole entry or none; the seal (signing.py) makes a truncated, changed or foreign file read
as absent. Beyond `max_bytes` the least recently used entries are removed (a hit refreshes the mtime).

Where: `FRAMEJIT_CACHE_DIR`, default `$XDG_CACHE_HOME/framejit/cache` (`~/.cache/framejit/cache`);
`FRAMEJIT_CACHE=0` turns it off; `FRAMEJIT_CACHE_MAX_MB` bounds it (default 1024).
"""
import hashlib
import json
import os
import tempfile
import threading

from .signing import ForeignFile, check_private, seal, unseal, user_key

SUFFIX = ".fjc"
BUNDLE_MAGIC = b"FJB1\n"
_STORES = {}
_LOCK = threading.Lock()


def default_dir():
    explicit = os.environ.get("FRAMEJIT_CACHE_DIR")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "framejit", "cache")


def enabled():
    return os.environ.get("FRAMEJIT_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def default_store():
    """The store of the current FRAMEJIT_CACHE_DIR, or None when the cache is off."""
    if not enabled():
        return None
    directory = default_dir()
    with _LOCK:
        store = _STORES.get(directory)
        if store is None:
            max_mb = float(os.environ.get("FRAMEJIT_CACHE_MAX_MB", "1024"))
            store = _STORES[directory] = DiskStore(directory, int(max_mb * 2 ** 20))
        return store


class DiskStore:
    def __init__(self, directory, max_bytes=2 ** 30):
        self.directory = directory
        self.entries = os.path.join(directory, "entries")
        self.max_bytes = max_bytes
        self.hits = self.misses = self.writes = self.refused = 0

    def _key(self):
        return user_key(self.directory)

    def _path(self, key):
        return os.path.join(self.entries, key + SUFFIX)

    # ---- one entry ----------------------------------------------------------------------------

    def get(self, key):
        """(meta dict, payload bytes) of entry `key`, or None (absent, foreign, truncated, not ours)."""
        path = self._path(key)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            self.misses += 1
            return None
        try:
            with os.fdopen(fd, "rb") as f:
                check_private(path, os.fstat(f.fileno()))
                data = f.read()
            body = unseal(self._key(), data)
        except (OSError, ForeignFile):
            body = None
        entry = _split(body) if body is not None else None
        if entry is None or entry[0].get("key") != key:
            self.refused += 1
            self.misses += 1
            return None
        try:
            os.utime(path)                # least recently used goes first
        except OSError:
            pass
        self.hits += 1
        return entry

    def put(self, key, payload, meta=None):
        """Write entry `key` (atomically: a reader sees the old entry, the new one, or none)."""
        meta = dict(meta or {}, key=key)
        body = json.dumps(meta, sort_keys=True).encode() + b"\n" + payload
        data = seal(self._key(), body)
        os.makedirs(self.entries, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.entries, prefix=".tmp-", suffix=SUFFIX)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self._path(key))
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self.writes += 1
        self.trim()

    # ---- the whole directory ----------------------------------------------------------------

    def _files(self):
        try:
            names = os.listdir(self.entries)
        except OSError:
            return []
        out = []
        for name in names:
            if not name.endswith(SUFFIX) or name.startswith(".tmp-"):
                continue
            path = os.path.join(self.entries, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            out.append((st.st_mtime, st.st_size, path))
        return sorted(out)

    def trim(self):
        files = self._files()
        total = sum(size for _, size, _ in files)
        for _, size, path in files:
            if total <= self.max_bytes:
                break
            try:
                os.unlink(path)
                total -= size
            except OSError:
                pass

    def info(self):
        files = self._files()
        listed = []
        for mtime, size, path in files:
            entry = self.get(os.path.basename(path)[:-len(SUFFIX)])
            meta = entry[0] if entry is not None else {"key": os.path.basename(path)[:-len(SUFFIX)], "refused": True}
            listed.append(dict(meta, size=size, mtime=mtime))
        return {"directory": self.directory, "entries": len(files), "bytes": sum(s for _, s, _ in files),
                "max_bytes": self.max_bytes, "hits": self.hits, "misses": self.misses, "writes": self.writes,
                "refused": self.refused, "listed": listed}

    def clear(self):
        removed = 0
        for _, _, path in self._files():
            try:
                os.unlink(path)
                removed += 1
            except OSError:
                pass
        return removed

    # ---- bundles: build once, ship, load ----------------------------------------------------

    def save_bundle(self, path):
        """Write every valid entry into one file at `path` (for another machine or user: its entries are
        sealed again under the loading user's key). Returns the number of entries written."""
        items = []
        for _, _, file in self._files():
            entry = self.get(os.path.basename(file)[:-len(SUFFIX)])
            if entry is not None:
                items.append(entry)
        index = [dict(meta, size=len(payload), sha256=hashlib.sha256(payload).hexdigest()) for meta, payload in items]
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)) or ".", prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(BUNDLE_MAGIC + json.dumps(index).encode() + b"\n")
            for _, payload in items:
                f.write(payload)
        os.replace(tmp, path)
        return len(items)

    def load_bundle(self, path, trust=False):
        """Add the entries of a bundle written by save_bundle. A bundle is trusted as a whole (its
        payloads are unpickled when used): unless `trust`, it must be this user's private file."""
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            if not trust:
                check_private(path, os.fstat(f.fileno()))
            data = f.read()
        if not data.startswith(BUNDLE_MAGIC):
            raise ValueError(f"{path}: not a framejit cache bundle")
        head_end = data.index(b"\n", len(BUNDLE_MAGIC))
        index = json.loads(data[len(BUNDLE_MAGIC):head_end])
        offset, loaded = head_end + 1, 0
        for meta in index:
            payload = data[offset:offset + meta["size"]]
            offset += meta["size"]
            if len(payload) != meta["size"] or hashlib.sha256(payload).hexdigest() != meta["sha256"]:
                raise ValueError(f"{path}: truncated or corrupt bundle")
            meta = {k: v for k, v in meta.items() if k not in ("size", "sha256")}
            self.put(meta["key"], payload, meta)
            loaded += 1
        return loaded


def _split(body):
    end = body.find(b"\n")
    if end < 0:
        return None
    try:
        meta = json.loads(body[:end])
    except ValueError:
        return None
    return (meta, body[end + 1:]) if isinstance(meta, dict) else None
