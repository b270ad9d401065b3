"""The editor integrations against what they promise, without an editor (fast).

The real-editor checks live in tests/editors/ (headless Neovim, the extension's
npm suites, code-server); these read the files those editors load: the VS Code
manifest and its TextMate grammar and language configuration (their regular
expressions run here with Python's `re`, which reads these patterns as Oniguruma
and JavaScript do), Neovim's syntax file and server configuration, and check them
against the language (LANGUAGE.md's keywords, the builtins) and the server's
settings (`Options` in fuse_lsp/state.py).
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from fuse_lang.front.builtins import KEYWORDS, NAMED_BUILTINS, PADDINGS
from fuse_lang.run.backends import PRECISIONS
from fuse_lang.run.train.optimizers import OPTIMIZERS
from fuse_lsp.state import Options

ROOT = Path(__file__).resolve().parents[1]
VSCODE = ROOT / "editors" / "vscode"
NVIM = ROOT / "editors" / "nvim"
MANIFEST = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
GRAMMAR = json.loads((VSCODE / "syntaxes" / "fuse.tmLanguage.json").read_text(encoding="utf-8"))
LANGUAGE = json.loads((VSCODE / "language-configuration.json").read_text(encoding="utf-8"))
SETTINGS = MANIFEST["contributes"]["configuration"]["properties"]


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(word.capitalize() for word in rest)


OPTIONS = [(f.name, _camel(f.name), f.default) for f in dataclasses.fields(Options)]


# --- settings -----------------------------------------------------------------

@pytest.mark.parametrize("field,key,default", OPTIONS, ids=[k for _, k, _ in OPTIONS])
def test_every_server_setting_is_a_vscode_setting_with_the_server_default(field, key, default):
    """VS Code flags a setting it was not told of as unknown in settings.json and
    offers it nowhere: each option the server reads is contributed, with its default."""
    setting = SETTINGS.get(f"fuse.{key}")
    assert setting is not None, f"fuse.{key} is not in package.json's settings"
    assert setting["default"] == default, (key, setting["default"], default)
    kinds = setting["type"] if isinstance(setting["type"], list) else [setting["type"]]
    expected = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if default is None:
        assert "null" in kinds, key
    else:
        assert expected[type(default)] in kinds, (key, kinds)


def test_the_choices_of_a_setting_are_the_servers():
    assert SETTINGS["fuse.precision"]["enum"] == list(PRECISIONS)
    assert SETTINGS["fuse.trainOptimizer"]["enum"] == list(OPTIMIZERS)


@pytest.mark.parametrize("doc", ["docs/editors.md", "editors/vscode/README.md"])
def test_every_vscode_setting_is_documented(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    missing = [key for key in SETTINGS if f"`{key}`" not in text]
    assert not missing, f"{doc} does not document {missing}"


def test_the_neovim_config_names_every_server_setting():
    text = (NVIM / "lsp" / "fuse.lua").read_text(encoding="utf-8")
    missing = [key for _, key, _ in OPTIONS if not re.search(rf"\b{key}\b", text)]
    assert not missing, f"editors/nvim/lsp/fuse.lua does not name {missing}"


# --- the TextMate grammar -----------------------------------------------------

def _rules(node):
    """Every rule of the grammar (with a match or a begin), depth first."""
    if isinstance(node, dict):
        if "match" in node or "begin" in node:
            yield node
        for value in node.values():
            yield from _rules(value)
    elif isinstance(node, list):
        for value in node:
            yield from _rules(value)


def _scopes_of(rule, match):
    """The scopes the rule gives each matched group (0: the whole match)."""
    captures = rule.get("captures") or rule.get("beginCaptures") or {}
    out = {0: rule.get("name", "")}
    out.update({int(k): v.get("name", "") for k, v in captures.items()})
    return out


# Each keyword of the language (fuse_lang.front.builtins.KEYWORDS) as a program writes it.
KEYWORD_LINES = {
    "export": "export Y, Z", "axis": "axis d = 64", "param": "param W[i,j]",
    "train": "train L", "reduce": "S = reduce(max, i) A[i]",
    "not": "Safe(x) = Node(x) not Blocked(x, _)", "fn": "fn dense(x[d]) -> y[d] { y[d] = x[d] }",
    "case": "C[i] = case { A[i] > 0 -> 1; default -> 0 }",
    "default": "C[i] = case { A[i] > 0 -> 1; default -> 0 }",
    "when": "G[i] = A[i] when i > 0", "let": "let h[i] = A[i]",
    "import": 'import "lib/graph.fuse" as g', "as": 'import "lib/graph.fuse" as g',
}


def test_every_keyword_of_the_language_has_a_line_here():
    assert set(KEYWORD_LINES) == set(KEYWORDS)


@pytest.mark.parametrize("word", sorted(KEYWORD_LINES))
def test_the_grammar_scopes_each_keyword_as_one(word):
    """Some rule matches the keyword where a program writes it and scopes it as a
    keyword or a builtin (negation's `not` was an index variable)."""
    line = KEYWORD_LINES[word]
    start = re.search(rf"\b{word}\b", line).start()
    for rule in _rules(GRAMMAR["repository"]):
        found = re.compile(rule.get("match") or rule["begin"]).search(line, start)
        if found is None:
            continue
        for group, scope in _scopes_of(rule, found).items():
            if (found.group(group) == word and found.start(group) == start
                    and scope.startswith(("keyword.", "support.function"))):
                return
    pytest.fail(f"no rule scopes {word!r} in {line!r} as a keyword")


@pytest.mark.parametrize("padding", sorted(PADDINGS))
def test_an_axis_padding_is_a_keyword(padding):
    """`axis x = valid` names a padding, not an index (the server's semantic tokens
    make it a keyword too)."""
    axis = GRAMMAR["repository"]["axis-statement"]
    line = f"axis x = {padding}, y = 3"
    assert re.match(axis["begin"], line)
    for rule in axis["patterns"]:
        found = "match" in rule and re.compile(rule["match"]).search(line, len("axis x "))
        if found:  # the first rule to match at the earliest place wins
            scopes = _scopes_of(rule, found)
            break
    assert [found.group(g) for g, s in scopes.items() if s == "keyword.other.padding.fuse"] == [
        padding]
    vim = [line for line in _vim_syntax().splitlines()
           if line.startswith("syn match   fuseKeyword") and "\\%(valid\\|same\\)" in line]
    assert vim, "syntax/fuse.vim does not mark valid and same"


def test_the_grammars_builtins_are_the_languages():
    rule = GRAMMAR["repository"]["builtin-call"]
    names = set(re.search(r"\\b\(([a-z_|]+)\)", rule["begin"]).group(1).split("|"))
    assert names == set(NAMED_BUILTINS) - {"not"}  # not is a keyword (above)


def test_negation_does_not_take_a_longer_name():
    rule = re.compile(GRAMMAR["repository"]["not-keyword"]["match"])
    assert rule.search("A(x) = B(x) not C(x)")
    for name in ("notes", "not_x", "not'", "cannot"):
        assert not rule.search(f"Y = {name}"), name


# --- Neovim's syntax file -----------------------------------------------------

def _vim_syntax() -> str:
    return (NVIM / "syntax" / "fuse.vim").read_text(encoding="utf-8")


def test_the_vim_syntax_names_every_keyword_and_builtin():
    keyword_lines = "\n".join(line for line in _vim_syntax().splitlines()
                              if line.startswith("syn match   fuseKeyword"))
    missing = [w for w in KEYWORDS if not re.search(rf"(?<![A-Za-z_]){w}(?![A-Za-z_])", keyword_lines)]
    assert not missing, f"syntax/fuse.vim does not mark {missing} as keywords"
    builtin = next(line for line in _vim_syntax().splitlines()
                   if line.startswith("syn match   fuseBuiltin"))
    names = set(re.findall(r"[a-z_]+", builtin.split("\\%(", 1)[1].split("\\)", 1)[0]))
    assert names == set(NAMED_BUILTINS) - {"not"}


# --- the language configuration -------------------------------------------------

def test_comments_brackets_and_closing_pairs():
    assert LANGUAGE["comments"] == {"lineComment": "#"}
    assert [tuple(pair) for pair in LANGUAGE["brackets"]] == [("[", "]"), ("(", ")"), ("{", "}")]
    opens = [pair["open"] for pair in LANGUAGE["autoClosingPairs"]]
    assert sorted(opens) == sorted(['[', '(', '{', '"'])  # never ': it is the prime
    word = re.compile(LANGUAGE["wordPattern"])
    assert [m.group(0) for m in word.finditer("Comp[p,p'.] = x'' + 1e-5")] == [
        "Comp", "p", "p'", "x''", "1e-5"]


@pytest.mark.parametrize("line,indents", [
    ("Y[i] = relu(W2[i,h]", True),            # a call still open after an index list
    ("X = const([[1, 2],", True),
    ("fn dense(x[d]) -> y[d] {", True),
    ("C[i] = case {", True),
    ("Y[i] = sig(W[i,j] X[j]  # a comment", True),
    ("Y[i] = X[i]   # a comment (with an open paren", False),
    ("Y[i] = relu(W[i,j] X[j])", False),
    ("{ let h[i] = A[i]; Bl[i] = h[i] }", False),
    ('W[i,j] = "data/w(1).npy"', False),
])
def test_indentation_follows_open_brackets_not_comments(line, indents):
    rules = LANGUAGE["indentationRules"]
    assert bool(re.search(rules["increaseIndentPattern"], line)) is indents
    assert re.search(rules["decreaseIndentPattern"], "    ])")
    assert not re.search(rules["decreaseIndentPattern"], "Y[i] = X[i]")
