"""A longer fault campaign than CI's (tests/test_fuzz_programs.py): mutated
programs, and programs spliced from pieces of two or three seed programs, through
every entry point of the CI test and then *run* (NumPy, each run bounded), in a
copy of examples/ so that no sink writes into the checkout.

Any exception other than a refusal in words (FuseError, EvaluationError) is a
failure: each distinct one (its type and the line that raised it) is printed
once with the seed that shows it, and the summary counts them.

    python benchmarks/fuzz_programs.py [--start 100000] [--count 6000] [--spliced 0.5]
    python benchmarks/fuzz_programs.py --show SEED      # the program of one seed
"""
from __future__ import annotations

import argparse
import random
import shutil
import signal
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import test_fuzz_programs as seeded  # noqa: E402

import fuse_lang  # noqa: E402
from fuse_lang.check.analyzer import Analyzer  # noqa: E402
from fuse_lang.run.interpret.evaluate import EvaluationError  # noqa: E402

RUN_SECONDS = 20  # a program's whole turn; past it, it is reported as a hang


class _Hang(Exception):
    pass


def spliced(rng: random.Random, texts: list[str]) -> str:
    """Runs of lines from two or three seed programs, one after the other, then up
    to three random edits: constructs that no single seed puts side by side."""
    pieces = []
    for text in rng.sample(texts, rng.choice([2, 3])):
        lines = text.split("\n")
        start = rng.randrange(len(lines))
        pieces += lines[start:start + rng.randint(1, 12)]
    text = "\n".join(pieces) + "\n"
    for _ in range(rng.choice([0, 1, 2, 3])):
        text = seeded.mutate(rng, text)
    return text


def program(seed: int, texts: list[str], spliced_share: float) -> str:
    rng = random.Random(seed)
    if rng.random() < spliced_share:
        return spliced(rng, texts)
    return seeded.mutated(seed, texts)


def one(seed: int, text: str, analyzer: Analyzer, folder: Path) -> bool:
    """Every entry point on one program, then its run; whether it ran."""
    seeded.check_one(seed, text, analyzer, random.Random(seed))
    analysis = fuse_lang.analyze(text, base_dir=folder)
    if any(d.severity is fuse_lang.Severity.ERROR for d in analysis.diagnostics):
        return False
    try:
        fuse_lang.compile(text, base_dir=folder).run()
    except (fuse_lang.FuseError, EvaluationError):
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start", type=int, default=100_000)
    parser.add_argument("--count", type=int, default=6_000)
    parser.add_argument("--spliced", type=float, default=0.5,
                        help="the share of programs spliced from several seeds")
    parser.add_argument("--show", type=int, metavar="SEED")
    args = parser.parse_args()
    texts = seeded.seeds()
    if args.show is not None:
        print(program(args.show, texts, args.spliced))
        return
    warnings.simplefilter("ignore")  # (overflow in a mutated constant is the program's)
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(_Hang()))
    found: dict[tuple, int] = {}
    ran = hangs = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "examples"
        shutil.copytree(seeded.EXAMPLES, folder)
        seeded.EXAMPLES = folder  # (check_one reads its base folder from here)
        analyzer = Analyzer()
        for seed in range(args.start, args.start + args.count):
            text = program(seed, texts, args.spliced)
            signal.alarm(RUN_SECONDS)
            try:
                ran += one(seed, text, analyzer, folder)
            except _Hang:
                hangs += 1
                print(f"seed {seed}: no answer in {RUN_SECONDS} s", flush=True)
            except Exception as err:  # noqa: BLE001 (what the campaign looks for)
                last = traceback.extract_tb(err.__traceback__)[-1]
                key = (type(err).__name__, last.filename, last.lineno)
                if key not in found:
                    found[key] = seed
                    print(f"seed {seed}: {type(err).__name__}: {str(err)[:200]} "
                          f"({last.filename}:{last.lineno})", flush=True)
            finally:
                signal.alarm(0)
    print(f"{args.count} programs from seed {args.start} ({args.spliced:.0%} spliced): "
          f"{ran} ran, {len(found)} distinct failures, {hangs} without an answer in "
          f"{RUN_SECONDS} s")


if __name__ == "__main__":
    main()
