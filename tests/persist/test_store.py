"""The persistent cache's store never hands out an entry it should not: truncated, unsigned, sealed by
another user's key, owned by another user or writable by others, renamed to another key. Writes are
atomic (two processes filling one directory at once), the size is bounded, bundles round-trip."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from framejit.persist import signing
from framejit.persist.store import DiskStore

ROOT = Path(__file__).resolve().parents[2]


def _entry_path(store, key):
    return Path(store.entries, key + ".fjc")


def test_round_trip_and_private_files(tmp_path):
    store = DiskStore(str(tmp_path / "c"))
    store.put("k1", b"payload", {"backend": "inductor"})
    meta, payload = store.get("k1")
    assert payload == b"payload" and meta["backend"] == "inductor" and meta["key"] == "k1"
    assert os.stat(_entry_path(store, "k1")).st_mode & 0o777 == 0o600
    assert os.stat(tmp_path / "c" / "key").st_mode & 0o777 == 0o600
    assert store.get("absent") is None


def test_truncated_entry_is_a_miss(tmp_path):
    store = DiskStore(str(tmp_path / "c"))
    store.put("k", b"x" * 1000)
    path = _entry_path(store, "k")
    data = path.read_bytes()
    for cut in (0, 10, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:cut])
        assert store.get("k") is None, cut
    path.write_bytes(data)
    assert store.get("k")[1] == b"x" * 1000


def test_changed_byte_is_a_miss(tmp_path):
    store = DiskStore(str(tmp_path / "c"))
    store.put("k", b"abcdef")
    path = _entry_path(store, "k")
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    assert store.get("k") is None


def test_entry_sealed_with_another_key_is_refused(tmp_path):
    theirs, ours = DiskStore(str(tmp_path / "theirs")), DiskStore(str(tmp_path / "ours"))
    theirs.put("k", b"their payload")
    ours.put("other", b"x")                          # our key exists and differs
    os.replace(_entry_path(theirs, "k"), _entry_path(ours, "k"))
    assert ours.get("k") is None
    assert ours.refused == 1


def test_unsigned_file_is_refused(tmp_path):
    store = DiskStore(str(tmp_path / "c"))
    store.put("other", b"x")
    path = _entry_path(store, "k")
    path.write_bytes(b'{"key": "k"}\npickled bytes')
    os.chmod(path, 0o600)
    assert store.get("k") is None


def test_entry_under_another_name_is_refused(tmp_path):
    store = DiskStore(str(tmp_path / "c"))
    store.put("k1", b"one")
    os.replace(_entry_path(store, "k1"), _entry_path(store, "k2"))
    assert store.get("k2") is None


def test_file_writable_by_others_or_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    store = DiskStore(str(tmp_path / "c"))
    store.put("k", b"payload")
    path = _entry_path(store, "k")
    os.chmod(path, 0o620)
    assert store.get("k") is None
    os.chmod(path, 0o600)
    assert store.get("k") is not None
    real_uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real_uid + 1)     # we are now someone else
    with pytest.raises(signing.ForeignFile):
        signing.user_key(str(tmp_path / "c"))                    # their key file is not ours
    assert store.get("k") is None


def test_size_bound_drops_least_recently_used(tmp_path):
    store = DiskStore(str(tmp_path / "c"), max_bytes=3500)
    for i in range(5):
        store.put(f"k{i}", bytes([i]) * 1000)
        os.utime(_entry_path(store, f"k{i}"), (1000 + i, 1000 + i))
    store.trim()
    kept = sorted(p.name for p in Path(store.entries).iterdir())
    assert kept == ["k2.fjc", "k3.fjc", "k4.fjc"], kept
    assert store.info()["entries"] == 3 and store.clear() == 3 and store.info()["entries"] == 0


def test_bundle_round_trip_into_another_users_cache(tmp_path):
    src, dst = DiskStore(str(tmp_path / "src")), DiskStore(str(tmp_path / "dst"))
    src.put("a", b"alpha", {"backend": "inductor"})
    src.put("b", b"beta")
    bundle = tmp_path / "bundle.fjb"
    assert src.save_bundle(str(bundle)) == 2
    assert dst.load_bundle(str(bundle)) == 2
    assert dst.get("a")[1] == b"alpha" and dst.get("b")[1] == b"beta"
    data = bundle.read_bytes()
    bundle.write_bytes(data[:-2])
    with pytest.raises(ValueError):
        DiskStore(str(tmp_path / "third")).load_bundle(str(bundle))
    bundle.write_bytes(data)
    os.chmod(bundle, 0o666)
    with pytest.raises(ValueError):
        DiskStore(str(tmp_path / "fourth")).load_bundle(str(bundle))
    assert DiskStore(str(tmp_path / "fourth")).load_bundle(str(bundle), trust=True) == 2


_WRITER = textwrap.dedent("""
    import sys
    from framejit.persist.store import DiskStore
    store = DiskStore(sys.argv[1])
    seen_bad = 0
    for round in range(60):
        for i in range(8):
            key = f"k{i}"
            store.put(key, (key * 5000).encode(), {"writer": sys.argv[2]})
            got = store.get(f"k{(i + 3) % 8}")
            if got is not None and got[1] != (f"k{(i + 3) % 8}" * 5000).encode():
                seen_bad += 1
    print("BAD", seen_bad, "REFUSED", store.refused)
""")


def test_two_processes_filling_the_cache_at_once(tmp_path):
    directory = str(tmp_path / "c")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, directory, str(n)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for n in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert out.split() == ["BAD", "0", "REFUSED", "0"], out
    store = DiskStore(directory)
    for i in range(8):
        assert store.get(f"k{i}")[1] == (f"k{i}" * 5000).encode()
    assert not [n for n in os.listdir(store.entries) if n.startswith(".tmp-")]
