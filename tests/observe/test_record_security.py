"""Reading a record never runs code from a file framejit did not write for you, nor what a recorded
object chose to pickle itself as.

Every gadget below would create a sentinel file if anything ran it; each test asserts the file does not
exist after the record was read (header, check, load, the replay command). One test runs a gadget with
trust=True and sees the file appear, so the detection itself is shown to work. Gadgets sit in the
payload (by GLOBAL, STACK_GLOBAL, REDUCE, INST, OBJ, NEWOBJ, BUILD, nested inside recorded values),
in the header's fields, and in files that are unsigned, signed with another key, truncated, tampered
with or carry the wrong marker.
"""

import builtins
import copyreg
import io
import json
import os
import pickle
import stat
import subprocess
import sys
import types
from pathlib import Path

import dill
import pytest
import torch

from framejit.observe.record import ExecutionRecorder, RecordError
from framejit.observe.record_file import MAGIC, check_record_file, load_record, read_record_header, write_record
from framejit.persist.signing import RECORD_KEY as KEY_FILE_NAME, read_key, user_key
from framejit.tools.replay import replay

from .record_files import signed_record_bytes, split_record

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def debug_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEJIT_DEBUG_DIR", str(tmp_path / "debug"))
    (tmp_path / "debug").mkdir(mode=0o700)
    return tmp_path / "debug"


@pytest.fixture
def sentinel(tmp_path):
    path = tmp_path / "GADGET-RAN"
    yield path
    assert not path.exists() or path.read_text() == "expected", "a gadget ran"


def plain_function(x):
    return x + 1


def real_record(**globals_read):
    recorder = ExecutionRecorder()
    recorder.record_function(plain_function)
    recorder.record_args((torch.ones(2),), {})
    for name, value in globals_read.items():
        recorder.record_global(name, value)
    return recorder.to_record(None)


def header_of(debug_dir):
    """A valid header, taken from a real record written there."""
    path = write_record(real_record(), debug_dir)
    _, header, _ = split_record(path.read_bytes())
    path.unlink()
    return header


def _touch_command(path):
    return f"touch {path}"


def _exec_code(path):
    return f"open({str(path)!r}, 'w').close()"


def payload_gadgets(path):
    """name -> pickle bytes that would create `path` when unpickled by an unrestricted unpickler."""
    cmd = _touch_command(path).encode()
    code = _exec_code(path).encode()
    p = {
        "GLOBAL os.system + REDUCE (protocol 0)": b"cos\nsystem\n(V" + cmd + b"\ntR.",
        "GLOBAL posix.system + REDUCE": b"cposix\nsystem\n(V" + cmd + b"\ntR.",
        "GLOBAL subprocess.check_call + REDUCE": b"csubprocess\ncheck_call\n((Vsh\nV-c\nV" + cmd + b"\nltR.",
        "GLOBAL subprocess.Popen + REDUCE (a class)": b"csubprocess\nPopen\n((Vsh\nV-c\nV" + cmd + b"\nltR.",
        "GLOBAL builtins.eval + REDUCE": b"cbuiltins\neval\n(V__import__('os').system(" + repr(cmd.decode()).encode()
        + b")\ntR.",
        "GLOBAL builtins.exec + REDUCE": b"cbuiltins\nexec\n(V" + code + b"\ntR.",
        "INST os.system": b"(V" + cmd + b"\nios\nsystem\n.",
        "OBJ os.system": b"(cos\nsystem\nV" + cmd + b"\no.",
        "STACK_GLOBAL os.system + REDUCE (protocol 4)": b"\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93\x94\x8c"
        + bytes([len(cmd)]) + cmd + b"\x94\x85\x94R\x94.",
        "getattr(import_module('os'), 'system'), then REDUCE on it": b"cbuiltins\ngetattr\n(cimportlib\nimport_module\n(Vos\ntRVsystem\ntR(V"
        + cmd + b"\ntR.",
        "copyreg._reconstructor onto subprocess.Popen": b"ccopyreg\n_reconstructor\n(csubprocess\nPopen\ncsubprocess\nPopen\n"
        b"(Vsh\nV-c\nV" + cmd + b"\nlt" + b"R.",
        "dill _eval_repr": b"cdill._dill\n_eval_repr\n(V__import__('os').system(" + repr(cmd.decode()).encode() + b")\ntR.",
        "dill _create_array with os.system": b"cdill._dill\n_create_array\n(cos\nsystem\n(V" + cmd + b"\ntNNtR.",
        "dill _create_ftype calling exec": b"cdill._dill\n_create_ftype\n(cbuiltins\nexec\nV" + code + b"\n)}tR.",
        "storage bytes holding a gadget": pickle.dumps(_StorageBytes(pickle.dumps(_Gadget(path), protocol=2)), protocol=2),
        "BUILD with __setstate__ set by an earlier BUILD": b"ctypes\nSimpleNamespace\n)R}V__setstate__\ncos\nsystem\nsbV"
        + cmd + b"\nb.",
    }
    p["a function defined by the file, called by REDUCE"] = dill.dumps(_ByValueCall(path), recurse=True)
    for dunder, wrap in (("__setstate__", None), ("__del__", None), ("__hash__", "dict key"), ("__new__", "list")):
        instance, namespace = _by_value_instance(path, dunder)
        value = {instance: 1} if wrap == "dict key" else [instance] if wrap == "list" else instance
        p[f"a class defined by the file with {dunder}"] = _armed_dumps(value, namespace)
    evil, namespace = _by_value_list(path)
    p["a class defined by the file with append, appended to"] = _armed_dumps(evil, namespace)
    return p


