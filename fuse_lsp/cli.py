"""`fuse-lsp`: the language server's entry point.

`fuse-lsp --check [--format text|json] PATH...` prints the diagnostics the
editor would show (the same JSON as `fuse check`) without starting a server.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from fuse_lang.cli import EXIT_USAGE, cmd_check


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fuse-lsp", description="The Fuse language server.")
    parser.add_argument("--check", action="store_true", help="print diagnostics and exit")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--stdio", action="store_true", help="serve over stdin/stdout")
    parser.add_argument("paths", nargs="*", metavar="PATH")
    args = parser.parse_args(argv)
    if args.check:
        if not args.paths:
            print("fuse-lsp: --check needs at least one PATH", file=sys.stderr)
            return EXIT_USAGE
        return cmd_check(args, prog="fuse-lsp")
    print("fuse-lsp: the language server itself is not built yet; use --check", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
