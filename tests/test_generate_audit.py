"""Generation's options do what docs/generation.md says, on a bigram program whose
next-token logits are a fixed table's row at the last token (no training): the
draws over many steps follow softmax(logits / T) restricted to the top k (a
chi-square bound, seeded, so deterministic); temperature 0 takes the likeliest
(ties: the lowest id), a tiny temperature is greedy too and an infinite one
uniform over the tokens of nonzero probability; logits that are NaN are refused
at every temperature; options of the wrong kind are said in words (never a
TypeError, never a silent truncation); `fuse generate` exits 2 on a bad
`--seed`, prints text the terminal cannot encode as escapes, and `--format
json` gives the documented fields; a schedule's start or end that is not finite
is a `bad-argument`."""
from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest

import fuse_lang
from fuse_lang.cli import main

TABLE = [[2.0, 0.0, -1.0, 0.5], [0.0, 1.0, 1.0, -2.0], [-1.0, 0.5, 0.0, 1.5],
         [1.0, 1.0, 1.0, 1.0]]
BIGRAM = ("axis c = 4\naxis v = 4\naxis p = 8\naxis n = 1\n"
          f"M[c,v] = const({TABLE})\n"
          'X[n,p] = "ids.npy"\n'
          "Logits[n,p,v] = gather(M[c,v], X[n,p], axis=c)\nexport Logits\n")
# the same table read as probabilities: the target is a softmax of an expression
PROBABILITIES = BIGRAM.replace(
    "Logits[n,p,v] = gather(M[c,v], X[n,p], axis=c)\nexport Logits",
    "L[n,p,v] = gather(M[c,v], X[n,p], axis=c)\nP[n,p,v.] = softmax(L[n,p,v] + 0.0)\n"
    "export P")


def _expected(row: list[float], temperature: float, top_k: int | None) -> np.ndarray:
    z = np.asarray(row) / temperature
    if top_k is not None:
        z = np.where(np.isin(np.arange(z.size), np.argsort(-z, kind="stable")[:top_k]),
                     z, -np.inf)
    q = np.exp(z - z.max())
    return q / q.sum()


def _transitions(ids: list[int]) -> np.ndarray:
    counts = np.zeros((4, 4))
    for a, b in zip(ids[:-1], ids[1:]):
        counts[a, b] += 1
    return counts


@pytest.mark.parametrize("temperature,top_k", [(1.0, None), (0.5, None), (2.0, 3), (0.8, 2)])
def test_the_draws_follow_the_softmax_at_the_temperature(temperature, top_k):
    """1500 tokens (past the window of 8: the context slides): per previous token,
    the counts of the next one against softmax(row / T) over the top k; a token
    outside the top k is never drawn."""
    result = fuse_lang.compile(BIGRAM).generate([0], 1500, temperature=temperature,
                                                top_k=top_k, seed=0)
    counts = _transitions(result.ids)
    chi2, df = 0.0, 0
    for prev in range(4):
        q = _expected(TABLE[prev], temperature, top_k)
        total = counts[prev].sum()
        assert counts[prev][q == 0].sum() == 0
        kept = q > 0
        expected = total * q[kept]
        chi2 += float(((counts[prev][kept] - expected) ** 2 / expected).sum())
        df += int(kept.sum()) - 1
    # far beyond chance (p < 1e-5): a wrong temperature or top-k is far above it
    assert chi2 < df + 6 * math.sqrt(2 * df), (chi2, df, counts)


def test_probabilities_are_drawn_as_their_logits_are():
    """A target that is a softmax's value is read as probabilities (their log):
    the same seed draws the very tokens its logits draw."""
    for options in ({"temperature": 0.8, "seed": 4}, {"temperature": 1.5, "top_k": 2}):
        by_logits = fuse_lang.compile(BIGRAM).generate([1], 200, **options)
        by_probabilities = fuse_lang.compile(PROBABILITIES).generate([1], 200, **options)
        assert by_logits.generated == by_probabilities.generated


