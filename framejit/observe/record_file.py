"""The record file: how an execution record (observe/record.py) is pickled, signed, written and read back.

Why this exists: a record must survive the trip to a file and back, and reading a file must never run
code that framejit did not write for this user. Reading a record (its header, its summary, the replay
listing) is what people do with files attached to bug reports, so:

    FRAMEJIT-RECORD\n                         the marker
    sig <key id> <hmac-sha256>\n               the signature (format 2)
    {JSON header}\n                            versions, created, function, exception, payload digest and size
    <dill payload>                             the Record (and what it holds)

* The signature is an HMAC-SHA256 over the whole file but the signature line, with the per-user key
  kept in the debug directory (persist/signing.py). `load_record` refuses, unless trust=True
  (`--trust`), a file that is not signed (a foreign file, or a record from before signing: format 1,
  as in tests/observe/records/), signed with another key, or changed since; and, as before, a file owned
  by another user or writable by others.
* Even a correctly signed record is unpickled through the restricted unpickler
  (observe/record_unpickler.py): what the user's objects chose to pickle themselves as (`__reduce__`)
  was recorded too, and it must not run when the record is read. trust=True lifts both checks and
  unpickles with dill as it is (which can run arbitrary code: only for files you trust).
* Files are created with O_EXCL and mode 0600 in a 0700 directory and never overwritten. Every failure
  is a RecordError with a message meant for a person; nothing here raises anything else on bad input.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import io
import json
import logging
import os
import platform
import re
import stat
import types
import warnings
from pathlib import Path
from typing import Any

import dill
import torch

from framejit.config import _default_debug_dir
from framejit.observe.old_paths import OLD_PATHS
from framejit.observe.record import (
    Record,
    RecordError,
    RecordVersionWarning,
    exception_type_name,
    framejit_version,
    importable_by_name,
    truncate,
)
from framejit.persist.signing import RECORD_KEY, ForeignFile, key_id, read_key, sign, signature_matches, user_key
from framejit.observe.record_unpickler import RefusedByRecordReader, restricted_loads
from framejit.observe.record_values import RecordedModule, UnpicklableValue

MAGIC = b"FRAMEJIT-RECORD\n"
FORMAT_VERSION = 2
"""2: signed (the `sig` line). 1: unsigned, loaded only with trust=True. Fields added to Record since
(config, torch_state, resume_of, main_globals) load with their defaults from a record that lacks them
(Record.__setstate__), so they did not need a new version."""
RECORD_SUFFIX = ".rec"
_SIGNATURE_PREFIX = b"sig "
_MAX_NAME_SUFFIXES = 10_000
_HEADER_MESSAGE_LIMIT = 500
TRUST_MEANS = ("Loading a record unpickles it, which can run arbitrary code from the file; pass trust=True "
               "(--trust) only if you trust where it came from")

log = logging.getLogger("framejit.observe.record_file")


class _RecordPickler(dill.Pickler):
    """dill, except that importable modules are always pickled by name (dill pickles some by value)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.ModuleType) and importable_by_name(obj):
            return (importlib.import_module, (obj.__name__,))
        return NotImplemented


def _dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    _RecordPickler(buffer).dump(obj)
    return buffer.getvalue()


class _TrustedUnpickler(dill.Unpickler):
    """Used only with trust=True: dill's loader, unrestricted, over a __main__ of the record's own: dill writes the globals of a function
    defined in __main__ as "the __main__ of the loading process" (there: framejit's command line), so
    they resolve to `main`, which load_record fills with the recorded names (Record.main_globals).
    framejit's own classes recorded under the module paths they had before the packages by stage
    (framejit.record.Record, framejit.profiler.CompileProfiler...) are found where they are now
    (observe/old_paths.py)."""

    def __init__(self, file: io.BytesIO, main: types.ModuleType) -> None:
        super().__init__(file)
        self._main = main

    def find_class(self, module: str, name: str) -> Any:
        if module == "__main__":
            if name == "__dict__":             # how dill writes the globals of __main__'s functions
                return self._main.__dict__
            try:
                return self._main.__dict__[name]
            except KeyError:
                raise RecordError(
                    f"the record refers to {name!r} of the recording program's __main__, which it does not hold"
                ) from None
        moved = OLD_PATHS.get(module)
        if moved is not None:
            try:
                return super().find_class(moved, name)
            except (ImportError, AttributeError):
                pass            # e.g. framejit.api.compile: the module kept that name
        return super().find_class(module, name)


