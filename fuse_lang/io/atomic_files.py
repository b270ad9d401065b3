"""Files written whole or not at all, with nothing left behind by a killed write.

A write goes to a temporary file in the target's folder and is renamed over the
target when it is complete, so the target is either its old self or the new
file whole, whatever happens to the writer.  What a write killed outright
(kill -9, the machine's memory killer) can leave is the temporary; two layers
keep it from staying:

- Where Linux offers it (`O_TMPFILE`: ext4, XFS, btrfs, tmpfs...) the temporary
  has no name while it is written: a killed writer's file is freed by the
  kernel with its process.  Once complete it is given a name (`linkat` through
  `/proc/self/fd`) and that name renamed over the target at once; only a kill
  between those two calls leaves a named temporary.  Where the name cannot be
  given (a sandbox's `/proc`), the file is copied to a named temporary, and
  the process's later writes use named ones.
- Elsewhere (another system, a file system without `O_TMPFILE`, no `/proc`)
  the temporary is named from the start.

A named temporary is recognisable and tied to its target:
`.<target>.fuse-<pid>@<host>-<random>.tmp` (a target's name longer than 120
characters is cut and followed by a digest of the whole, so that the
temporary's name stays under the file system's 255).  Every write of a target
first removes the named temporaries of that target whose writer is gone: made
on this host (the host name matches) by a process that no longer runs.  This is
safe against a concurrent writer: a write under way in a live process on this
host, or in any process on another host sharing the folder, is never touched,
and no age is guessed (a slow write of a large file is kept however long it
takes).  A process id reused by a new process only delays the removal until
that process ends.  Temporaries of other targets are left alone.

Several files written as one (a run's sinks): inside `all_or_none` each file is
completed as above but renamed over its target only when the block ends
without an error; when it raises, every one is dropped and each target stays
as it was.
"""
from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path
from typing import BinaryIO, Iterator

