"""framejit.cache_info / clear_cache / save_cache / load_cache and `python -m framejit cache ...`."""
import os

import framejit
from framejit.cli import main
from framejit.persist.store import default_store


def test_info_clear_save_load(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FRAMEJIT_CACHE_DIR", str(tmp_path / "cache"))
    store = default_store()
    store.put("k" * 64, b"artifacts", {"backend": "inductor", "graph": "3 ops: relu"})
    info = framejit.cache_info()
    assert info["directory"] == str(tmp_path / "cache") and info["entries"] == 1 and info["enabled"]
    assert info["listed"][0]["graph"] == "3 ops: relu"
    assert main(["cache", "info"]) == 0
    assert "1 entries" in capsys.readouterr().out
    bundle = str(tmp_path / "b.fjb")
    assert main(["cache", "save", bundle]) == 0 and os.path.exists(bundle)
    assert main(["cache", "clear"]) == 0 and framejit.cache_info()["entries"] == 0
    assert framejit.load_cache(bundle) == 1 and store.get("k" * 64)[1] == b"artifacts"
    assert main(["cache", "load", str(tmp_path / "missing")]) == 2
    monkeypatch.setenv("FRAMEJIT_CACHE", "0")
    assert default_store() is None and not framejit.cache_info()["enabled"]
