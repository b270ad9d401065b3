"""The editor's features tell what the engine's CLI tells, on the same text, over
stdio with one server per position encoding for the module (UTF-16 as VS Code
has it, UTF-8 as Neovim offers it first): hover's shapes, extents, domains and
roles are `fuse explain --format json`'s (in `fn` bodies' calls, `let` blocks,
imports, recurrences, offsets, Datalog with values); diagnostics are `fuse check
--format json`'s (codes, ranges, severities, messages); semantic tokens, inlay
hints, document symbols, folding, definitions and references land on the right
text (tabs, CRLF and non-ASCII before it); a quick fix's edits give a program
that `fuse check` finds fixed."""
from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from fuse_lang import analyze
from fuse_lang.cli import main as cli_main

from .conftest import SERVER
from .lsp_text import apply, check_json_as_lsp, lsp_diagnostics, offset, position

pytestmark = pytest.mark.asyncio(loop_scope="module")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["attention.fuse", "cnn.fuse", "rnn.fuse", "mlp.fuse", "datalog_values.fuse",
            "transformer_fn.fuse", "transformer_blocks.fuse", "dependencies.fuse",
            "flights.fuse", "hmm.fuse"]

LIB = "B[k] = const([1,2,3,4])\n"

PROGRAMS = {
    "fnlet.fuse": """\
import "lib.fuse" as ns
X[p,d] = const([[1,2,3],[4,5,6]])
fn lin(w[o,i], x[b,i]) -> y[b,o] {
  h[b,o] = w[o,i] x[b,i]
  y[b,o] = relu(h[b,o])
}
W[e,d] = const([[1,0,0],[0,1,0],[0,0,1],[1,1,1]])
H[p,e] = lin(W[e,d], X[p,d])
{
  let T[p] = H[p,e]
  U[p] = T[p] + 1
}
let S = 3
Z[p,e] = ns::B[e] H[p,e] S
export Z, U
""",
    "recur.fuse": """\
U[j,t] = const([[1,2,3],[4,5,6]])
W[i,j] = const([[1,0],[0,1]])
X[i,*t+1] = sig(W[i,j] X[j,*t] + U[j,t])
M[i,j] = const([[0.5,0],[0,0.5]])
Y[i,k] = const([[1,2,3],[4,5,6]])
Z[i,k] = sig(M[i,j] Z[j,k-1]) + Y[i,k]
export X, Z
""",
    "conv.fuse": """\
Image[x,y] = const([[1,2,3,4],[5,6,7,8],[9,10,11,12],[13,14,15,16]])
Filter[dx,dy] = const([[1,0],[0,1]])
F[x,y] = relu(Filter[dx,dy] Image[x+dx,y+dy])
P[x/2,y/2] = F[x,y]
Comp[p,p'.] = softmax(F[p,y] F[p',y])
export P, Comp
""",
    "rules.fuse": """\
Parent(Alice, Bob); Parent(Bob, Carol); Parent(Carol, Dan)
Person(Alice); Person(Bob); Person(Carol); Person(Dan); Person(Eve)
Ancestor(x,y) = Parent(x,y)
Ancestor(x,z) = Ancestor(x,y) Parent(y,z)
Root(x) = Person(x) not Parent(_, x)
Age(Alice, 70); Age(Bob, 45); Age("Carol", 20); Age(Dan, -3000000000)
Old(x) = Age(x, a) (a > 40)
Edge(1000000, 5); Edge(5, -7); Edge(-7, 1000000); Edge(5, 42)
Path(x,y) = Edge(x,y)
Path(x,z) = Path(x,y) Edge(y,z)
Count[x] = Path(x,y)
Ancestor(Alice, x)?
export Root, Old, Count
""",
    # a tab, CRLF line ends and non-ASCII before the names
    "lines.fuse": "# ünï 😀\r\n# two\r\nA[i] = const([1,2,3])\t# é😀\r\n"
                  "\tBx[i,j] = A[i] A[j]\t\r\n\"é😀.npy\" = A[i];\tC[i] = Bx[i,j]\r\n"
                  "D[i] = relu(\r\n   C[i])\r\nexport C, D\r\n",
    "errors.fuse": "A[i,j] = const([[1,2],[3,4]])\n# é😀\nB[i] = A[i,j] Cc[j]\n"
                   "\"é\" ; D[i] = A[i,k] + sigmoid(A[i,j])\nE[i,j] = A[i,j] A[j,i,k]\n"
                   "F[i] = A[i,dd] A[i,d]\nexport B, D, E, F\n",
}

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*'*(?:::[A-Za-z_][A-Za-z0-9_]*'*)*")


