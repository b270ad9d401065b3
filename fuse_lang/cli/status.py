"""Exit statuses of `fuse`, the errors that end a command (a usage error, a
command that failed after saying why), and the analyses a `fuse check` or
`fuse explain` process leaves for the OS to free when it exits (cli.main.entry)."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, NoReturn

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT


class UsageError(Exception):
    """A command line the user must correct (exit 2, with the usage line)."""


def file_name(text: str) -> str:
    """A file's or folder's name as an option gives it: an empty one (`--weights ""`,
    which names nothing) is reported by argparse rather than read as no option or
    as the current folder."""
    if not text:
        raise argparse.ArgumentTypeError("expected a file's name, not an empty one")
    return text


class CommandFailed(Exception):
    """A command that stopped after printing why: `status` is its exit status
    (cli.main.main returns it)."""

    def __init__(self, status: int, message: str | None = None,
                 diagnostics: tuple[dict, ...] = ()) -> None:
        super().__init__(status)
        self.status = status
        self.message = message  # what was printed, for a command that also says it in JSON
        self.diagnostics = diagnostics  # the program's diagnostics, as `fuse check` JSON


def fail(message: str, status: int, diagnostics: tuple[dict, ...] = ()) -> NoReturn:
    """Print `message` on stderr and end the command with exit status `status`
    (`diagnostics`: the program's, as `fuse check` JSON, for `--format json`)."""
    print(message, file=sys.stderr)
    raise CommandFailed(status, message, diagnostics)


# Analyses that the `fuse` command leaves for the OS to free when it exits (see
# cli.main.entry); None when fuse_lang.cli is used as a library.
_left_to_exit: list[Any] | None = None


def leave_analyses_to_exit() -> None:
    """From now on, keep every analysis made until the process ends (entry)."""
    global _left_to_exit
    _left_to_exit = []


def keep_until_exit(analysis: Any) -> None:
    """Keep `analysis` alive until the process ends, where entry asked for that."""
    if _left_to_exit is not None:
        _left_to_exit.append(analysis)


def printable(text: str, stream: Any) -> str:
    """`text` as `stream` can write it: a character its encoding cannot hold (any
    but UTF-8's; a lone surrogate from a vocabulary's JSON) as a backslash escape,
    never a traceback (generated text, a message on an ASCII terminal)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
        return text
    except UnicodeEncodeError:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        return text


def json_document(data: Any, allow_nan: bool = False, default: Any = None) -> str:
    """`data` as the JSON text of a command's `--format json` (indented, with a
    final newline), in a form standard output can write whole: its characters as
    they are where its encoding holds them, else every non-ASCII character as a
    `\\uXXXX` escape (still the same JSON), so that an ASCII terminal is no
    traceback and a file name's undecodable byte (a lone surrogate, which a
    surrogateescape stdout would write back as that raw byte) never makes the
    document text that is not UTF-8."""
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=allow_nan, default=default)
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")  # (strict: surrogates fail)
    except UnicodeEncodeError:
        text = json.dumps(data, indent=2, allow_nan=allow_nan, default=default)
    except LookupError:  # (an encoding Python does not know: as it was)
        pass
    return text + "\n"


def usable_output_streams() -> None:
    """Standard output and error write a character their encoding cannot hold as
    a backslash escape (`\\xe9`) rather than raise: a relation's value, a file or
    tensor name on an ASCII or cp1252 terminal, a file name's undecodable byte on
    a strict one, is text, never a traceback (docs/cli.md, "Exit status").  A
    UTF-8 stream that writes such a byte back as it was (surrogateescape) keeps
    doing so.  A stream the process was started without (`fuse check a.fuse >&-`,
    `2>&-`) writes nowhere, rather than fail on every print."""
    import codecs

    sys.stdout, sys.stderr = _open_stream(sys.stdout), _open_stream(sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        encoding, errors = getattr(stream, "encoding", None), getattr(stream, "errors", None)
        if encoding is None or not hasattr(stream, "reconfigure"):
            continue  # (not a text stream of the process: a test's capture)
        try:
            utf8 = codecs.lookup(encoding).name == "utf-8"
        except LookupError:
            continue
        if errors == "strict" or not utf8:
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # (a closed or detached stream)
                pass


def quiet_stdout() -> None:
    """After a reader of standard output stopped (`fuse check ... | head`): what is
    still buffered goes nowhere, rather than fail again at exit."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # (a stdout that is no file)
        pass


def _open_stream(stream: Any) -> Any:
    """`stream`, or a stream to os.devnull where the process has none (Python made
    it None, or its descriptor was closed: then it may be another file's, opened
    for reading since)."""
    import os

    try:
        if stream is not None:
            fd = stream.fileno()
            os.fstat(fd)
            try:
                import fcntl
            except ImportError:  # (Windows)
                return stream
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY:
                return stream
    except (OSError, ValueError, AttributeError):
        # (a descriptor that was closed; a test's capture, which has no descriptor, is
        # kept: io.UnsupportedOperation is an OSError and a ValueError)
        import io

        if not isinstance(stream, io.TextIOWrapper) or getattr(stream, "name", None) not in (
                "<stdout>", "<stderr>"):
            return stream
    return open(os.devnull, "w", encoding="utf-8")  # (the process's, for its lifetime)
