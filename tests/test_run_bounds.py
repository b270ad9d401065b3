"""Every run is bounded (docs/limits.md): a recursive group's rounds follow from
its extents, and a run stops at its time limit, through compile(...).run() and
`fuse run`."""
from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from fuse_lang import FuseError, compile
from fuse_lang.cli import main
from fuse_lang.ide.cancellation import Cancelled, CancelToken, cancellable

RULES = "Reach(y) = Edge(N0, y)\nReach(z) = Reach(y) Edge(y,z)\nexport Reach\n"
# a recurrence of 2 million steps (minutes unbounded; the had 20 million)
LONG_RECURRENCE = """\
axis i = 2
axis t = 2000000
W[i,j] = const([[0.5, 0], [0, 0.5]])
U[j,t] = 1
X[i,*t+1] = tanh(W[i,j] X[j,*t] + U[i,t])
export X
"""


def chain(edges: int, rules: str = RULES) -> str:
    """A chain of `edges` edges N0 -> N1 -> ...: reaching its end takes `edges` rounds."""
    return "".join(f"Edge(N{k}, N{k + 1})\n" for k in range(edges)) + rules


def test_a_chain_longer_than_1000_edges_reaches_its_fixpoint():
    # the round limit follows from the extents (1002 tuples), not a fixed 1000
    reach = compile(chain(1001)).run()["Reach"]
    assert reach.shape == (1002,) and reach[0] == 0 and reach[1:].all()


def test_fuse_run_closes_a_chain_longer_than_1000_edges(tmp_path, capsys):
    path = tmp_path / "chain.fuse"
    path.write_text(chain(1001), encoding="utf-8")
    assert main(["run", str(path), "--format", "json"]) == 0
    reach = json.loads(capsys.readouterr().out)["outputs"]["Reach"]
    # a relation is its tuples: every node but N0, sorted by value (N1, N10, N100, ...)
    assert reach["count"] == 1001
    assert reach["tuples"] == [[f"N{k}"] for k in sorted(range(1, 1002), key=str)]


def test_the_closure_of_a_chain_is_every_pair_in_order():
    rules = "Path(x,y) = Edge(x,y)\nPath(x,z) = Path(x,y) Edge(y,z)\nexport Path\n"
    path = compile(chain(120, rules)).run()["Path"]
    assert path.sum() == 120 * 121 // 2 and (path[0, 1:] == 1).all()


class Clocks:
    """Wall time and this process's CPU time (every thread's: BLAS's too) since made.

    A bound said as a share of a whole run holds on a loaded machine in one of the
    two: a run slowed by other processes takes more wall time but no more CPU time;
    one measured while the machine was busier than now took more wall time than it
    does now, but no more CPU time."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def since(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def test_an_explicit_round_limit_is_kept_and_named():
    with pytest.raises(FuseError, match="did not reach a fixpoint in 5 rounds"):
        compile(chain(20), max_iterations=5).run()


def test_a_long_recurrence_stops_at_its_time_limit():
    program = compile(LONG_RECURRENCE)
    limit = 1.0
    started = Clocks()
    with pytest.raises(FuseError, match=r"stopped at its time limit of 1 s") as raised:
        program.run(time_limit=limit)
    # well within the limit and a small margin (a step of the recurrence); in wall or
    # CPU time (a process descheduled by the machine's load passes wall time only)
    assert min(started.since()) / limit < 3, started.since()
    assert "--time-limit" in str(raised.value)


def test_a_fixpoint_stops_at_its_time_limit_between_rounds():
    # two relations in one group: their 400 rounds run as rounds (a single linear
    # closure would be finished by one graph search, run.closure).  The limit is a
    # fifth of the whole run's time on this machine, measured here: a fixed limit
    # is met by the whole run on a fast machine.
    rules = "Odd(x,y) = Edge(x,y)\nEven(x,z) = Odd(x,y) Edge(y,z)\n" \
            "Odd(x,z) = Even(x,y) Edge(y,z)\nexport Odd, Even\n"
    program = compile(chain(400, rules))
    whole = []
    for _ in range(2):
        started = time.perf_counter()
        program.run()
        whole.append(time.perf_counter() - started)
    limit = min(whole) / 5
    started = Clocks()
    with pytest.raises(FuseError, match="time limit"):
        program.run(time_limit=limit)
    # stopped at the round that crossed the limit, not long after it (in wall or CPU
    # time: a process descheduled by the machine's load passes wall time only)
    assert min(started.since()) / limit < 10, (started.since(), limit)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "10", True])
def test_a_bad_time_limit_is_refused(bad):
    with pytest.raises(FuseError, match="positive number of seconds"):
        compile("X[i] = const([1, 2])\nexport X\n").run(time_limit=bad)


def test_fuse_run_time_limit(tmp_path, capsys):
    path = tmp_path / "long.fuse"
    path.write_text(LONG_RECURRENCE, encoding="utf-8")
    assert main(["run", str(path), "--time-limit", "0.3"]) == 1
    err = capsys.readouterr().err
    assert "long.fuse: the run was stopped at its time limit of 0.3 s" in err
    assert "Traceback" not in err
    assert main(["run", str(path), "--time-limit", "soon"]) == 2
    assert "expected a positive number of seconds, not 'soon'" in capsys.readouterr().err


PRODUCT = 'A[i,j] = "a.npy"\nB[j,k] = "b.npy"\nC[i,k] = A[i,j] B[j,k]\nexport C\n'


@pytest.fixture(scope="module")
def product(tmp_path_factory):
    """One large product (a second or so), its inputs, and how long it takes (wall
    and CPU seconds)."""
    folder = tmp_path_factory.mktemp("product")
    rng = np.random.default_rng(0)
    inputs = {name: rng.random((2000, 2000), dtype=np.float32) for name in "AB"}
    for name, array in inputs.items():
        np.save(folder / f"{name.lower()}.npy", array)
    clocks = Clocks()
    compile(PRODUCT, base_dir=folder).run()
    return folder, clocks.since()


def test_a_cancelled_product_ends_promptly(product):
    folder, (duration, cpu) = product
    token = CancelToken()
    program = cancellable(compile(PRODUCT, base_dir=folder), token)

    def run():
        with pytest.raises(Cancelled):
            program.run()

    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(duration * 0.2)
    cancelled = Clocks()
    token.cancel()
    worker.join()
    wall, used = cancelled.since()
    # one block of the product, not the rest of it (as one matmul: about 0.8 of the run)
    assert min(wall / duration, used / cpu) < 0.3, (wall, duration, used, cpu)


def test_the_time_limit_stops_a_product_inside(product):
    folder, (duration, cpu) = product
    started = Clocks()
    with pytest.raises(FuseError, match="time limit"):
        compile(PRODUCT, base_dir=folder).run(time_limit=duration * 0.2)
    wall, used = started.since()
    assert min(wall / duration, used / cpu) < 0.6, (wall, duration, used, cpu)