@pytest_lsp.fixture(scope="module", params=["utf-16", "utf-8"],
                    config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, request, tmp_path_factory):
    root = tmp_path_factory.mktemp("truth")
    (root / "lib.fuse").write_text(LIB, encoding="utf-8")
    for name, text in PROGRAMS.items():
        (root / name).write_bytes(text.encode("utf-8"))
    capabilities = client_capabilities("neovim@v0.11.0")
    if request.param == "utf-16":
        capabilities.general = types.GeneralClientCapabilities(
            position_encodings=[types.PositionEncodingKind.Utf16])
    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=root.as_uri()))
    assert result.capabilities.position_encoding == request.param
    lsp_client.encoding = request.param
    lsp_client.root = root
    yield lsp_client
    await lsp_client.shutdown_session()


def cli(*args: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli_main(list(args))
    return json.loads(out.getvalue())


def program(client, name: str) -> tuple[Path, str, str]:
    """(path, text, uri) of a program, opened in the server."""
    path = (client.root / name) if name in PROGRAMS else ROOT / "examples" / name
    text = path.read_bytes().decode("utf-8")
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="fuse", version=1,
                                             text=text)))
    return path, text, uri


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def names(text: str):
    """Each name written in `text`, outside comments and strings."""
    blanked = re.sub(r'"(?:[^"\\\r\n]|\\.)*"|#[^\r\n]*', lambda m: " " * len(m.group(0)), text)
    return IDENT.finditer(blanked)


def covered(client, text: str, range_: types.Range) -> str:
    return text[offset(text, range_.start, client.encoding):
                offset(text, range_.end, client.encoding)]


def hovered(md: str):
    """("tensor", name as shown, shape) or ("index", extent, domain, md) from a hover."""
    shape = re.search(r"shape `\(([^)]*)\)`", md)
    if shape:
        head = re.match(r"```fuse\n([^\[\n]*)", md).group(1)
        return ("tensor", head, tuple(None if x.strip() == "?" else int(x)
                                      for x in shape.group(1).split(",") if x.strip()))
    index = re.search(r"\*\*index\*\* · extent (\S+) · domain D(\d+)", md)
    if index:
        extent = None if index.group(1) == "?" else int(index.group(1))
        return ("index", extent, int(index.group(2)), md)
    return None


def explained_shape(shapes: dict, name: str, analysis=None, at: int | None = None,
                    md: str = ""):
    """A tensor's shape in `fuse explain`, by the name the editor shows: a `let`
    local's is `T` (its hover names the block's line), explain's the lowered
    `T@let.1` of the block at `at` or at that line."""
    if name in shapes:
        return shapes[name]
    block = re.search(r"Local to the block at line (\d+)", md)
    lowered = [n for n in shapes if n.startswith(name + "@let.")]
    if analysis is not None and (block or at is not None):
        lowered = [scope.names[name] for scope in analysis.lowered.scopes
                   if name in scope.names and (
                       scope.span.start <= at <= scope.span.end if at is not None else
                       analysis.lines.position(scope.span.start)[0] + 1 == int(block[1]))]
    return shapes[lowered[0]] if len(lowered) == 1 else "absent"