def test_greedy_takes_the_likeliest_and_the_lowest_id_of_a_tie():
    program = fuse_lang.compile(BIGRAM)
    # 2 -> 3 (1.5); 3 -> all tied: 0; 0 -> 0 (2.0)
    assert program.generate([2], 4, temperature=0).generated == [3, 0, 0, 0]
    # the row of 1 ties 1 and 2: the lower
    assert program.generate([1], 1, temperature=0).generated == [1]
    # a tiny temperature is greedy too where no tie is (it overflowed: "logits are not
    # finite"); a tie it draws from
    for tiny in (1e-300, 5e-324):
        assert program.generate([2], 1, temperature=tiny).generated == [3]
        assert program.generate([0], 5, temperature=tiny).generated == [0] * 5
        assert {program.generate([1], 1, temperature=tiny, seed=seed).generated[0]
                for seed in range(20)} == {1, 2}
    # top_k 1 is greedy; a top_k above the vocabulary keeps every token
    assert program.generate([2], 4, temperature=3.0, top_k=1).generated == [3, 0, 0, 0]
    assert program.generate([0], 30, temperature=1.0, top_k=99, seed=2).generated == \
        program.generate([0], 30, temperature=1.0, seed=2).generated


def test_an_infinite_temperature_is_uniform_over_tokens_of_nonzero_probability():
    """Probabilities of exactly 0 are logits of -inf: at T = inf they stay out (it
    said the logits were not finite: -inf / inf is NaN); with top_k the top k."""
    text = PROBABILITIES.replace(f"const({TABLE})",
                                 "const([[0.0, -1e30, 0.0, -1e30], [0.0, -1e30, 0.0, -1e30], "
                                 "[0.0, -1e30, 0.0, -1e30], [0.0, -1e30, 0.0, -1e30]])")
    program = fuse_lang.compile(text)
    drawn = program.generate([0], 400, temperature=math.inf, seed=1).generated
    assert set(drawn) == {0, 2} and 150 < drawn.count(0) < 250
    assert set(program.generate([0], 50, temperature=math.inf, top_k=1).generated) == {0}
    uniform = fuse_lang.compile(BIGRAM).generate([3], 800, temperature=math.inf, seed=1)
    assert np.all(np.abs(np.bincount(uniform.generated, minlength=4) - 200) < 60)


@pytest.mark.parametrize("options", [{"temperature": 0}, {"temperature": 1.0},
                                     {"temperature": 1.0, "top_k": 1},
                                     {"temperature": math.inf, "top_k": 2}],
                         ids=["greedy", "drawn", "top-1", "uniform-top-2"])
def test_nan_logits_are_refused_at_every_temperature(tmp_path, options):
    """Greedy took the NaN's id (np.argmax), top_k left it out: both silently."""
    table = np.asarray(TABLE)
    table[0, 1] = np.nan
    np.save(tmp_path / "m.npy", table)
    (tmp_path / "lm.fuse").write_text(BIGRAM.replace(f"const({TABLE})", '"m.npy"'),
                                      encoding="utf-8")
    program = fuse_lang.load(tmp_path / "lm.fuse")
    assert program.generate([1], 2, temperature=0).generated == [1, 1]  # row 1 is finite
    with pytest.raises(fuse_lang.FuseError, match="not finite"):
        program.generate([0], 2, **options)


@pytest.mark.parametrize("prompt,options,words", [
    ([1], {"temperature": "0.5"}, "temperature is 0"),
    ([1], {"temperature": None}, "temperature is 0"),
    ([1], {"top_k": 2.5}, "top_k keeps 1 token or more"),
    ([1], {"top_k": True}, "top_k keeps 1 token or more"),
    ([1], {"seed": -1}, "seed is a whole number, 0 or more"),
    ([1], {"seed": 1.5}, "seed is a whole number"),
    ([1], {"steps": 2.5}, "steps is the number of tokens"),
    ([1.7], {}, "ids are whole numbers, not 1.7"),
    (["1"], {}, "ids are whole numbers, not '1'"),
    (5, {}, "text or a list of token ids"),
])
def test_options_of_the_wrong_kind_are_said_in_words(prompt, options, words):
    """They raised TypeError / ValueError from NumPy, or (ids) were truncated."""
    options = {"steps": 3, **options}
    steps = options.pop("steps")
    with pytest.raises(fuse_lang.FuseError, match=words.replace("(", r"\(")):
        fuse_lang.compile(BIGRAM).generate(prompt, steps, **options)


def test_ids_of_numpy_and_a_prompt_longer_than_the_window():
    program = fuse_lang.compile(BIGRAM)
    assert program.generate(np.array([2]), 2, temperature=0, seed=np.int64(3),
                            top_k=np.int64(2)).generated == [3, 0]
    long = program.generate([1] * 19 + [2], 3, temperature=0)  # the last 8 are read
    assert long.prompt == [1] * 19 + [2] and long.generated == [3, 0, 0]


