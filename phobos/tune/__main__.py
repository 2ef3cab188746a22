"""`python -m phobos.tune`: read the tuner's records.

    python -m phobos.tune show KERNEL [--chip sm_90] [--plot FILE.png] [--cache-dir DIR]
    python -m phobos.tune list [--chip sm_90] [--cache-dir DIR]

`show` explains each record of a kernel: every variant timed, fastest first, and
every one left out with its reason. `list` gives one line per record. The cache is
`$PHOBOS_CACHE_DIR`, else `~/.cache/phobos`, unless `--cache-dir` names another.
Exit status: 0 shown, 1 nothing to show, 2 usage (or `--plot` without matplotlib).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from phobos.runtime.cache import KernelCache
from phobos.tune.records import RecordStore
from phobos.tune.show import list_all, show


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--chip", metavar="sm_XX", help="only the records of this chip")
    common.add_argument(
        "--cache-dir", metavar="DIR", help="the kernel cache (default: $PHOBOS_CACHE_DIR)"
    )
    parser = argparse.ArgumentParser(
        prog="python -m phobos.tune", description="Read the autotuner's records."
    )
    commands = parser.add_subparsers(dest="command", metavar="{show,list}")
    one = commands.add_parser("show", parents=[common], help="explain the records of a kernel")
    one.add_argument("kernel", metavar="KERNEL", help="the kernel's name")
    one.add_argument("--plot", metavar="FILE.png", help="save a chart of time per variant")
    commands.add_parser("list", parents=[common], help="one line per record")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command of `argv` (without the program name); the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    except SystemExit as exc:  # --help, or a usage error argparse printed
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser.print_usage(sys.stderr)
        return 2
    store = RecordStore(KernelCache(args.cache_dir))
    if args.command == "show":
        return show(store, args.kernel, args.chip, args.plot)
    return list_all(store, args.chip)


if __name__ == "__main__":
    sys.exit(main())