def _trusted_loads(payload: bytes) -> tuple[Any, types.ModuleType]:
    main = types.ModuleType("__main__")
    return _TrustedUnpickler(io.BytesIO(payload), main).load(), main


# ---------------------------------------------------------------------------------------------
# Writing


def _file_stem(record: Record) -> str:
    outcome = record.exception_type.rsplit(".", 1)[-1] if record.exception_type else "ok"
    parts = [record.fn_name, outcome, str(record.firstlineno)]
    safe = [re.sub(r"[^A-Za-z0-9.-]+", "-", p).strip(".-")[:60] or "x" for p in parts]
    return "_".join(safe)


def _ensure_private_dir(directory: Path) -> None:
    """Create `directory` with mode 0700, or tighten an existing one of ours that is looser."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise RecordError(f"cannot create the records directory {directory}: {exc.strerror}") from None
    st = os.lstat(directory)
    if stat.S_ISLNK(st.st_mode):
        raise RecordError(f"refusing to write records into {directory}: it is a symbolic link")
    if not stat.S_ISDIR(st.st_mode):
        raise RecordError(f"cannot write records into {directory}: it exists and is not a directory")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise RecordError(
            f"refusing to write records into {directory}: it belongs to user id {st.st_uid}, not to you; "
            "set FRAMEJIT_DEBUG_DIR (or Config.debug_dir) to a directory of your own"
        )
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(directory, 0o700)


def _picklable_copy(value: Any, where: str, notes: list[str], memo: dict[int, Any]) -> Any:
    if isinstance(value, RecordedModule):
        if id(value) in memo:
            return memo[id(value)]
        copied = RecordedModule(value.__name__, importable=value.__dict__.get("__recorded_importable__", False))
        memo[id(value)] = copied
        for attr, attr_value in value.recorded_attributes().items():
            copied.__dict__[attr] = _picklable_copy(attr_value, f"{where}.{attr}", notes, memo)
        return copied
    try:
        _dumps(value)
        return value
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        notes.append(f"{where} ({type(value).__name__}) could not be pickled and was replaced by a placeholder: {reason}")
        try:
            value_repr = truncate(repr(value), 200)
        except Exception:
            value_repr = f"<{type(value).__name__} object>"
        return UnpicklableValue(exception_type_name(type(value)), value_repr or "", truncate(reason, 300) or "")


def _picklable_record(record: Record) -> Record:
    """A copy of `record` in which every value dill cannot pickle is replaced by a placeholder."""
    notes = list(record.notes)
    memo: dict[int, Any] = {}

    def fix_mapping(mapping: dict | None, label: str) -> dict | None:
        if mapping is None:
            return None
        return {k: _picklable_copy(v, f"{label} {k!r}", notes, memo) for k, v in mapping.items()}

    def fix_sequence(values: tuple | None, label: str) -> tuple | None:
        if values is None:
            return None
        return tuple(_picklable_copy(v, f"{label} {i}", notes, memo) for i, v in enumerate(values))

    return dataclasses.replace(
        record,
        closure=fix_sequence(record.closure, "closure value") or (),
        defaults=fix_sequence(record.defaults, "default"),
        kwdefaults=fix_mapping(record.kwdefaults, "keyword default"),
        globals=fix_mapping(record.globals, "global") or {},
        builtins=fix_mapping(record.builtins, "builtin") or {},
        args=fix_sequence(record.args, "argument") or (),
        kwargs=fix_mapping(record.kwargs, "keyword argument") or {},
        backend=_picklable_copy(record.backend, "backend", notes, memo),
        main_globals=fix_mapping(record.main_globals, "__main__ global") or {},
        notes=notes,
    )


def record_header(record: Record, payload: bytes) -> dict[str, Any]:
    """The JSON header written in front of `record`'s payload."""
    return {
        "format_version": FORMAT_VERSION,
        "framejit_version": record.framejit_version,
        "torch_version": record.torch_version,
        "python_version": record.python_version,
        "created": record.created,
        "function": record.qualname,
        "filename": record.filename,
        "firstlineno": record.firstlineno,
        "exception_type": record.exception_type,
        "exception_message": truncate(record.exception_message, _HEADER_MESSAGE_LIMIT),
        "payload_sha256": hashlib.sha256(payload).hexdigest(),
        "payload_size": len(payload),
    }


