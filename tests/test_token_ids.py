"""Token ids read from text (issue 35, item 1; docs/language.md, "Token ids from
text"): `Ids[t] = "corpus.txt:vocab.json"` reads the text as the longest entries
of the vocabulary that match, `"corpus.txt:chars"` by the text's own characters;
a character outside the vocabulary is a coded error naming where it is; the
vocabulary goes into the checkpoint `fuse train` writes, so `fuse generate` reads
prompts with it."""
from __future__ import annotations

import json

import numpy as np
import pytest

import fuse_lang
from fuse_lang.cli import main

TEXT = "the cat sat on the mat.\nthe end\n"


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "corpus.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "chars.json").write_text(json.dumps(sorted(set(TEXT))), encoding="utf-8")
    # entries of several characters: the longest that matches wins ("the" over "t")
    (tmp_path / "words.json").write_text(json.dumps(["t", "h", "e", "the", " ", "\n", "c",
                                                     "a", "s", "o", "n", "m", ".", "d"]))
    return tmp_path


def test_ids_by_a_vocabulary_file_and_by_the_texts_characters(folder):
    program = fuse_lang.compile('A[t] = "corpus.txt:chars.json"\nB[t] = "corpus.txt:chars"\n'
                                'C[t] = "corpus.txt:words.json"\nexport A, B, C\n',
                                base_dir=folder)
    assert program.analysis.tensors["A"].shape == (len(TEXT),)
    out = program.run()
    chars = sorted(set(TEXT))
    want = [chars.index(c) for c in TEXT]
    np.testing.assert_array_equal(out["A"], want)
    np.testing.assert_array_equal(out["B"], want)  # chars: the same code-point order
    words = json.loads((folder / "words.json").read_text())
    assert out["C"][:4].tolist() == [3, 4, 6, 7]  # "the", " ", "c", "a"
    assert len(out["C"]) == len(TEXT) - 2 * 3  # each "the" one token, not three
    assert "".join(words[int(i)] for i in out["C"]) == TEXT


@pytest.mark.parametrize("source, words", [
    ('A[t] = "corpus.txt:few.json"', ["holds", "'c' at line 1, column 5"]),
    ('A[t] = "corpus.txt:none.json"', ["vocabulary `none.json` cannot be read"]),
    ('A[t] = "corpus.txt:bad.json"', ["vocabulary `bad.json` is not a JSON list of strings"]),
    ('A(t) = "corpus.txt:chars"', ["gives token ids, numbers", "written with [ ]"]),
])
def test_a_text_that_cannot_be_read_as_ids_is_a_coded_error(folder, source, words):
    (folder / "few.json").write_text(json.dumps(["t", "h", "e", " "]))
    (folder / "bad.json").write_text(json.dumps({"t": 0}))
    [d] = [d for d in fuse_lang.analyze(source + "\nexport A\n", base_dir=folder).diagnostics
           if d.severity == "error"]
    assert d.code == "unreadable-source", d
    for word in words:
        assert word in d.message, d.message


def test_training_keeps_the_texts_vocabulary_and_generation_reads_prompts_with_it(
        folder, capsys):
    pytest.importorskip("torch")
    n = len(TEXT)
    (folder / "bigram.fuse").write_text(
        f'Ids[t] = "corpus.txt:chars.json"\nX[:] = Ids[0:{n - 1}]\nT[:] = Ids[1:{n}]\n'
        f'axis c = {len(set(TEXT))}\naxis v = {len(set(TEXT))}\nparam W[c,v]\n'
        'Logits[p,v] = gather(W[c,v], X[p], axis=c)\n'
        'L avg= cross_entropy(Logits[p,v], T[p], axis=v)\ntrain L\nexport Logits\n')
    checkpoint = folder / "bigram.safetensors"
    assert main(["train", str(folder / "bigram.fuse"), "--backend", "torch", "--steps", "60",
                 "--lr", "0.1", "--checkpoint", str(checkpoint)]) == 0
    from safetensors import safe_open

    with safe_open(str(checkpoint), framework="numpy") as opened:
        kept = json.loads(opened.metadata()["fuse.vocabulary"])
    assert kept == sorted(set(TEXT))  # no --vocab given: the text's vocabulary
    capsys.readouterr()
    assert main(["generate", str(folder / "bigram.fuse"), "--params", str(checkpoint),
                 "--prompt", "the ", "--steps", "5", "--temperature", "0"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("the ") and set(text.strip()) <= set(TEXT)


def _tokenizer_file(folder) -> dict:
    """A byte-level BPE tokenizer trained on the corpus by the tokenizers library."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    made = Tokenizer(models.BPE())
    made.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    made.decoder = decoders.ByteLevel()
    made.train_from_iterator([TEXT], trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    made.save(str(folder / "tokenizer.json"))
    return json.loads((folder / "tokenizer.json").read_text())


def test_a_tokenizer_file_tokenizes_with_the_library_through_training_and_generation(
        folder, capsys):
    tokenizers = pytest.importorskip("tokenizers")
    pytest.importorskip("torch")
    _tokenizer_file(folder)
    library = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    want = library.encode(TEXT).ids
    assert len(want) < len(TEXT)  # merges: fewer tokens than characters
    out = fuse_lang.compile('Ids[t] = "corpus.txt:tokenizer.json"\nexport Ids\n',
                            base_dir=folder).run()
    assert out["Ids"].tolist() == want
    n, size = len(want), library.get_vocab_size()
    (folder / "bpe.fuse").write_text(
        f'Ids[t] = "corpus.txt:tokenizer.json"\nX[:] = Ids[0:{n - 1}]\nT[:] = Ids[1:{n}]\n'
        f'axis c = {size}\naxis v = {size}\nparam W[c,v]\n'
        'Logits[p,v] = gather(W[c,v], X[p], axis=c)\n'
        'L avg= cross_entropy(Logits[p,v], T[p], axis=v)\ntrain L\nexport Logits\n')
    checkpoint = folder / "bpe.safetensors"
    assert main(["train", str(folder / "bpe.fuse"), "--backend", "torch", "--steps", "30",
                 "--lr", "0.1", "--checkpoint", str(checkpoint)]) == 0
    capsys.readouterr()
    assert main(["generate", str(folder / "bpe.fuse"), "--params", str(checkpoint),
                 "--prompt", "the cat", "--steps", "3", "--temperature", "0"]) == 0
    assert capsys.readouterr().out.startswith("the cat")  # decoded by the library


def test_without_the_tokenizers_library_a_tokenizer_file_says_what_to_install(
        folder, monkeypatch):
    pytest.importorskip("tokenizers")
    _tokenizer_file(folder)
    monkeypatch.setitem(__import__("sys").modules, "tokenizers", None)  # import fails
    [d] = fuse_lang.analyze('Ids[t] = "corpus.txt:tokenizer.json"\nexport Ids\n',
                            base_dir=folder).diagnostics
    assert d.code == "unreadable-source" and "pip install tokenizers" in d.message
