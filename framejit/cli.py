"""framejit's command line: `python -m framejit replay FILE`, `python -m framejit demo` and
`python -m framejit cache info|clear|save|load [PATH]` (the persistent compile cache, persist/).

Why this exists: a record written when a conversion failed should be
reproducible with one command, by someone who does not have the original
program. Exit codes of `replay`: 0 the replay ended like the recorded
conversion, 1 it did not (or could not be attempted), 2 the path is not a
loadable record (empty, missing, a directory, a pipe or device, unreadable, not
a record, corrupt or truncated, another format or Python version, not yours,
not signed with your key, holding what the restricted unpickler refuses, or
contents that do not rebuild): one line on stderr, `error: ...`, nothing
read from a pipe or device, nothing written anywhere.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import sys
import warnings

EXIT_REPRODUCED = 0
EXIT_NOT_REPRODUCED = 1
EXIT_BAD_FILE = 2

PICKLE_WARNING = (
    "warning: --trust: this record is loaded without checking that framejit wrote it for you and unpickled "
    "without restrictions, which can run any code stored in the file; use it only for files you trust."
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m framejit", description="framejit command line tools")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    replay = commands.add_parser(
        "replay",
        help="replay an execution record written by a failed (or recorded) conversion",
        description="Rebuild the recorded function and convert it again; exit 0 if the recorded "
        "outcome is reproduced, 1 if not, 2 if the file cannot be loaded.",
    )
    replay.add_argument("path", metavar="PATH", help="a .rec file (see <debug dir>/records/)")
    replay.add_argument("--run", action="store_true", help="also run the converted function and compare with eager")
    replay.add_argument(
        "--trust", action="store_true",
        help="load the file even if framejit did not write it for you (unsigned, signed by another key, owned "
        "or writable by another user) and unpickle it without restrictions: this can run any code in the file",
    )
    replay.add_argument("--debug-dir", metavar="DIR", default=None,
                        help="the debug directory whose key signed the record (default: $FRAMEJIT_DEBUG_DIR "
                        "or ~/.cache/framejit)")
    replay.add_argument("--traceback", action="store_true", help="print the replay exception's traceback")

    commands.add_parser("demo", help="run the framejit demo")

    cache = commands.add_parser("cache", help="list, clear, save or load the persistent compile cache",
                                description="The persistent cache under FRAMEJIT_CACHE_DIR.")
    cache.add_argument("action", choices=("info", "clear", "save", "load"))
    cache.add_argument("path", nargs="?", help="the bundle file (save, load)")
    cache.add_argument("--trust", action="store_true", help="load a bundle owned or writable by another user")
    return parser


def _replay(args: argparse.Namespace) -> int:
    from framejit.observe.record import RecordError
    from framejit.observe.record_file import check_record_file, header_text, load_record
    from framejit.tools.replay import replay_record

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            header = check_record_file(args.path, trust=args.trust, debug_dir=args.debug_dir)   # unpickles nothing
    except RecordError as exc:
        return _bad_file(exc)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    if args.trust:
        print(PICKLE_WARNING, file=sys.stderr)
    field = functools.partial(header_text, header)
    print(
        f"record: {field('function')} ({field('filename')}:{field('firstlineno')}), "
        f"recorded {field('created')} with framejit {field('framejit_version')}, "
        f"torch {field('torch_version')}, Python {field('python_version')}"
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")             # the version warnings were printed above
            record = load_record(args.path, trust=args.trust, debug_dir=args.debug_dir)
        result = replay_record(record, run=args.run)
    except RecordError as exc:
        return _bad_file(exc)
    print(result.summary())
    if args.traceback and result.replay_traceback:
        print(result.replay_traceback, end="")
    return EXIT_REPRODUCED if result.reproduced else EXIT_NOT_REPRODUCED


def _bad_file(exc: Exception) -> int:
    message = str(exc).replace("\r", "\\r").replace("\n", "\\n")     # one line, whatever it holds
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_FILE


def _demo(_: argparse.Namespace) -> int:
    if importlib.util.find_spec("framejit.demo") is None:
        print("error: this framejit has no demo (framejit/demo.py is missing)", file=sys.stderr)
        return 1
    status = importlib.import_module("framejit.demo").main()
    return status if isinstance(status, int) else 0


def _cache(args: argparse.Namespace) -> int:
    from framejit.persist import commands

    if args.action in ("save", "load") and not args.path:
        print(f"error: cache {args.action} needs a PATH", file=sys.stderr)
        return EXIT_BAD_FILE
    if args.action == "info":
        print(commands.format_info(commands.cache_info()))
    elif args.action == "clear":
        print(f"removed {commands.clear_cache()} entries")
    elif args.action == "save":
        print(f"saved {commands.save_cache(args.path)} entries to {args.path}")
    else:
        try:
            print(f"loaded {commands.load_cache(args.path, trust=args.trust)} entries from {args.path}")
        except (OSError, ValueError) as exc:
            return _bad_file(exc)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handlers = {"replay": _replay, "demo": _demo, "cache": _cache}
    return handlers[args.command](args)
