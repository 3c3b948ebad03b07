"""Config: defaults, environment variables, overrides, validation, hashability."""

import dataclasses
from pathlib import Path

import pytest

from framejit.config import Config

ENV_VARS = ("FRAMEJIT_DEBUG_DIR", "FRAMEJIT_RECORD", "FRAMEJIT_DEBUG", "FRAMEJIT_REPORT")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def test_defaults():
    config = Config()
    assert config.recompile_limit == 8
    assert config.debug_dir == Path("~/.cache/framejit").expanduser()
    assert config.records_dir == config.debug_dir / "records"
    assert (config.record_all, config.record_on_failure, config.debug, config.profile_conversion) == (
        False, True, False, False,
    )
    assert config.metrics_size == 64
    assert config.report_path is None
    assert config.inline_depth == 16


def test_hashable_and_compared_by_value():
    a, b = Config(debug_dir="/tmp/x"), Config(debug_dir=Path("/tmp/x"))
    assert a == b and hash(a) == hash(b)
    cache = {a: "converted"}
    assert cache[b] == "converted"
    assert Config(recompile_limit=2) != Config()
    assert dataclasses.replace(a, debug=True) != a


def test_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().debug = True


def test_debug_dir_default_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("FRAMEJIT_DEBUG_DIR", str(tmp_path))
    assert Config().debug_dir == tmp_path
    assert Config.from_env().debug_dir == tmp_path


def test_from_env_reads_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("FRAMEJIT_RECORD", "1")
    monkeypatch.setenv("FRAMEJIT_DEBUG", "true")
    monkeypatch.setenv("FRAMEJIT_REPORT", str(tmp_path / "report.jsonl"))
    config = Config.from_env()
    assert config.record_all is True
    assert config.debug is True
    assert config.report_path == tmp_path / "report.jsonl"


def test_from_env_false_and_unset(monkeypatch):
    monkeypatch.setenv("FRAMEJIT_RECORD", "0")
    assert Config.from_env().record_all is False
    assert Config.from_env().debug is False


def test_overrides_win_over_environment(monkeypatch):
    monkeypatch.setenv("FRAMEJIT_DEBUG", "1")
    config = Config.from_env(debug=False, recompile_limit=3)
    assert config.debug is False and config.recompile_limit == 3


def test_unknown_override_is_named():
    with pytest.raises(TypeError, match="recompile_limt"):
        Config.from_env(recompile_limt=3)


def test_bad_environment_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("FRAMEJIT_RECORD", "maybe")
    with pytest.raises(ValueError, match="FRAMEJIT_RECORD.*'maybe'"):
        Config.from_env()


@pytest.mark.parametrize(
    "kwargs, error, pattern",
    [
        ({"recompile_limit": 0}, ValueError, "recompile_limit must be >= 1"),
        ({"recompile_limit": "8"}, TypeError, "recompile_limit must be an int"),
        ({"recompile_limit": True}, TypeError, "recompile_limit must be an int"),
        ({"metrics_size": -1}, ValueError, "metrics_size must be >= 0"),
        ({"inline_depth": 1.5}, TypeError, "inline_depth must be an int"),
        ({"debug": "yes"}, TypeError, "debug must be True or False"),
        ({"record_all": 1}, TypeError, "record_all must be True or False"),
        ({"debug_dir": ""}, ValueError, "debug_dir must not be empty"),
        ({"debug_dir": 3}, TypeError, "debug_dir must be a path"),
        ({"report_path": 3}, TypeError, "report_path must be a path"),
    ],
)
def test_validation_messages(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        Config(**kwargs)


def test_paths_are_normalised(tmp_path):
    config = Config(debug_dir="~/fj", report_path=str(tmp_path / "r.jsonl"))
    assert config.debug_dir == Path.home() / "fj"
    assert config.report_path == tmp_path / "r.jsonl"


@pytest.mark.parametrize("variable, value", [("FRAMEJIT_DEBUG_DIR", "   "), ("FRAMEJIT_REPORT", " \t")])
def test_a_blank_path_variable_is_named(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=f"environment variable {variable} must be a path"):
        Config.from_env()


def test_a_blank_debug_dir_variable_is_named_by_the_default_too(monkeypatch):
    monkeypatch.setenv("FRAMEJIT_DEBUG_DIR", " ")
    with pytest.raises(ValueError, match="environment variable FRAMEJIT_DEBUG_DIR must be a path"):
        Config()


def test_empty_path_variables_mean_unset(monkeypatch):
    monkeypatch.setenv("FRAMEJIT_REPORT", "")
    assert Config.from_env().report_path is None


def test_bad_flag_value_lists_the_accepted_words(monkeypatch):
    monkeypatch.setenv("FRAMEJIT_DEBUG", "2")
    with pytest.raises(ValueError, match=r"FRAMEJIT_DEBUG must be 0 or 1 \(or false/true, no/yes, off/on; got '2'\)"):
        Config.from_env()


def test_unknown_setting_suggests_the_close_one():
    with pytest.raises(TypeError, match=r"Config.from_env\(\) got an unexpected keyword argument 'inline_dept' "
                                        r"\(did you mean 'inline_depth'\?\)"):
        Config.from_env(inline_dept=3)