def dump_record(record: Record, key: bytes) -> bytes:
    """The bytes of a record file (marker, signature, header and payload) for `record`, signed with `key`."""
    try:
        payload = _dumps(record)
    except Exception:
        try:
            payload = _dumps(_picklable_record(record))
        except Exception as exc:
            raise RecordError(f"could not pickle the record of {record.qualname}: {type(exc).__name__}: {exc}") from None
    header = json.dumps(record_header(record, payload), sort_keys=True).encode("utf-8")
    signed = MAGIC + header + b"\n" + payload
    signature = _SIGNATURE_PREFIX + f"{key_id(key)} {sign(key, signed)}".encode("ascii") + b"\n"
    return MAGIC + signature + header + b"\n" + payload


def write_record(record: Record, debug_dir: str | os.PathLike) -> Path:
    """Write `record` to <debug_dir>/records/<function>_<ExceptionType>_<firstlineno>[_N].rec (never overwrites)."""
    debug_dir = Path(debug_dir).expanduser()
    try:
        debug_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise RecordError(f"cannot create the debug directory {debug_dir}: {exc.strerror or exc}") from None
    try:
        key = user_key(debug_dir, RECORD_KEY)
    except ForeignFile as exc:
        raise RecordError(str(exc)) from None
    data = dump_record(record, key)
    records_dir = debug_dir / "records"
    _ensure_private_dir(records_dir)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    stem = _file_stem(record)
    for n in range(_MAX_NAME_SUFFIXES):
        path = records_dir / f"{stem}{f'_{n}' if n else ''}{RECORD_SUFFIX}"
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            continue
        except OSError as exc:
            raise RecordError(f"cannot create the record file {path}: {exc.strerror or exc}") from None
        try:
            with os.fdopen(fd, "wb") as out:
                os.fchmod(out.fileno(), 0o600)
                out.write(data)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return path
    raise RecordError(f"too many records named {stem}*{RECORD_SUFFIX} in {records_dir}; clean some up")


def try_write_record(record: Record, debug_dir: str | os.PathLike) -> Path | None:
    """write_record that logs instead of raising: recording must never hide the error being recorded."""
    try:
        path = write_record(record, debug_dir)
    except Exception as exc:
        log.warning("framejit: could not write an execution record for %s: %s", record.qualname, exc)
        return None
    log.info("framejit: wrote execution record %s", path)
    return path


# ---------------------------------------------------------------------------------------------
# Reading


_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _record_path(path: str | os.PathLike) -> Path:
    """`path` as a Path, refusing what cannot name a record file before anything is opened."""
    try:
        text = os.fspath(path)
    except TypeError:
        raise RecordError(f"a record path must be a str or os.PathLike, not {type(path).__name__}") from None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text.strip():
        raise RecordError("no record file given (the path is empty); records are the .rec files in "
                          "<debug dir>/records/")
    if "\0" in text:
        raise RecordError(f"{text!r} is not a valid path (it contains a NUL character)")
    return Path(text)