_KEEP = []      # the gadget objects made here never die in this process (their __del__ is a gadget too)


def _armed_dumps(value, namespace):
    """dill's bytes of `value`, whose class's methods create the sentinel only when ARMED (so making
    the gadget here runs nothing, while the pickled copy carries ARMED = True)."""
    _KEEP.append(value)
    namespace["ARMED"] = True
    try:
        return dill.dumps(value)
    finally:
        namespace["ARMED"] = False


class _Gadget:
    """pickles itself as `os.system('touch <path>')`"""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (_touch_command(self.path),))


class _StorageBytes:
    def __init__(self, data):
        self.data = data

    def __reduce__(self):
        return (torch.storage._load_from_bytes, (self.data,))


def _main_function(path):
    """A function dill stores by value (as it does for those defined in __main__) that creates `path`."""
    namespace = {"__name__": "__main__", "PATH": str(path)}
    exec("def gadget(*args):\n    open(PATH, 'w').close()\n", namespace)
    return namespace["gadget"]


class _ByValueCall:
    def __init__(self, path):
        self.fn = _main_function(path)

    def __reduce__(self):
        return (self.fn, ())


def _by_value_instance(path, dunder):
    namespace = {"__name__": "__main__", "PATH": str(path), "ARMED": False}
    exec(f"class Evil:\n"
         f"    def {dunder}(cls_or_self, *args):\n"
         f"        if ARMED:\n"
         f"            open(PATH, 'w').close()\n"
         f"        return object.__new__(cls_or_self) if {dunder == '__new__'} else 1\n", namespace)
    instance = object.__new__(namespace["Evil"])
    instance.state = 1            # so that pickling it has a state to BUILD
    return instance, namespace


def _by_value_list(path):
    namespace = {"__name__": "__main__", "PATH": str(path), "ARMED": False}
    exec("class EvilList(list):\n"
         "    def append(self, item):\n"
         "        if ARMED:\n"
         "            open(PATH, 'w').close()\n"
         "    extend = append\n", namespace)
    evil = namespace["EvilList"]()
    list.append(evil, 1)
    return evil, namespace


def write_file(path, data, mode=0o600):
    path.write_bytes(data)
    path.chmod(mode)
    return path


# --- the signature: files framejit did not write for you ------------------------------------------


