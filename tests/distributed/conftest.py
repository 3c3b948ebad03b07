"""tests/distributed: every test starts its own ranks (launch.run_ranks: 2 processes, gloo on CPU, a
FileStore rendezvous, a deadline under 60 s), marked `distributed` (`-m "not distributed"` skips them)."""
import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "distributed: starts a process group of its own (2-4 local ranks, gloo)")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/distributed/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.distributed)