@pytest.mark.parametrize("name", [*PROGRAMS, *EXAMPLES])
async def test_hover_tells_what_explain_says(client, name):
    path, text, uri = program(client, name)
    if name == "errors.fuse":
        return
    explained = cli("explain", "--format", "json", str(path))
    shapes = {n: tuple(s) for n, s in explained["shapes"]}
    equations = {e["statement"]: e for e in explained["equations"]}
    analysis = analyze(text, path=str(path))
    inlined = analysis.inlined.origins if analysis.inlined is not None else {}
    checked = 0
    for match in names(text):
        found = await client.text_document_hover_async(types.HoverParams(
            text_document=doc(uri), position=position(text, match.start(), client.encoding)))
        if found is None:
            continue
        where = f"{name}: {match.group(0)!r} at {match.start()}"
        assert match.group(0) in covered(client, text, found.range), where
        seen = hovered(found.contents.value)
        if seen is None:
            continue
        if seen[0] == "tensor":
            assert explained_shape(shapes, seen[1], analysis, md=found.contents.value) == \
                seen[2], where
            checked += 1
            continue
        k = next((k for k, stmt in enumerate(analysis.program.statements)
                  if stmt.span.start <= match.start() <= stmt.span.end and k not in inlined),
                 None)
        indices = [i for i in equations.get(k, {}).get("indices", ())
                   if i["name"] == match.group(0)]
        if not indices:
            continue  # a source's, a sink's, a call argument's or a `fn` body's index
        (index,) = indices
        assert seen[1:3] == (index["extent"], index["domain"]), where
        role = {"output": "**output**", "projected": f"**projected** by `{index['op']}`",
                "step": "**step**"}
        assert role.get(index["role"], "**free**") in seen[3], where
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("name", [*PROGRAMS, *EXAMPLES])
async def test_diagnostics_are_fuse_check_s(client, name):
    path, text, uri = program(client, name)
    want = [d for d in cli("check", "--format", "json", str(path))["diagnostics"]
            if d["path"] == str(path)]
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=doc(uri)))
    assert lsp_diagnostics(report.items) == check_json_as_lsp(text, want, client.encoding)
    severity = {1: "error", 2: "warning", 3: "information", 4: "hint"}
    assert sorted((d.code, severity[d.severity], d.message) for d in report.items) == \
        sorted((d["code"], d["severity"], d["message"]) for d in want)
    if name == "errors.fuse":
        assert {d["code"] for d in want} >= {"undefined-tensor", "unknown-builtin",
                                             "arity-mismatch", "likely-typo-index"}


def decoded(client, text: str, data) -> list[tuple[str, str, tuple[str, ...]]]:
    """(the text under the token, its type, its modifiers) of each semantic token."""
    from fuse_lang.ide.semantic_tokens import TOKEN_MODIFIERS, TOKEN_TYPES
    out, line, column = [], 0, 0
    for k in range(0, len(data), 5):
        d_line, d_column, length, kind, bits = data[k:k + 5]
        line += d_line
        column = column + d_column if d_line == 0 else d_column
        start = types.Position(line=line, character=column)
        end = types.Position(line=line, character=column + length)
        out.append((covered(client, text, types.Range(start=start, end=end)),
                    TOKEN_TYPES[kind],
                    tuple(m for b, m in enumerate(TOKEN_MODIFIERS) if bits >> b & 1)))
    return out


@pytest.mark.parametrize("name", ["conv.fuse", "lines.fuse", "fnlet.fuse",
                                  "transformer_fn.fuse", "attention.fuse"])
async def test_semantic_tokens_lie_on_their_names(client, name):
    _, text, uri = program(client, name)
    got = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=doc(uri)))
    tokens = decoded(client, text, got.data)
    keywords = {"export", "axis", "param", "reduce", "fn", "let", "import", "as", "not"}
    for written, kind, _ in tokens:
        ok = {"comment": written.startswith("#"), "string": written[:1] == '"' == written[-1:],
              "number": re.fullmatch(r"-?[0-9.e+-]+", written), "keyword": written in keywords}
        assert ok.get(kind, IDENT.fullmatch(written)), (kind, written)
    # a dotted index's token is its name, as its references are (the dot is no part of it)
    dotted = [t for t in tokens if t[0] in ("p'", "d") and "declaration" in t[2]]
    if name in ("conv.fuse", "attention.fuse", "transformer_fn.fuse"):
        assert dotted


async def test_a_dotted_index_is_its_name_for_every_feature(client):
    _, text, uri = program(client, "conv.fuse")
    at = text.index("p'.]")
    got = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=doc(uri)))
    tokens = decoded(client, text, got.data)
    assert ("p'", "parameter", ("declaration", "output")) in tokens
    assert all(not written.endswith(".") for written, _, _ in tokens)
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=doc(uri), position=position(text, at, client.encoding),
        context=types.ReferenceContext(include_declaration=True)))
    assert {covered(client, text, r.range) for r in refs} == {"p'"}


