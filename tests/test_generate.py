"""Generation (docs/generation.md): the character transformer of
examples/training/char_transformer_ids.fuse, in a tiny configuration, trains with
`fuse train --vocab` (its loss falls below a bound), saves a checkpoint that holds
its vocabulary, and generates text with `fuse generate`: the same seed gives the
same text; reusing the prefix's rows gives the very tokens that running the whole
window for each token gives (greedy, and drawn with a seed, temperature and
top-k), within the window and past it; a program that is not causal is run
whole, and says why; bad input is said in words, never a traceback."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import training_example

import fuse_lang
from fuse_lang.cli import main

pytest.importorskip("torch")
pytest.importorskip("safetensors")
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "training"
ROOT = EXAMPLE.parent.parent
TINY = {"window": 16, "width": 16, "heads": 2, "key": 8, "mlp": 32}
# the loss after 40 steps must be below the unigram baseline of the text (3.2 nats
# on these windows; ln 47 = 3.85 at the start): the model learned something
LOSS_BOUND = 3.2


def _make_chars():
    return training_example("make_chars")


def _tiny_program(vocabulary: int) -> str:
    text = (EXAMPLE / "char_transformer_ids.fuse").read_text(encoding="utf-8")
    return _make_chars().sized_ids_program(text, vocabulary, **TINY)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, list[str], float]:
    """A folder with the tiny program, its data and vocabulary, and the checkpoint
    `fuse train --vocab` wrote; the vocabulary; the final loss."""
    torch = pytest.importorskip("torch")
    make_chars = _make_chars()
    folder = tmp_path_factory.mktemp("generate")
    data = make_chars.windows(make_chars.corpus(20_000), TINY["window"])
    np.save(folder / "chars_train_ids.npy", data["chars_train_ids"])
    (folder / "chars_vocab.json").write_text(json.dumps(data["vocab"]), encoding="utf-8")
    (folder / "lm.fuse").write_text(_tiny_program(len(data["vocab"])), encoding="utf-8")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the tiny model: threads only wait on each other
    try:
        lines = _cli(["train", str(folder / "lm.fuse"), "--backend", "torch", "--lr", "0.02",
                      "--steps", "40", "--batch", "n=16", "--seed", "0",
                      "--vocab", str(folder / "chars_vocab.json"),
                      "--checkpoint", str(folder / "lm.safetensors")])
    finally:
        torch.set_num_threads(threads)
    final = float(re.search(r"final loss ([0-9.e+-]+)", lines).group(1))
    return folder, data["vocab"], final


def _cli(argv: list[str], status: int = 0) -> str:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == status, (code, out.getvalue(), err.getvalue())
    assert "Traceback" not in err.getvalue()
    return out.getvalue() + err.getvalue()


def _program(folder: Path, backend: str = "numpy") -> fuse_lang.CompiledProgram:
    return fuse_lang.load(folder / "lm.fuse", backend=backend,
                          weights=folder / "lm.safetensors")


def test_it_trains_saves_and_generates_from_the_command_line(trained):
    folder, vocab, final = trained
    assert final < LOSS_BOUND
    command = ["generate", str(folder / "lm.fuse"), "--params", str(folder / "lm.safetensors"),
               "--prompt", "The ", "--steps", "24", "--temperature", "0.8", "--top-k", "8",
               "--seed", "3"]
    first = _cli(command)
    text = first.splitlines()[0]
    assert text.startswith("The ") and len(text) == 4 + 24
    assert "generated 24 tokens" in first and "tokens/s" in first
    assert _cli(command).splitlines()[0] == text  # the same seed, the same text
    other = _cli(command[:-1] + ["4"]).splitlines()[0]
    assert other != text
    # as a user types it (a process of its own): the same text
    env = {"PYTHONPATH": str(ROOT), "PATH": "", "OMP_NUM_THREADS": "1"}
    shell = subprocess.run([sys.executable, "-m", "fuse_lang.cli", *command],
                           capture_output=True, text=True, env=env, cwd=folder)
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.splitlines()[0] == text
    # ids in, ids out; and the result as JSON
    ids = _cli(command[:4] + ["--prompt-ids", "17,28,25", "--steps", "5", "--temperature",
                              "0", "--vocab", str(folder / "chars_vocab.json"),
                              "--format", "json"])
    data = json.loads(ids)
    assert data["prompt"] == [17, 28, 25] and len(data["generated"]) == 5
    assert data["text"].startswith("".join(vocab[i] for i in (17, 28, 25)))
    assert data["reused_steps"] == 4 and data["tokens_per_s"] > 0


def test_the_checkpoint_holds_the_vocabulary(trained):
    folder, vocab, _ = trained
    from safetensors import safe_open

    with safe_open(str(folder / "lm.safetensors"), framework="numpy") as opened:
        assert json.loads(opened.metadata()["fuse.vocabulary"]) == vocab
    result = _program(folder).generate("The ", 5, temperature=0)
    assert result.text == "The " + result.new_text and len(result.generated) == 5
    assert result.prompt == [vocab.index(ch) for ch in "The "]


def test_it_generates_without_the_training_data(trained, tmp_path):
    """The token input's own statements (and the data only they read) are cut away:
    the program and its checkpoint alone generate."""
    folder, _, _ = trained
    for name in ("lm.fuse", "lm.safetensors"):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    alone = _program(tmp_path).generate("The ", 6, temperature=0)
    assert alone.generated == _program(folder).generate("The ", 6, temperature=0).generated


@pytest.mark.parametrize("sampling", [{"temperature": 0},
                                      {"temperature": 0.9, "top_k": 6, "seed": 11}],
                         ids=["greedy", "drawn"])
def test_reusing_rows_gives_the_tokens_of_whole_windows(trained, sampling):
    folder, _, _ = trained
    program = _program(folder)
    # 30 steps from 3 characters: the window of 16 run whole once, 13 steps at the new
    # position only (positions 3 to 15), then the window slides: whole again
    kept = program.generate("The", 30, **sampling)
    whole = program.generate("The", 30, reuse=False, **sampling)
    assert kept.generated == whole.generated
    assert kept.reused_steps == 13 and kept.reuse_note is None
    assert whole.reused_steps == 0 and whole.whole_steps == 30
    # the rows kept for one text are never read for the next: a prompt one token
    # longer than the last text's kept rows (2) starts from a whole window again
    short = program.generate("Th", 1, **sampling)
    again = program.generate("in ", 5, **sampling)
    assert again.generated == program.generate("in ", 5, reuse=False, **sampling).generated
    assert short.whole_steps == 1 and again.whole_steps == 1


def test_torch_reuses_rows_too(trained):
    folder, _, _ = trained
    program = _program(folder, "torch")
    kept = program.generate("in the ", 12, temperature=0)
    assert kept.reused_steps == 9  # positions 7 to 15; then the window slides
    assert kept.generated == program.generate("in the ", 12, temperature=0,
                                              reuse=False).generated


def test_a_compiled_program_runs_whole_windows_and_says_why(trained):
    pytest.importorskip("jax")
    folder, _, _ = trained
    result = _program(folder, "jax").generate("The", 4, temperature=0)
    assert result.reused_steps == 0 and result.whole_steps == 4
    assert "compiled graph" in result.reuse_note


def test_a_program_that_is_not_causal_runs_whole_and_says_why():
    # each position's logits read every position's embedding (no mask): not causal
    text = ("axis c = 5\naxis d = 3\naxis p = 6\nparam Emb[c,d], Out[c,d]\n"
            'X[n,p] = "ids.npy"\nE[n,p,d] = gather(Emb[c,d], X[n,p], axis=c)\n'
            "M[n,d] avg= E[n,p,d]\nLogits[n,p,c] = Out[c,d] (E[n,p,d] + M[n,d])\n"
            "export Logits\n")
    program = fuse_lang.compile(text)
    kept = program.generate([1, 2], 3, temperature=0)
    assert kept.reused_steps == 0 and "not causal" in kept.reuse_note
    assert kept.generated == program.generate([1, 2], 3, temperature=0,
                                              reuse=False).generated
    # a causal one (each position its own) reuses
    causal = fuse_lang.compile(text.replace("+ M[n,d]", "+ 0"))
    assert causal.generate([1, 2], 3, temperature=0).reused_steps == 2


def test_a_prompt_is_read_with_the_vocabulary_the_program_reads_its_text_with(tmp_path):
    """A program whose token ids come from text (`"corpus.txt:chars"`) names its
    vocabulary: with no checkpoint holding one, generate reads the prompt with it
    (it said "no vocabulary to read the prompt with")."""
    (tmp_path / "corpus.txt").write_text("abcab", encoding="utf-8")
    (tmp_path / "lm.fuse").write_text(
        'Ids[t] = "corpus.txt:chars"\nX[n,:] = Ids[0:4]\naxis n = 1\naxis c = 3\n'
        "axis d = 2\nparam Emb[c,d], Out[c,d]\n"
        "E[n,p,d] = gather(Emb[c,d], X[n,p], axis=c)\n"
        "Logits[n,p,c] = Out[c,d] E[n,p,d]\nexport Logits\n", encoding="utf-8")
    out = _cli(["generate", str(tmp_path / "lm.fuse"), "--prompt", "ab", "--steps", "2"])
    text = out.splitlines()[0]
    assert text.startswith("ab") and len(text) == 4 and set(text) <= set("abc")
    # a vocabulary given to keep in the checkpoint is held to the model's: one that
    # generate refuses is refused before training (it was kept, then refused)
    program = fuse_lang.load(tmp_path / "lm.fuse")
    with pytest.raises(fuse_lang.FuseError, match="the vocabulary holds 4 tokens but the "
                                                  "program's vocabulary axis has 3"):
        program.train(steps=1, vocabulary=["a", "b", "c", "d"])


@pytest.mark.parametrize("scores,reused", [("S[n,p,q]", 3), ("S[n,q,p]", 0)],
                         ids=["query-first", "key-first"])
def test_scores_are_computed_at_their_first_axis_along_the_sequence(scores, reused):
    """Attention scores with the query's axis first are computed a row per step;
    with the key's first, the checks find the rows would be wrong and every step
    runs the window whole; the tokens are the whole window's either way."""
    text = ("axis c = 5\naxis d = 3\naxis p = 6\nparam Emb[c,d], Out[c,d]\n"
            'X[n,p] = "ids.npy"\nE[n,p,d] = gather(Emb[c,d], X[n,p], axis=c)\n'
            f"{scores} = select(q <= p, E[n,p,d] E[n,q,d], 0)\n"
            f"A[n,p,d] = {scores} E[n,q,d]\nLogits[n,p,c] = Out[c,d] A[n,p,d]\n"
            "export Logits\n")
    program = fuse_lang.compile(text)
    kept = program.generate([1, 2], 4, temperature=0)
    assert kept.reused_steps == reused and (kept.reuse_note is None) == (reused > 0)
    assert kept.generated == program.generate([1, 2], 4, temperature=0,
                                              reuse=False).generated


