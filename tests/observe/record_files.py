"""Taking record files apart and putting them back together, signed, for the tests of the file format.

A test that wants one check to fire (a wrong Python version in the header, a payload that is not a
pickle, a gadget in the payload) must get past the others, so it re-signs what it changed with the
test's own key (the debug directory the `debug_dir` fixtures point FRAMEJIT_DEBUG_DIR at).
"""
import hashlib
import json
import os

from framejit.observe.record_file import MAGIC
from framejit.persist.signing import RECORD_KEY, key_id, sign, user_key


def split_record(data):
    """(signature line or None, header dict, payload) of a record file's bytes."""
    assert data.startswith(MAGIC)
    rest = data[len(MAGIC):]
    signature = None
    if rest.startswith(b"sig "):
        signature, rest = rest.split(b"\n", 1)
    header, payload = rest.split(b"\n", 1)
    return signature, json.loads(header), payload


def signed_record_bytes(header, payload, debug_dir=None, *, fix_digest=True):
    """A record file of `header` (a dict, or raw bytes) and `payload`, signed with the key of `debug_dir`
    (default: $FRAMEJIT_DEBUG_DIR)."""
    if isinstance(header, dict):
        header = dict(header)
        if fix_digest:
            header.update(payload_sha256=hashlib.sha256(payload).hexdigest(), payload_size=len(payload))
        header = json.dumps(header).encode()
    key = user_key(debug_dir or os.environ["FRAMEJIT_DEBUG_DIR"], RECORD_KEY)
    signed = MAGIC + header + b"\n" + payload
    return MAGIC + b"sig " + f"{key_id(key)} {sign(key, signed)}".encode() + b"\n" + header + b"\n" + payload


def rewrite_signed(path, payload=None, **header_changes):
    """Change a record file's header fields and/or payload, and sign it again."""
    _, header, old_payload = split_record(path.read_bytes())
    header.update(header_changes)
    path.write_bytes(signed_record_bytes(header, old_payload if payload is None else payload))