@pytest.mark.parametrize("name", ["lines.fuse", "fnlet.fuse", "recur.fuse", "rules.fuse",
                                  "transformer_blocks.fuse"])
async def test_hints_symbols_folds_and_places_land_on_the_text(client, name):
    path, text, uri = program(client, name)
    shapes = {n: tuple(s) for n, s in cli("explain", "--format", "json", str(path))["shapes"]}
    analysis = analyze(text, path=str(path))
    end = position(text, len(text), client.encoding)
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=doc(uri), range=types.Range(start=types.Position(line=0, character=0),
                                                   end=end)))
    assert hints
    for hint in hints:
        at = offset(text, hint.position, client.encoding)
        tensor = hint.tooltip.split(":")[0]
        assert re.search(rf"{re.escape(tensor)}(\[[^\]]*\]|\([^)]*\))?$", text[:at]), hint
        shape = tuple(None if x.strip() == "?" else int(x)
                      for x in hint.label.strip(": ()").split(",") if x.strip())
        assert explained_shape(shapes, tensor, analysis, at) == shape, hint
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=doc(uri)))
    for group in symbols:
        for symbol in group.children or ():
            assert covered(client, text, symbol.selection_range) == symbol.name
            assert covered(client, text, symbol.range).startswith(
                covered(client, text, symbol.selection_range)) or symbol.kind == \
                types.SymbolKind.Function
    folds = await client.text_document_folding_range_async(
        types.FoldingRangeParams(text_document=doc(uri)))
    lines = re.split(r"\r\n|\r|\n", text)
    for fold in folds:
        assert fold.start_line < fold.end_line < len(lines)
        if fold.kind == types.FoldingRangeKind.Comment:
            assert all(lines[k].lstrip().startswith("#")
                       for k in range(fold.start_line, fold.end_line + 1))
    for match in names(text):
        place = position(text, match.start(), client.encoding)
        found = await client.text_document_definition_async(types.DefinitionParams(
            text_document=doc(uri), position=place))
        for where in found or ():
            if where.uri == uri:
                assert covered(client, text, where.range).endswith(match.group(0))
        refs = await client.text_document_references_async(types.ReferenceParams(
            text_document=doc(uri), position=place,
            context=types.ReferenceContext(include_declaration=True)))
        for where in refs or ():
            if where.uri == uri:
                assert covered(client, text, where.range).endswith(match.group(0))


# a diagnostic about a `fn` body is said at its call: no fix of it may edit the call
IN_BODIES = [
    ("fn g(x[i]) -> y[i] { y[i] = sigmoid(x[i]) }\nX = const([1,2])\nY[i] = g(X[i])\n"
     "export Y\n", "unknown-function"),
    ("fn g(x[i]) -> y[i] { y[i] = x[i] Xx[i] }\nX = const([1,2])\nY[i] = g(X[i])\n"
     "export Y\n", "undefined-tensor"),
    ("X = const([[1,2],[3,4]])\nfn g(x[i,j]) -> y[i] { y[i.] = x[i,j] }\n"
     "Y[i] = g(X[i,j])\nexport Y\n", "dotted-axis"),
    ("Person(Ann)\nfn ok(p(x)) -> o(x) { o(x) = p(x) not Banned(x, y) }\n"
     "Banned(Bob, Spam)\nOk(x) = ok(Person(x))\nexport Ok\n", "unsafe-negation"),
]

