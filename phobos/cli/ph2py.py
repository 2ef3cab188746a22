"""`ph2py`: print the Python spelling of a Phobos source.

    ph2py FILE.ph [FILE.ph...] [-o OUT] [--error-format human|json]
    ph2py --version

The output is a Python module whose `@ph.kernel` and `@ph.fn` functions translate
back to the same program. Diagnostics and exit statuses are those of
`phobos-compile` (0 printed, 1 the source has errors, 2 usage, 101 internal error).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from phobos.cli.compile import UsageError, _Parser, compile_files, run_tool, version
from phobos.diagnostics.diagnostic import Diagnostic


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ph2py", description="Print the Python spelling of Phobos sources.")
    parser.add_argument("files", nargs="*", metavar="FILE.ph", help="a Phobos source")
    parser.add_argument("-o", dest="output", metavar="OUT", help="write the Python to OUT")
    parser.add_argument(
        "--error-format",
        choices=["human", "json"],
        default="human",
        help="diagnostics as rustc lays them out, or one JSON object per line",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    return parser


def run(
    argv: Sequence[str],
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    color: bool | None = None,
) -> int:
    """Run `ph2py` with `argv` (without the program name); return the exit status."""

    def body(session, opts) -> int:
        if opts.version:
            session.stdout.write(version() + "\n")
            return 0
        if not opts.files:
            raise UsageError("no input files (see `ph2py --help`)")
        for path in opts.files:
            if not path.endswith(".ph"):
                return session.usage(
                    Diagnostic.error(
                        "E0902",
                        f"`ph2py` reads Phobos text, but `{path}` is not a `.ph` file",
                        None,
                    )
                )
        return compile_files(session, opts.files, "py", opts.output)

    return run_tool("ph2py", build_parser(), argv, stdout, stderr, color, body)


def main(argv: Sequence[str] | None = None) -> int:
    """The `ph2py` console script."""
    return run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