def _read_file(path: Path) -> tuple[bytes, os.stat_result]:
    """The bytes of a record file. Anything but a regular file is refused before a byte is read (a named
    pipe is opened without waiting for a writer and never read from), and a file that does not start
    with the record marker is refused after reading just the marker's length."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise RecordError(f"no such record file: {path}") from None
    except OSError as exc:
        raise RecordError(f"cannot open record file {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        for is_kind, kind in _FILE_KINDS:
            if is_kind(st.st_mode):
                hint = " (records are the .rec files in <debug dir>/records/)" if kind == "a directory" else ""
                raise RecordError(f"{path} is {kind}, not a record file{hint}")
        if not stat.S_ISREG(st.st_mode):
            raise RecordError(f"{path} is not a regular file, so it is not a framejit record")
        chunks = [_read_exactly(fd, len(MAGIC), path)]
        if chunks[0] != MAGIC:
            raise RecordError(f"{path} is not a framejit record (it does not start with the framejit record marker)")
        while True:
            chunk = _read_some(fd, 1 << 20, path)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def _read_some(fd: int, size: int, path: Path) -> bytes:
    try:
        return os.read(fd, size)
    except OSError as exc:
        raise RecordError(f"cannot read record file {path}: {exc.strerror or exc}") from None


def _read_exactly(fd: int, size: int, path: Path) -> bytes:
    data = b""
    while len(data) < size:
        chunk = _read_some(fd, size - len(data), path)
        if not chunk:
            break
        data += chunk
    return data


def _split(data: bytes, path: Path) -> tuple[bytes | None, dict[str, Any], bytes, bytes]:
    """(signature line or None for an unsigned format-1 file, header, payload, the signed bytes)."""
    if not data.startswith(MAGIC):
        raise RecordError(f"{path} is not a framejit record (it does not start with the framejit record marker)")
    rest = data[len(MAGIC):]
    signature = None
    if rest.startswith(_SIGNATURE_PREFIX):
        end = rest.find(b"\n")
        if end < 0:
            raise RecordError(f"{path} is a corrupt framejit record: its signature line is incomplete")
        signature, rest = rest[len(_SIGNATURE_PREFIX):end], rest[end + 1:]
    end = rest.find(b"\n")
    if end < 0:
        raise RecordError(f"{path} is a corrupt framejit record: its header line is incomplete")
    try:
        header = json.loads(rest[:end].decode("utf-8"))
    except (ValueError, RecursionError):          # not UTF-8, not JSON, or absurdly nested
        raise RecordError(f"{path} is a corrupt framejit record: its header is not valid JSON") from None
    required = ("format_version", "python_version", "torch_version", "payload_sha256")
    if not isinstance(header, dict) or any(k not in header for k in required):
        raise RecordError(f"{path} is a corrupt framejit record: its header lacks {', '.join(required)}")
    for name in ("format_version", "payload_size"):
        if name in header and (type(header[name]) is not int):
            raise RecordError(f"{path} is a corrupt framejit record: its header's {name} is not a number")
    for name in ("python_version", "torch_version", "payload_sha256"):
        if not isinstance(header[name], str):
            raise RecordError(f"{path} is a corrupt framejit record: its header's {name} is not a string")
    return signature, header, rest[end + 1:], MAGIC + rest


def read_record_header(path: str | os.PathLike) -> dict[str, Any]:
    """The JSON header of a record file, read without unpickling anything (so safe on any file)."""
    path = _record_path(path)
    data, _ = _read_file(path)
    return _split(data, path)[1]


def header_text(header: dict[str, Any], name: str) -> str:
    """A header field for printing: strings and numbers as they are, anything else as '?'."""
    value = header.get(name)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return "?"
    text = truncate(str(value), 300) or ""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)     # no newlines, no escapes


def _check_trusted(path: Path, st: os.stat_result) -> None:
    if not hasattr(os, "getuid"):
        return
    uid = os.getuid()
    if st.st_uid != uid:
        raise RecordError(
            f"refusing to load {path}: it is owned by user id {st.st_uid}, not by you (user id {uid}). "
            f"{TRUST_MEANS}"
        )
    if stat.S_IMODE(st.st_mode) & 0o022:
        raise RecordError(
            f"refusing to load {path}: other users can write to it (mode {stat.S_IMODE(st.st_mode):o}). "
            f"Loading a record unpickles it, which can run arbitrary code; `chmod 600 {path}` or pass "
            "trust=True (--trust) if you trust it"
        )


def _check_signature(path: Path, signature: bytes | None, signed: bytes, debug_dir: Path) -> None:
    if signature is None:
        raise RecordError(
            f"refusing to load {path}: it is not signed, so nothing shows framejit wrote it for you (records "
            f"framejit writes now are signed; an unsigned one is a foreign file or from a framejit before "
            f"records were signed). {TRUST_MEANS}")
    try:
        key = read_key(debug_dir, RECORD_KEY)
    except ForeignFile as exc:
        raise RecordError(f"refusing to load {path}: {exc}. {TRUST_MEANS}") from None
    try:
        written_id, digest = signature.decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        raise RecordError(f"refusing to load {path}: its signature line is damaged. {TRUST_MEANS}") from None
    if key is None:
        raise RecordError(
            f"refusing to load {path}: there is no record key in {debug_dir} (FRAMEJIT_DEBUG_DIR), so it was "
            f"not written by framejit for you there. Pass debug_dir= (--debug-dir) if it was written under "
            f"another debug directory. {TRUST_MEANS}")
    if written_id != key_id(key):
        raise RecordError(
            f"refusing to load {path}: it was signed with another key than yours in {debug_dir} (another "
            f"user's, or another debug directory's: pass debug_dir= / --debug-dir for that). {TRUST_MEANS}")
    if not signature_matches(key, signed, digest):
        raise RecordError(
            f"refusing to load {path}: its contents do not match its signature (changed or truncated after "
            f"framejit wrote it). {TRUST_MEANS}")


def _python_major_minor(version: str) -> str:
    return ".".join(str(version).split(".")[:2])


def _check_versions(header: dict[str, Any], path: Path) -> None:
    if header["format_version"] not in (1, FORMAT_VERSION):
        raise RecordError(
            f"{path} uses record format version {header['format_version']!r}, but this framejit "
            f"({framejit_version()}) reads format version {FORMAT_VERSION}"
        )
    recorded_python = str(header["python_version"])
    here = platform.python_version()
    if _python_major_minor(recorded_python) != _python_major_minor(here):
        raise RecordError(
            f"{path} was recorded with Python {recorded_python}, but this is Python {here}: code objects "
            f"only replay on the same Python major.minor version ({_python_major_minor(recorded_python)})"
        )
    if str(header["torch_version"]) != torch.__version__:
        warnings.warn(
            f"{path} was recorded with torch {header['torch_version']}, this is torch {torch.__version__}; "
            "the replay may behave differently",
            RecordVersionWarning,
            stacklevel=3,
        )


def _unpickle(payload: bytes, path: Path, trust: bool) -> Any:
    try:
        record, main = _trusted_loads(payload) if trust else restricted_loads(payload)
    except RefusedByRecordReader as exc:
        raise RecordError(f"refusing to load {path}: {exc}, which records framejit reads without trust=True "
                          f"do not hold. {TRUST_MEANS}") from None
    except RecordError as exc:
        raise RecordError(f"could not load the contents of {path}: {exc}") from None
    except ModuleNotFoundError as exc:
        raise RecordError(
            f"{path} refers to the module {exc.name!r}, which cannot be imported here. Records store "
            "importable functions and classes by name; replay from where that module is importable "
            "(e.g. the project's directory, or with it on PYTHONPATH)"
        ) from None
    except BaseException as exc:
        if not isinstance(exc, Exception) and not isinstance(exc, RecursionError):
            raise
        raise RecordError(
            f"could not load the contents of {path} ({type(exc).__name__}: {truncate(str(exc), 300)}); "
            "the file may be damaged or refer to code that changed since it was recorded"
        ) from None
    if isinstance(record, Record):
        _fill_main(record, main)
    return record


def _fill_main(record: Record, main: types.ModuleType) -> None:
    """Give the functions of the recording program's __main__ their recorded globals; a recorded
    function from __main__ shares that namespace with them, as it did when recorded."""
    namespace = main.__dict__
    for name, value in record.main_globals.items():
        namespace.setdefault(name, value)
    if record.module_name == "__main__":
        namespace.update(record.globals)
        record.globals = namespace


def check_record_file(path: str | os.PathLike, *, trust: bool = False,
                      debug_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Everything load_record checks before it unpickles anything (the file, its owner and mode, the
    signature, the header, the versions, the digest); returns the header. Raises RecordError."""
    return _checked(_record_path(path), trust, debug_dir)[0]