# quick fixes that do what they say, with non-ASCII, a tab and CRLF before them
FIXABLE = [
    "# é😀\r\nX[i] = const([1,2,3])\r\n\"é\" ;\tY[i] = X[i] + Xx[i]\r\nexport Y\r\n",
    "X[i] = const([1,2,3])\n# 😀\n\"é😀\"; Z[i] = sigmoid(X[i])\nexport Z\n",
    "W = const([[1,2],[3,4]])\nX[i,j] = W[i,j]\n\t\"😀\"; Y[a] = X[a,b] X[a,bb]\nexport Y\n",
    "X = const([[1,2],[3,4]])\n# ü\nY[i] = X[i.,j]\nexport Y\n",
    "fn dbl(x[i]) -> y[i] { y[i] = 2 x[i] }\nX = const([1,2])\n"
    "Y[i] = dbl(sigmoid(X[i])) + dbbl(X[i])\nexport Y\n",
    "Person(Ann); Person(Bob)\nBanned(Bob, Spam)\nOk(x) = Person(x) not Banned(x, y)\n"
    "export Ok\n",
    "W = const([[1,2]])\nX = const([[1,2]])\n{\n  let h[k,p] = W[k,d] X[p,dd]\n  T[k,p] = h[k,p]\n}\n"
    "export T\n",
    "A[i,j] = const([[1,2,3],[4,5,6]])\nB[i,j] = const([[1,2,3],[4,5,6]])\n"
    "C[i,j] = A[i,j] + B[j,i]\nexport C\n",
]


async def fixes_of(client, name: str, text: str):
    path = client.root / name
    path.write_bytes(text.encode("utf-8"))
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="fuse", version=1,
                                             text=text)))
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=doc(uri)))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=doc(uri), range=types.Range(start=types.Position(line=0, character=0),
                                                   end=position(text, len(text),
                                                                client.encoding)),
        context=types.CodeActionContext(diagnostics=report.items,
                                        only=[types.CodeActionKind.QuickFix])))
    return path, uri, report.items, actions


def _call_place(text: str) -> tuple[int, int, int]:
    """The line and columns of the program's call of its fn (`g(X[i])`, `ok(...)`),
    outside the fn's definition (all ASCII: columns in either encoding)."""
    for line, content in enumerate(text.splitlines()):
        found = re.search(r"\b(g|ok)\(", content)
        if found and not content.startswith("fn "):
            depth, end = 0, found.end() - 1
            for end in range(found.end() - 1, len(content)):
                depth += {"(": 1, ")": -1}.get(content[end], 0)
                if depth == 0:
                    break
            return line, found.start(), end + 1
    raise AssertionError(f"no call in {text!r}")


@pytest.mark.parametrize("k", range(len(IN_BODIES)))
async def test_a_fix_never_overwrites_a_fn_call(client, k):
    # (a diagnostic about the body is told at the call, or at the body itself when
    # it has its own place there, as dotted-axis has: either way no fix edits the call)
    text, code = IN_BODIES[k]
    path, uri, diags, actions = await fixes_of(client, f"body{k}.fuse", text)
    assert [d for d in diags if d.code == code]
    line, start, end = _call_place(text)
    for action in actions:
        for edit in action.edit.changes[uri]:
            inside = edit.range.start.line == line and start <= edit.range.start.character \
                and edit.range.end.character <= end
            assert not inside, (action.title, edit)


@pytest.mark.parametrize("k", range(len(FIXABLE)))
async def test_a_fix_gives_a_program_that_checks_as_it_says(client, k):
    text = FIXABLE[k]
    path, uri, diags, actions = await fixes_of(client, f"fix{k}.fuse", text)
    assert actions
    before = cli("check", "--format", "json", str(path))["diagnostics"]
    assert sorted(a.title for a in actions) == \
        sorted(f["title"] for d in before for f in d.get("fixes", ()))  # `fuse check`'s
    assert sorted((a.title, tuple(sorted((offset(text, e.range.start, client.encoding),
                                          offset(text, e.range.end, client.encoding),
                                          e.new_text) for e in a.edit.changes[uri])))
                  for a in actions) == \
        sorted((f["title"], tuple(sorted((e["start"], e["end"], e["new_text"])
                                         for e in f["edits"])))
               for d in before for f in d.get("fixes", ()))
    errors = {(d["code"], d["message"]) for d in before if d["severity"] == "error"}
    for action in actions:
        (fixed,) = action.diagnostics
        new = text
        for edit in sorted(action.edit.changes[uri], key=lambda e: (
                e.range.start.line, e.range.start.character), reverse=True):
            new = apply(new, edit.range, edit.new_text, client.encoding)
        path.write_bytes(new.encode("utf-8"))
        after = cli("check", "--format", "json", str(path))["diagnostics"]
        assert not [d for d in after if d["code"] == fixed.code and
                    (d["line"] - 1, d["message"]) == (fixed.range.start.line, fixed.message)], \
            (action.title, new)
        new_errors = [d for d in after if d["severity"] == "error" and
                      (d["code"], d["message"]) not in errors]
        assert not new_errors, (action.title, new)