def test_bad_input_is_said_in_words(trained, tmp_path):
    folder, _, _ = trained
    program = _program(folder)
    with pytest.raises(fuse_lang.FuseError, match="does not .*'€'"):
        program.generate("The €", 3)
    with pytest.raises(fuse_lang.FuseError, match="0 or more"):
        program.generate("The", -1)
    with pytest.raises(fuse_lang.FuseError, match="prompt is empty"):
        program.generate("", 3)
    with pytest.raises(fuse_lang.FuseError, match="id 99 is not a token"):
        program.generate([1, 99], 3)
    lm = str(folder / "lm.fuse")
    said = _cli(["generate", lm, "--params", str(tmp_path / "none.safetensors"),
                 "--prompt", "The"], 1)
    assert "weights-missing-file" in said and "does not exist" in said
    said = _cli(["generate", lm, "--params", str(folder / "lm.safetensors"),
                 "--prompt", "Thé"], 1)
    assert "'é'" in said and "vocabulary" in said
    said = _cli(["generate", lm, "--params", str(folder / "lm.safetensors"),
                 "--prompt", "The", "--steps", "-2"], 2)
    assert "--steps" in said
    said = _cli(["generate", lm, "--prompt", "The"], 1)  # no checkpoint: no vocabulary
    assert "no vocabulary" in said
    said = _cli(["generate", lm, "--params", str(folder / "lm.safetensors"),
                 "--prompt", "The", "--target", "A1"], 1)
    assert "generate-no-logits" in said