def _checked(path: Path, trust: bool, debug_dir: str | os.PathLike | None) -> tuple[dict[str, Any], bytes]:
    data, st = _read_file(path)
    if not trust:
        _check_trusted(path, st)
    signature, header, payload, signed = _split(data, path)
    if len(payload) != header.get("payload_size", len(payload)) or (
        hashlib.sha256(payload).hexdigest() != header["payload_sha256"]
    ):
        raise RecordError(
            f"{path} is a corrupt framejit record: its contents do not match the digest in its header "
            "(truncated or modified)"
        )
    if not trust:
        _check_signature(path, signature, signed, _debug_dir(debug_dir))
    _check_versions(header, path)
    return header, payload


def _debug_dir(debug_dir: str | os.PathLike | None) -> Path:
    if debug_dir is None:
        try:
            return _default_debug_dir()
        except Exception as exc:         # FRAMEJIT_DEBUG_DIR set to blanks
            raise RecordError(str(exc)) from None
    try:
        return Path(debug_dir).expanduser()
    except TypeError:
        raise RecordError(f"debug_dir must be a path, not {type(debug_dir).__name__}") from None


def load_record(path: str | os.PathLike, *, trust: bool = False, debug_dir: str | os.PathLike | None = None) -> Record:
    """Read, check (see the module doc) and unpickle a record file. `debug_dir`: where the key that signed
    it is (default: FRAMEJIT_DEBUG_DIR or ~/.cache/framejit). Raises RecordError for anything wrong."""
    path = _record_path(path)
    _, payload = _checked(path, trust, debug_dir)
    record = _unpickle(payload, path, trust)
    if not isinstance(record, Record):
        raise RecordError(f"{path} is a corrupt framejit record: it holds a {type(record).__name__}, not a Record")
    return record


__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "TRUST_MEANS",
    "check_record_file",
    "dump_record",
    "header_text",
    "load_record",
    "read_record_header",
    "record_header",
    "try_write_record",
    "write_record",
]
