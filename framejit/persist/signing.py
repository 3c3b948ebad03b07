"""Entries are sealed with an HMAC under a per-user key: a file anyone else wrote is never unpickled.

Why this exists: an entry holds pickled compiler artifacts, and unpickling runs code. The key lives in
`<cache dir>/key` (32 random bytes, created with O_EXCL and mode 0600, refused when it is not a regular
file owned by this user and private); an entry whose MAC does not verify under it -- written by another
user, by another key, unsigned, truncated or changed -- reads as absent. (Engineer `records` signs debug
records the same way; the two key files can become one.)
"""
import hashlib
import hmac
import os
import stat
import time

MAGIC = b"FJC1"
_MAC_BYTES = 32
_KEYS = {}


class ForeignFile(ValueError):
    """A file framejit will not trust: not owned by this user, or writable by others."""


def check_private(path, st=None):
    """Raise ForeignFile unless `path` is a regular file owned by this user that nobody else can write."""
    st = st if st is not None else os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ForeignFile(f"{path}: not a regular file")
    if st.st_uid != os.getuid():
        raise ForeignFile(f"{path}: owned by uid {st.st_uid}, not {os.getuid()}")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ForeignFile(f"{path}: writable by group or others")


def user_key(directory):
    """This user's key for `directory` (made on first use)."""
    path = os.path.join(directory, "key")
    key = _KEYS.get(path)
    if key is not None:
        return key
    os.makedirs(directory, mode=0o700, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(32))
    for attempt in range(50):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise ForeignFile(f"{path}: readable or writable by others")
            check_private(path, st)
            key = f.read()
        if len(key) == 32:
            break
        time.sleep(0.01)            # another process made it and is still writing it
    else:
        raise ForeignFile(f"{path}: not a key")
    _KEYS[path] = key
    return key


def seal(key, payload):
    return MAGIC + hmac.new(key, payload, hashlib.sha256).digest() + payload


def unseal(key, data):
    """The payload of sealed `data`, or None when it is not whole and ours."""
    head = len(MAGIC) + _MAC_BYTES
    if len(data) < head or not data.startswith(MAGIC):
        return None
    mac, payload = data[len(MAGIC):head], data[head:]
    if not hmac.compare_digest(mac, hmac.new(key, payload, hashlib.sha256).digest()):
        return None
    return payload


def forget_keys():
    """Drop the keys read so far (tests switch cache directories)."""
    _KEYS.clear()