async def test_datalog_s_uppercase_variables_are_fixed_as_variables(client):
    """`Anc(X,Y) :- Parent(X,Y).`: Datalog's `X` is a variable; the fix kept it, a
    constant to Fuse, and the fixed rule matched nothing (unknown-constant)."""
    text = "Parent(Ann, Bob)\r\nParent(Bob, Cy)\r\nTag(\"é😀\");\tAnc(X, Y) :- Parent(X, Y).\r\n" \
        "Anc(X, Z) :- Anc(X, Y), Parent(Y, Z).\r\n?- Anc(Ann, X).\r\n"
    for _ in range(3):
        path, uri, diags, actions = await fixes_of(client, "datalog.fuse", text)
        assert actions and "Datalog's variable" in actions[0].diagnostics[0].message
        for edit in sorted(actions[0].edit.changes[uri], key=lambda e: (
                e.range.start.line, e.range.start.character), reverse=True):
            text = apply(text, edit.range, edit.new_text, client.encoding)
    assert text.endswith("Anc(x, y) = Parent(x, y)\r\nAnc(x, z) = Anc(x, y) Parent(y, z)\r\n"
                         "Anc(Ann, x)?\r\n")
    path.write_bytes(text.encode("utf-8"))
    assert sorted(d["code"] for d in cli("check", "--format", "json", str(path))[
        "diagnostics"]) == ["recursion", "unused-tensor"]  # (Tag)


async def test_a_call_s_projection_says_what_its_function_projects(client):
    """The operator's hover on `H[p,e] = lin(W[e,d], X[p,d])` said only `p` and `e`
    (output): `fuse explain` lists the equations the call writes out, where `lin`'s
    `i` (the argument's `d`) is summed; the hover now says so too."""
    path, text, uri = program(client, "fnlet.fuse")
    explained = cli("explain", "--format", "json", str(path))["equations"]
    projected = {(i["name"], i["extent"], i["op"]) for e in explained
                 if e["line"] == 8 and "@lin." in e["tensor"]
                 for i in e["indices"] if i["role"] == "projected"}
    assert projected == {("i", 3, "sum")}
    found = await client.text_document_hover_async(types.HoverParams(
        text_document=doc(uri), position=position(text, text.index("= lin("),
                                                  client.encoding)))
    rows = re.findall(r"^  (\S+)\s+(\d+)\s+D\d+\s+projected \((\w+)\)", found.contents.value,
                      re.M)
    assert {(name, int(extent), op) for name, extent, op in rows} == projected
    assert "@" not in found.contents.value  # names as written (`h (in fn lin)`)


async def test_a_call_argument_s_index_token_has_its_role(client):
    """In `H[p,d] = layer(X[p,d], WQ[0,n,k,d], ...)` every argument's `d` is the left-hand
    side's (output, as hover and `fuse explain` say): the tokens of `d` past the first
    argument had no role."""
    path, text, uri = program(client, "transformer_fn.fuse")
    (call,) = [e for e in cli("explain", "--format", "json", str(path))["equations"]
               if e["tensor"] == "H"]
    assert {i["name"]: i["role"] for i in call["indices"]} == {"p": "output", "d": "output"}
    got = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=doc(uri)))
    line = text.count("\n", 0, text.index("H[p,d] = layer("))
    found = [(written, mods) for (written, kind, mods), k in zip(
        decoded(client, text, got.data), range(len(got.data) // 5))
        if kind == "parameter" and _line_of(got.data, k) == line]
    assert [mods for written, mods in found if written == "d"] == \
        [("declaration", "output")] + [("output",)] * 6
    assert {mods for written, mods in found if written in ("n", "k", "v", "h")} == {()}


def _line_of(data, k: int) -> int:
    return sum(data[5 * j] for j in range(k + 1))
