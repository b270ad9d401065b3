"""`fuse-lsp`: the language server's entry point.

    fuse-lsp [--stdio]                 serve over standard input/output (the default)
    fuse-lsp --tcp HOST:PORT           serve over TCP
    fuse-lsp --check [--format text|json] PATH...
                                       print the diagnostics an editor would show
                                       (the JSON of `fuse check`) and exit 0/1/2
"""
from __future__ import annotations

import argparse
import logging
import sys
from typing import NoReturn, Sequence

from fuse_lang.cli import EXIT_USAGE, CheckOptions, cmd_check
from fuse_lang.cli.options import asks_for_json
from fuse_lang.cli.status import usable_output_streams


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """A command line that cannot be read: its one line, then the usage line
        (exit 2), as `fuse` says it (docs/cli.md, "Exit status")."""
        print(f"fuse-lsp: {message}\n{self.format_usage().rstrip()}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(prog="fuse-lsp", description="The Fuse language server.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="serve over stdin/stdout (default)")
    mode.add_argument("--tcp", metavar="HOST:PORT", help="serve over TCP")
    mode.add_argument("--check", action="store_true", help="print diagnostics and exit")
    parser.add_argument("--format", choices=("text", "json"), help="--check's output (text)")
    parser.add_argument("--log-file", metavar="FILE", help="write the server's log here")
    parser.add_argument("paths", nargs="*", metavar="PATH")
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(words)
    except SystemExit as exit_:
        if exit_.code:
            _empty_check_document(words)
        return int(exit_.code or 0) and EXIT_USAGE
    if args.check:
        usable_output_streams()
        if not args.paths:
            # (as `fuse check` without one: argparse's "required", with the usage line)
            print(f"fuse-lsp: --check needs at least one PATH\n{parser.format_usage().rstrip()}",
                  file=sys.stderr)
            _empty_check_document(words)
            return EXIT_USAGE
        return cmd_check(CheckOptions(paths=tuple(args.paths), format=args.format or "text"),
                         prog="fuse-lsp")
    if args.paths or args.format:
        print(f"fuse-lsp: {'PATH' if args.paths else '--format'} is only for --check",
              file=sys.stderr)
        return EXIT_USAGE
    host, _, port = (args.tcp or "").rpartition(":")
    if args.tcp is not None and not (port.isdigit() and 1 <= int(port) <= 65535):
        print(f"fuse-lsp: --tcp takes HOST:PORT with a port from 1 to 65535, not {args.tcp!r}",
              file=sys.stderr)
        return EXIT_USAGE
    if args.log_file:
        try:
            logging.basicConfig(filename=args.log_file, level=logging.INFO)
        except OSError as err:  # a folder, a file under a file, no permission: said
            print(f"fuse-lsp: --log-file {args.log_file}: cannot be written: "
                  f"{err.strerror or err}", file=sys.stderr)
            return EXIT_USAGE
    from .protocol import HeaderLines
    from .server import create_server

    server = create_server()
    if not args.tcp:
        server.start_io(stdin=HeaderLines(sys.stdin.buffer))  # type: ignore[arg-type]
        return server.protocol.exit_code  # type: ignore[attr-defined]
    try:
        server.start_tcp(host or "127.0.0.1", int(port))
    except OSError as err:  # a port in use, a host that does not resolve: one line
        print(f"fuse-lsp: cannot serve on {host or '127.0.0.1'}:{port}: "
              f"{err.strerror or err}", file=sys.stderr)
        return EXIT_USAGE
    return server.protocol.exit_code  # type: ignore[attr-defined]


def _empty_check_document(words: list[str]) -> None:
    """`--check --format json` on a command line that cannot be used still prints
    `fuse check`'s one document, `{"diagnostics": []}`, as `fuse check` does."""
    if "--check" in words and asks_for_json(words):
        print('{\n  "diagnostics": []\n}')


if __name__ == "__main__":
    sys.exit(main())