def test_the_detection_works_a_trusted_gadget_runs(debug_dir, tmp_path, sentinel):
    """With trust=True (a file you vouch for) the unrestricted unpickler runs what the file says: this
    is what the other tests would see if their gadgets ran."""
    path = write_file(tmp_path / "evil.rec", signed_record_bytes(header_of(debug_dir),
                                                                b"cbuiltins\nexec\n(V" + _exec_code(sentinel).encode()
                                                                + b"\ntR."))
    with pytest.raises(RecordError, match="not a Record"):
        load_record(path, trust=True)
    assert sentinel.exists()
    sentinel.write_text("expected")


def test_an_unsigned_file_with_a_valid_header_is_refused_and_runs_nothing(debug_dir, tmp_path, sentinel):
    """The reported attack: the marker, a valid JSON header (digest matching), a gadget payload; the
    file is yours and writable by no one else (downloaded)."""
    user_key(debug_dir, KEY_FILE_NAME)
    header = header_of(debug_dir)
    for name, payload in payload_gadgets(sentinel).items():
        header.update(payload_sha256=__import__("hashlib").sha256(payload).hexdigest(), payload_size=len(payload))
        path = write_file(tmp_path / "downloaded.rec", MAGIC + json.dumps(header).encode() + b"\n" + payload)
        for read in (load_record, check_record_file, lambda p: replay(p, run=True)):
            with pytest.raises(RecordError, match="not signed") as info:
                read(path)
            assert "--trust" in str(info.value) and "arbitrary code" in str(info.value), name
        assert read_record_header(path)["function"] == "plain_function"
        assert not sentinel.exists(), name


