"""The per-user key that signs execution records, so framejit only unpickles records it wrote for you.

Why this exists: loading a record unpickles it, and unpickling can run any code the file names. A file
that merely looks like a record (the marker, a valid JSON header), even one owned by you and writable
by no one else (a file you downloaded from a bug report), must not be loaded as one. So every record
framejit writes carries an HMAC-SHA256 over the whole file, made with a random key that lives in the
debug directory (`<debug dir>/record.key`, FRAMEJIT_DEBUG_DIR or ~/.cache/framejit by default):

* the key is 32 random bytes, created the first time a record is written: written to a temporary file
  of mode 0600 and hard-linked into place, so the key file appears whole or not at all and an
  existing key is never overwritten (two processes racing both end up with the one that won);
* a key file that is not a regular file, not yours, or readable or writable by others is never used;
* reading a record looks the key up (never creates one): no key, or a signature made with another key
  (another user's, another debug directory's), or contents changed after signing, and the record is
  refused unless the reader passes trust=True (`--trust`).

`key_id` names a key without revealing it (the first 16 hex digits of its SHA-256), so a refusal can say
"signed with a key that is not yours" rather than just "bad signature".
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

KEY_FILE_NAME = "record.key"
_KEY_BYTES = 32


class RecordKeyError(ValueError):
    """The record key cannot be created or used; the message says why, for a person."""


def key_path(debug_dir: str | os.PathLike) -> Path:
    return Path(debug_dir).expanduser() / KEY_FILE_NAME


def key_id(key: bytes) -> str:
    return hashlib.sha256(b"framejit record key id\n" + key).hexdigest()[:16]


def sign(key: bytes, data: bytes) -> str:
    """The hex HMAC-SHA256 of `data` under `key`."""
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def signature_matches(key: bytes, data: bytes, signature: str) -> bool:
    return hmac.compare_digest(sign(key, data), signature)


def read_key(debug_dir: str | os.PathLike) -> bytes | None:
    """The key kept in `debug_dir`, or None when there is none. A key file that someone else could
    have written or read (not a regular file, not yours, mode beyond 0600) raises RecordKeyError."""
    path = key_path(debug_dir)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RecordKeyError(f"cannot open the record key {path}: {exc.strerror or exc} (it must be a regular "
                             "file of yours, not a symbolic link)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RecordKeyError(f"the record key {path} is not a regular file; remove it")
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise RecordKeyError(f"the record key {path} belongs to user id {st.st_uid}, not to you; remove it")
        if stat.S_IMODE(st.st_mode) & 0o077:
            raise RecordKeyError(f"the record key {path} can be read or written by other users (mode "
                                 f"{stat.S_IMODE(st.st_mode):o}); records signed with it prove nothing: remove it "
                                 "(framejit makes a new one)")
        data = os.read(fd, 4 * _KEY_BYTES + 16)
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(data.decode("ascii").strip())
    except ValueError:
        key = b""
    if len(key) != _KEY_BYTES:
        raise RecordKeyError(f"the record key {path} is damaged; remove it (framejit makes a new one)")
    return key


def key_for_writing(debug_dir: str | os.PathLike) -> bytes:
    """The key in `debug_dir`, created (atomically, mode 0600, never overwriting) if there is none."""
    existing = read_key(debug_dir)
    if existing is not None:
        return existing
    path = key_path(debug_dir)
    temporary = path.with_name(f".{KEY_FILE_NAME}.{os.getpid()}.{secrets.token_hex(8)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(temporary, flags, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, secrets.token_bytes(_KEY_BYTES).hex().encode("ascii") + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temporary, path)          # fails if a key appeared meanwhile: that one wins
        except FileExistsError:
            pass
    except OSError as exc:
        raise RecordKeyError(f"cannot create the record key {path}: {exc.strerror or exc}") from None
    finally:
        try:
            os.unlink(temporary)
        except OSError:
            pass
    key = read_key(debug_dir)
    if key is None:
        raise RecordKeyError(f"the record key {path} vanished while it was being created")
    return key