def test_the_same_seed_draws_the_same_tokens_on_numpy_and_torch():
    pytest.importorskip("torch")
    drawn = [fuse_lang.compile(BIGRAM, backend=b).generate([2], 40, temperature=0.9, seed=7)
             .generated for b in ("numpy", "torch")]
    assert drawn[0] == drawn[1]
    again = fuse_lang.compile(BIGRAM).generate([2], 40, temperature=0.9, seed=7).generated
    assert again == drawn[0]


def _cli(argv: list[str], stdout: io.TextIOBase | None = None) -> tuple[int, str, str]:
    out, err = stdout or io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert "Traceback" not in err.getvalue()
    if isinstance(out, io.TextIOWrapper):
        out.flush()
        return code, out.buffer.getvalue().decode("ascii"), err.getvalue()
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def folder(tmp_path) -> Path:
    (tmp_path / "lm.fuse").write_text(BIGRAM, encoding="utf-8")
    (tmp_path / "vocab.json").write_text(json.dumps(["a", "é", "c", "\ud800"]),
                                         encoding="utf-8")
    return tmp_path


def test_the_command_line_refuses_a_negative_seed_and_takes_a_tiny_temperature(folder):
    lm = str(folder / "lm.fuse")
    code, _, err = _cli(["generate", lm, "--prompt-ids", "1", "--seed", "-1"])
    assert code == 2 and "--seed" in err and "internal error" not in err
    code, out, _ = _cli(["generate", lm, "--prompt-ids", "2,0", "--steps", "3",
                         "--temperature", "1e-320"])
    assert code == 0 and out.split() == ["2", "0", "0", "0", "0"]


def test_text_the_terminal_cannot_encode_is_printed_as_escapes(folder):
    """An ASCII terminal, or a vocabulary with a lone surrogate (valid JSON): the
    text was made, then printing it raised UnicodeEncodeError (a traceback)."""
    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    code, out, _ = _cli(["generate", str(folder / "lm.fuse"), "--prompt", "\u00e9",
                         "--vocab", str(folder / "vocab.json"), "--steps", "1",
                         "--temperature", "0"], ascii_out)
    assert code == 0 and out.splitlines()[0] == "\\xe9\\xe9"  # é is 1: then 1 (a tie)
    code, out, _ = _cli(["generate", str(folder / "lm.fuse"), "--prompt", "c",
                         "--vocab", str(folder / "vocab.json"), "--steps", "1",
                         "--temperature", "0"])
    assert code == 0 and out.splitlines()[0] == "c\\ud800"


def test_json_gives_the_results_fields_and_an_error_document(folder):
    lm = str(folder / "lm.fuse")
    code, out, _ = _cli(["generate", lm, "--prompt", "ac", "--vocab",
                         str(folder / "vocab.json"), "--steps", "3", "--temperature", "0",
                         "--format", "json"])
    data = json.loads(out)
    assert code == 0 and set(data) == {"prompt", "generated", "text", "new_text", "seconds",
                                       "tokens_per_s", "reused_steps", "whole_steps",
                                       "reuse_note", "window"}
    assert data["prompt"] == [0, 2] and data["generated"] == [3, 0, 0]
    assert data["text"] == "ac\ud800aa" and data["new_text"] == "\ud800aa"
    assert data["window"] == 8 and data["reused_steps"] + data["whole_steps"] == 3
    code, out, _ = _cli(["generate", lm, "--prompt", "ab", "--vocab",
                         str(folder / "vocab.json"), "--format", "json"])
    assert code == 1 and json.loads(out)["error"].endswith(
        "the prompt holds 1 character that the vocabulary does not ('b'); its 4 tokens "
        "are those the model was trained on")


@pytest.mark.parametrize("call", ["linear(1e400, 0.5, steps=3)",
                                  "cosine(1.0, -1e999, steps=3)",
                                  "exponential(1.0, 1e400, steps=3)"])
def test_a_schedule_from_or_to_an_infinity_is_a_bad_argument(call):
    """linear(1e400, ...) ran as NaN at every step (inf + (end - inf) * 0)."""
    found = [d for d in fuse_lang.analyze(f"T = {call}\nexport T").diagnostics
             if d.code == "bad-argument"]
    assert found and "finite" in found[0].message