_INFIX = ".fuse-"  # .<target>.fuse-<pid>@<host>-<random>.tmp
_SUFFIX = ".tmp"
_LONGEST_STEM = 120  # characters of the target's name kept in a temporary's name


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` whole or not at all (see `atomic_writer`)."""
    with atomic_writer(path) as out:
        out.write(data)


@contextlib.contextmanager
def atomic_writer(path: Path) -> Iterator[BinaryIO]:
    """A binary file to write `path` through, whole or not at all: a temporary file
    beside it (unnamed where the system allows), renamed over it when the block
    ends without an error (dropped when it raises).  The file gets the mode any
    file the user writes gets (0666 less the umask; an existing file keeps its
    own).  Temporaries of `path` left by killed writes are removed first."""
    make_folder(path.parent)
    remove_stale_temporaries(path)
    named, fd = _open_temporary(path)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                os.fchmod(out.fileno(), stat.S_IMODE(os.stat(path).st_mode))
            except (FileNotFoundError, AttributeError):
                pass  # a new file: the mode os.open gave it, under the umask
            yield out
            out.flush()
            os.fsync(out.fileno())
            if named is None:  # give the finished file a name, then the target's
                named = _link_temporary(path, out.fileno())
        pending = getattr(_DEFERRED, "renames", None)
        if pending is not None:  # inside all_or_none: renamed when every file is done
            pending.append((named, path))
            return
        os.replace(named, path)
    except BaseException:
        if named is not None:
            with contextlib.suppress(OSError):
                os.unlink(named)
        raise


_DEFERRED = threading.local()  # the renames an all_or_none block holds back


@contextlib.contextmanager
def all_or_none() -> Iterator[None]:
    """Every file `atomic_writer` completes inside the block is renamed over its
    target only when the block ends without an error, one after another; when
    it raises, each is dropped and every target stays as it was (a run's sinks:
    written all, or none when one of them fails)."""
    outer = getattr(_DEFERRED, "renames", None)
    if outer is not None:  # (nested: the outermost block renames)
        yield
        return
    pending: list[tuple[Path, Path]] = []
    _DEFERRED.renames = pending
    try:
        yield
    except BaseException:
        _DEFERRED.renames = None
        for named, _ in pending:
            with contextlib.suppress(OSError):
                os.unlink(named)
        raise
    _DEFERRED.renames = None
    for k, (named, path) in enumerate(pending):
        try:
            os.replace(named, path)
        except BaseException:
            for left, _ in pending[k:]:
                with contextlib.suppress(OSError):
                    os.unlink(left)
            raise


def make_folder(folder: Path) -> None:
    """`folder` and its parents made where missing; an OSError whose strerror
    names the file in the way (mkdir says only "File exists", or "Not a
    directory")."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as err:
        blocking = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()),
                        None)
        if blocking is None:
            raise
        raise NotADirectoryError(err.errno, f"{blocking} is a file, not a folder",
                                 str(folder)) from None


def _open_temporary(path: Path) -> tuple[Path | None, int]:
    """A temporary file beside `path`: its name (None: unnamed) and descriptor."""
    fd = _open_unnamed(path.parent)
    return (None, fd) if fd is not None else _open_named(path)


def _open_named(path: Path) -> tuple[Path, int]:
    while True:
        tmp = _temporary_name(path)
        try:
            # 0o666: the kernel applies the umask, as for any file the user writes
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue


def _link_temporary(path: Path, fd: int) -> Path:
    """The unnamed file `fd` given a temporary's name beside `path`: linkat of
    `/proc/self/fd/N` with AT_SYMLINK_FOLLOW, as open(2) says (os.link calls
    linkat, not link, when it is given a folder's descriptor)."""
    folder = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        while True:
            tmp = _temporary_name(path)
            try:
                os.link(f"/proc/self/fd/{fd}", tmp.name, dst_dir_fd=folder)
                return tmp
            except FileExistsError:
                continue
            except OSError:  # no naming it here (a /proc that hides it): a named copy
                _NAMING[0] = False  # and named temporaries from now on
                return _named_copy(path, fd)
    finally:
        os.close(folder)


def _named_copy(path: Path, fd: int) -> Path:
    """The unnamed file `fd` (open for reading too) copied to a named temporary."""
    tmp, out = _open_named(path)
    try:
        with os.fdopen(out, "wb") as copy:
            os.fchmod(out, stat.S_IMODE(os.fstat(fd).st_mode))
            os.lseek(fd, 0, os.SEEK_SET)
            while chunk := os.read(fd, 1 << 20):
                copy.write(chunk)
            copy.flush()
            os.fsync(out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


_NAMING = [True]  # whether an unnamed file can be given a name (set False once it cannot)


def _open_unnamed(folder: Path) -> int | None:
    """An unnamed file in `folder` (O_TMPFILE), or None where there is none to be
    had or no way to name it after (`/proc/self/fd`)."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not _NAMING[0] or os.link not in os.supports_dir_fd \
            or not os.path.isdir("/proc/self/fd"):
        return None
    try:  # (open for reading too: a copy can be made of it, see _named_copy)
        return os.open(folder, flag | os.O_RDWR, 0o666)
    except OSError:  # the file system has no unnamed files (NFS, old kernels...)
        return None


def temporary_prefix(path: Path) -> str:
    """What every named temporary of `path` begins with: `.<target>.fuse-`."""
    name = path.name
    if len(name) > _LONGEST_STEM:
        import hashlib  # (rare: a run that writes starts without it)

        digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        name = f"{name[:_LONGEST_STEM - 17]}~{digest}"
    return f".{name}{_INFIX}"


def _host() -> str:
    """This host's name as a temporary's name holds it (no `-`, `/`, `@`)."""
    if hasattr(os, "uname"):  # (socket.gethostname's answer, without importing socket)
        host = os.uname().nodename
    else:  # Windows
        import socket

        host = socket.gethostname()
    return "".join(c if c.isalnum() or c in "._" else "_" for c in host)[:64]


def _temporary_name(path: Path) -> Path:
    return path.parent / (f"{temporary_prefix(path)}{os.getpid()}@{_host()}-"
                          f"{os.urandom(4).hex()}{_SUFFIX}")


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove the named temporaries of `path` left by killed writes (their writer
    ran on this host and runs no more); the ones removed."""
    prefix = temporary_prefix(path)
    try:
        names = [n for n in os.listdir(path.parent)
                 if n.startswith(prefix) and n.endswith(_SUFFIX)]
    except OSError:
        return []
    removed = []
    for name in names:
        writer, _, host = name[len(prefix):-len(_SUFFIX)].rpartition("-")[0].partition("@")
        if host not in ("", _host()) or not writer.isdigit() or _process_alive(int(writer)):
            continue  # another host's (its processes unknown here), or a write under way
        with contextlib.suppress(OSError):
            os.unlink(path.parent / name)
            removed.append(path.parent / name)
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # (on Windows os.kill would end it)
        return True  # another thread of this process may be writing the same target
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists (another user's), or we cannot tell: keep its file
    return True