def test_the_replay_command_refuses_a_crafted_file_in_one_line(debug_dir, tmp_path, sentinel):
    header = header_of(debug_dir)
    payload = b"cos\nsystem\n(V" + _touch_command(sentinel).encode() + b"\ntR."
    header.update(payload_sha256=__import__("hashlib").sha256(payload).hexdigest(), payload_size=len(payload))
    path = write_file(tmp_path / "bug-report.rec", MAGIC + json.dumps(header).encode() + b"\n" + payload)
    result = subprocess.run([sys.executable, "-m", "framejit", "replay", str(path), "--run"], cwd=REPO,
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 2, result.stdout + result.stderr
    assert not sentinel.exists()
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "--trust" in result.stderr and "arbitrary code" in result.stderr


def test_a_record_signed_with_another_key_is_refused(debug_dir, tmp_path, sentinel):
    other = tmp_path / "someone-else"
    other.mkdir(mode=0o700)
    header = header_of(debug_dir)
    gadget = b"cos\nsystem\n(V" + _touch_command(sentinel).encode() + b"\ntR."
    path = write_file(tmp_path / "theirs.rec", signed_record_bytes(header, gadget, other))
    with pytest.raises(RecordError, match="signed with another key"):
        load_record(path)
    # a real record of theirs, too: it loads only where their key is
    theirs = write_record(real_record(), other)
    with pytest.raises(RecordError, match="signed with another key"):
        load_record(theirs)
    assert load_record(theirs, debug_dir=other).fn_name == "plain_function"
    assert not sentinel.exists()


def test_no_key_at_all_is_refused(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    path = write_record(real_record(), elsewhere)
    monkeypatch.setenv("FRAMEJIT_DEBUG_DIR", str(tmp_path / "empty"))
    with pytest.raises(RecordError, match="no record key"):
        load_record(path)
    assert not (tmp_path / "empty" / KEY_FILE_NAME).exists()       # reading never makes a key


def test_tampered_and_truncated_records_are_refused_without_running_anything(debug_dir, tmp_path, sentinel):
    good = write_record(real_record(), debug_dir).read_bytes()
    signature, header, payload = split_record(good)
    gadget = b"cos\nsystem\n(V" + _touch_command(sentinel).encode() + b"\ntR."
    # the payload swapped for a gadget, the header's digest fixed, the old signature kept
    header.update(payload_sha256=__import__("hashlib").sha256(gadget).hexdigest(), payload_size=len(gadget))
    tampered = write_file(tmp_path / "tampered.rec", MAGIC + signature + b"\n" + json.dumps(header).encode() + b"\n"
                          + gadget)
    with pytest.raises(RecordError, match="do not match its signature"):
        load_record(tampered)
    for cut in sorted({1, 5, len(MAGIC), len(MAGIC) + 3, len(MAGIC) + 40, len(good) // 3, len(good) // 2,
                       len(good) - 30, len(good) - 1}):
        truncated = write_file(tmp_path / "truncated.rec", good[:cut])
        with pytest.raises(RecordError):
            load_record(truncated)
    assert not sentinel.exists()


def test_a_wrong_marker_is_not_a_record(debug_dir, tmp_path, sentinel):
    good = write_record(real_record(), debug_dir).read_bytes()
    for marker in (b"FRAMEJIT-RECORX\n", b"framejit-record\n", b"\x80\x04FRAMEJIT-RECORD\n", b""):
        path = write_file(tmp_path / "marker.rec", marker + good[len(MAGIC):])
        with pytest.raises(RecordError, match="not a framejit record"):
            load_record(path, trust=True)
    assert not sentinel.exists()


def test_a_record_from_before_signing_is_refused_clearly_and_loads_with_trust():
    old = Path(__file__).parent / "records" / "before_the_move.rec"
    with pytest.raises(RecordError, match="not signed.*before records were signed.*--trust"):
        load_record(old)
    assert load_record(old, trust=True).fn_name == "uses_globals"


# --- the key ---------------------------------------------------------------------------------------


def test_the_key_is_private_made_once_and_never_overwritten(tmp_path):
    debug = tmp_path / "d"
    debug.mkdir()
    key = user_key(debug, KEY_FILE_NAME)
    key_file = debug / KEY_FILE_NAME
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert user_key(debug, KEY_FILE_NAME) == key == read_key(debug, KEY_FILE_NAME)
    assert [p.name for p in debug.iterdir()] == [KEY_FILE_NAME]     # no temporary file left behind
    write_record(real_record(), debug)
    assert read_key(debug, KEY_FILE_NAME) == key


def test_a_loose_or_linked_key_is_never_used(debug_dir, tmp_path):
    path = write_record(real_record(), debug_dir)
    key_file = debug_dir / KEY_FILE_NAME
    key_file.chmod(0o644)
    with pytest.raises(RecordError, match="can be read or written by other users"):
        load_record(path)
    key_file.chmod(0o600)
    moved = tmp_path / "real.key"
    key_file.rename(moved)
    key_file.symlink_to(moved)
    with pytest.raises(RecordError, match="symbolic link"):
        load_record(path)
    with pytest.raises(RecordError, match="symbolic link"):
        write_record(real_record(), debug_dir)
    assert load_record(path, trust=True).fn_name == "plain_function"


def test_a_key_owned_by_another_user_is_never_used(debug_dir):
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    path = write_record(real_record(), debug_dir)
    os.chown(debug_dir / KEY_FILE_NAME, 65534, 65534)
    with pytest.raises(RecordError, match="belongs to user id 65534"):
        load_record(path)


# --- the allow-list: a signed record still rebuilds data only -----------------------------------------


def test_gadgets_in_a_signed_payload_run_nothing(debug_dir, tmp_path, sentinel):
    header = header_of(debug_dir)
    for name, payload in payload_gadgets(sentinel).items():
        path = write_file(tmp_path / "signed.rec", signed_record_bytes(header, payload))
        with pytest.raises(RecordError) as info:
            load_record(path)
        message = str(info.value)
        assert "\n" not in message, name
        assert not sentinel.exists(), name


def test_gadgets_nested_in_recorded_values_run_nothing(debug_dir, sentinel):
    """What the user's objects pickle themselves as is recorded and signed by framejit itself; loading
    the record must still not run it, wherever it sits."""
    placements = {
        "a global": {"CONFIG": _Gadget(sentinel)},
        "inside a list inside a dict": {"TABLE": {"rows": [1, 2, (_Gadget(sentinel),)]}},
        "an attribute of a module stand-in": {},
        "a by-value function called by __reduce__": {"HOOK": _ByValueCall(sentinel)},
        "an instance of a by-value class with __setstate__": {"OBJ": _by_value_instance(sentinel, "__setstate__")[0]},
    }
    for name, globals_read in placements.items():
        record = real_record(**globals_read)
        if name == "an attribute of a module stand-in":
            recorder = ExecutionRecorder()
            recorder.record_function(plain_function)
            module = types.ModuleType("made_up_module")
            module.setting = _Gadget(sentinel)
            recorder.record_global("made_up_module", module)
            recorder.record_module_attr(module, "setting", module.setting)
            record = recorder.to_record(None)
        path = write_record(record, debug_dir)
        with pytest.raises(RecordError, match="refusing to load.*--trust"):
            load_record(path)
        with pytest.raises(RecordError):
            replay(path, run=True)
        assert not sentinel.exists(), name
    assert not sentinel.exists()


def test_gadgets_in_the_header_are_data(debug_dir, tmp_path, sentinel, capsys):
    """The header is JSON: parsed, never evaluated; odd values give a clear error or print as '?'."""
    from framejit.cli import main

    good = write_record(real_record(), debug_dir)
    _, header, payload = split_record(good.read_bytes())
    pickled = pickle.dumps(_Gadget(sentinel), protocol=0).decode("latin-1")
    odd_headers = {
        "a pickle as the function name": dict(header, function=pickled),
        "objects in fields": dict(header, function={"__reduce__": ["os.system", [_touch_command(sentinel)]]},
                                  filename=["x"], created={"py/object": "os.system"}),
        "a newline and escapes in a field": dict(header, function="f\n\x1b[2Jerror: fake", filename="\r"),
        "a string format version": dict(header, format_version="2"),
        "a huge payload size": dict(header, payload_size=10 ** 30),
    }
    for name, fields in odd_headers.items():
        path = write_file(tmp_path / "header.rec", signed_record_bytes(fields, payload, fix_digest="payload_size"
                                                                       not in name))
        try:
            read_record_header(path)
        except RecordError as exc:                  # a clear refusal is fine, anything else is not
            assert "\n" not in str(exc)
        assert main(["replay", str(path)]) in (0, 1, 2), name
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err
        for line in captured.out.splitlines():
            assert "\x1b" not in line and not line.startswith("error: fake"), name
        assert not sentinel.exists(), name


def test_a_signed_record_of_a_real_program_still_loads(debug_dir):
    """The allow-list holds what records are made of: modules, tensors, parameters, a module argument,
    numpy arrays, enums, paths, ordered dicts, functions and classes from __main__."""
    import collections
    import pathlib

    import numpy as np

    namespace = {"__name__": "__main__", "torch": torch}
    exec("class Net(torch.nn.Module):\n"
         "    def __init__(self):\n"
         "        super().__init__()\n"
         "        self.lin = torch.nn.Linear(3, 3)\n"
         "    def forward(self, x):\n"
         "        return self.lin(x)\n"
         "def helper(x):\n"
         "    return x * 2\n", namespace)
    recorder = ExecutionRecorder()
    recorder.record_function(plain_function)
    recorder.record_args((torch.randn(2, 3), namespace["Net"]()),
                         {"arr": np.arange(3.0), "od": collections.OrderedDict(a=torch.ones(1)),
                          "p": pathlib.Path("/tmp"), "size": torch.Size([2]), "dt": torch.float16,
                          "dev": torch.device("cpu")})
    recorder.record_global("helper", namespace["helper"])
    recorder.record_global("G", torch.nn.Parameter(torch.ones(2)))
    recorder.record_global("np", np)
    recorder.record_module_attr(torch, "relu", torch.relu)
    path = write_record(recorder.to_record(None), debug_dir)
    record = load_record(path)
    args, kwargs = record.rebuild_args()
    assert args[1](args[0]).shape == (2, 3)
    assert kwargs["arr"].tolist() == [0.0, 1.0, 2.0] and kwargs["size"] == torch.Size([2])
    assert record.globals["helper"](3) == 6
    assert isinstance(record.globals["G"], torch.nn.Parameter)
    assert "note" not in record.describe()
