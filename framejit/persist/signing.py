"""framejit's one kind of per-user signing key: what framejit unpickles later, it first checks it signed.

Why this exists: cache entries (persist/store.py) hold pickled compiler artifacts and execution records
(observe/record_file.py) hold pickled frames, and unpickling runs code. A file that merely looks like
one (even one you own: a file downloaded from a bug report) must never be unpickled. So both are signed
with an HMAC-SHA256 under a random key of this user's, kept next to what it signs: `<cache dir>/key` for
the cache, `<debug dir>/record.key` for records. One kind of key, one set of rules:

* 32 random bytes, written as hex to a private temporary file (mode 0600) and hard-linked into place, so
  the key file appears whole or not at all and an existing key is never overwritten (processes racing to
  make it all end up with the one that won);
* a key file that is not a regular file, not this user's, or readable or writable by others is never used
  (`ForeignFile`, whose message says why, for a person); reading never creates one (`read_key`), writing
  does (`user_key`);
* `seal`/`unseal` put the MAC in front of an entry's bytes (an entry that does not verify -- another
  user's, another key's, unsigned, truncated, changed -- reads as absent); `sign`/`signature_matches` give
  the hex MAC a record carries in its signature line, and `key_id` names a key without revealing it, so a
  refusal can say "signed with a key that is not yours".

Key files written before the two were one (a cache key of 32 raw bytes) are still read.
"""
import hashlib
import hmac
import os
import secrets
import stat

CACHE_KEY = "key"                   # in the cache directory
RECORD_KEY = "record.key"           # in the debug directory
MAGIC = b"FJC1"
_KEY_BYTES = 32
_MAC_BYTES = 32


class ForeignFile(ValueError):
    """A file framejit will not trust (not a regular file, not this user's, open to others, damaged)."""


def check_private(path, st=None):
    """Raise ForeignFile unless `path` is a regular file owned by this user that nobody else can write."""
    st = st if st is not None else os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ForeignFile(f"{path}: not a regular file")
    if st.st_uid != os.getuid():
        raise ForeignFile(f"{path}: owned by uid {st.st_uid}, not {os.getuid()}")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ForeignFile(f"{path}: writable by group or others")


def key_path(directory, name=CACHE_KEY):
    return os.path.join(os.path.expanduser(os.fspath(directory)), name)


def read_key(directory, name=CACHE_KEY):
    """The key `name` kept in `directory`, or None when there is none (never creates one)."""
    path = key_path(directory, name)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ForeignFile(f"cannot open the key {path}: {exc.strerror or exc} (it must be a regular file of "
                          "yours, not a symbolic link)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ForeignFile(f"the key {path} is not a regular file; remove it")
        if st.st_uid != os.getuid():
            raise ForeignFile(f"the key {path} belongs to user id {st.st_uid}, not to you; remove it")
        if stat.S_IMODE(st.st_mode) & 0o077:
            raise ForeignFile(f"the key {path} can be read or written by other users (mode "
                              f"{stat.S_IMODE(st.st_mode):o}); what it signed proves nothing: remove it "
                              "(framejit makes a new one)")
        data = os.read(fd, 4 * _KEY_BYTES + 16)
    finally:
        os.close(fd)
    key = _decode(data)
    if key is None:
        raise ForeignFile(f"the key {path} is damaged; remove it (framejit makes a new one)")
    return key


def _decode(data):
    if len(data) == _KEY_BYTES:
        return data                             # a raw key, as the cache wrote them before
    try:
        key = bytes.fromhex(data.decode("ascii").strip())
    except ValueError:
        return None
    return key if len(key) == _KEY_BYTES else None


def user_key(directory, name=CACHE_KEY):
    """This user's key `name` in `directory`, made (atomically, mode 0600, never overwriting) when there
    is none; the directory too (mode 0700)."""
    key = read_key(directory, name)         # read each time (tens of microseconds): a replaced key is seen
    if key is None:
        _make_key(key_path(directory, name))
        key = read_key(directory, name)
        if key is None:
            raise ForeignFile(f"the key {key_path(directory, name)} vanished while it was being made")
    return key


def _make_key(path):
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    temporary = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(8)}")
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
            os.link(temporary, path)            # fails if a key appeared meanwhile: that one wins
        except FileExistsError:
            pass
    except OSError as exc:
        raise ForeignFile(f"cannot make the key {path}: {exc.strerror or exc}") from None
    finally:
        try:
            os.unlink(temporary)
        except OSError:
            pass


def key_id(key):
    """A name for `key` that does not reveal it."""
    return hashlib.sha256(b"framejit record key id\n" + key).hexdigest()[:16]


def sign(key, data):
    """The hex HMAC-SHA256 of `data` under `key`."""
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def signature_matches(key, data, signature):
    return hmac.compare_digest(sign(key, data), signature)


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
