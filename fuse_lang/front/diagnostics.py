"""Diagnostics as plain data: code, severity, message, span, related spans, fixes.

Every code below has a section in docs/diagnostics.md (the anchor is the code
itself) and a test that triggers it.
"""
from __future__ import annotations

from dataclasses import field
from enum import Enum

from ..speed.fastinit import frozen_dataclass
from .span import LineIndex, Span


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"


# code -> (default severity, one-line summary used in docs and listings)
CODES: dict[str, tuple[Severity, str]] = {
    # syntax
    "syntax-error": (Severity.ERROR, "the statement does not follow the grammar"),
    "datalog-syntax": (Severity.ERROR, "a rule, fact or query written with Datalog's punctuation"),
    "unclosed-bracket": (Severity.ERROR, "a bracket is opened and never closed"),
    "unmatched-bracket": (Severity.ERROR, "a closing bracket with no opening one"),
    "unterminated-string": (Severity.ERROR, "a string has no closing quote on its line"),
    "invalid-character": (Severity.ERROR, "a character that is not part of the language"),
    "invalid-index": (Severity.ERROR, "an index form that is not allowed"),
    "nesting-too-deep": (Severity.ERROR, "brackets or operators nested too deeply"),
    "number-too-long": (Severity.ERROR, "a number literal with too many characters"),
    "invalid-encoding": (Severity.ERROR, "the file is not UTF-8 text"),
    "too-many-errors": (Severity.ERROR, "reporting stopped after many errors"),
    "file-too-large": (Severity.ERROR, "the document is over the size limit: not analysed"),
    # names and shapes
    "undefined-tensor": (Severity.ERROR, "a name that no statement defines"),
    "arity-mismatch": (Severity.ERROR, "a reference with the wrong number of indices"),
    "extent-conflict": (Severity.ERROR, "two places give one domain different extents"),
    "unknown-extent": (Severity.WARNING, "an axis whose extent nothing determines"),
    "unsized-tensor": (Severity.ERROR, "a computed tensor with an axis whose extent nothing gives"),
    "unsized-index": (Severity.ERROR, "an equation's index whose extent nothing gives"),
    "recurrence-write": (Severity.ERROR, "a recurrence's equation that writes neither its index nor a constant"),
    "virtual-step": (Severity.ERROR, "an equation run once (a recurrence's start) that reads the step of a virtual index"),
    "extent-too-large": (Severity.ERROR, "an axis longer than the largest extent Fuse handles"),
    "unknown-builtin": (Severity.ERROR, "a call to a function that does not exist"),
    "unknown-function": (Severity.ERROR, "a call to a name that is neither a builtin nor a `fn` of the program"),
    "fn-arguments": (Severity.ERROR, "a `fn` called with the wrong number or kind of arguments"),
    "fn-rank": (Severity.ERROR, "a `fn` argument whose number of indices differs from its parameter's"),
    "local-out-of-scope": (Severity.ERROR, "a block's `let` tensor read outside its block"),
    "let-redefined": (Severity.ERROR, "a `let` of a name the program or an enclosing block defines"),
    "local-export": (Severity.ERROR, "an `export`, a query or the `train` loss of a `let` tensor (local tensors are no outputs)"),
    "fn-recursion": (Severity.ERROR, "a `fn` that calls itself, directly or through others"),
    "fn-no-result": (Severity.ERROR, "a `fn` whose body does not define its result"),
    "fn-index-mismatch": (Severity.WARNING, "a `fn` call whose arguments name one index of the parameters differently"),
    "fn-index-clash": (Severity.WARNING, "a `fn`'s result index that no parameter has, named at a call like an index of the call's arguments"),
    "misplaced-list": (Severity.ERROR, "a list literal outside `const`"),
    "select-shapes": (Severity.ERROR, "the branches of a `select`, `case` or `when` with different indices"),
    "unknown-keyword": (Severity.ERROR, "a keyword argument the builtin does not take"),
    "argument-count": (Severity.ERROR, "a builtin called with the wrong number of arguments"),
    "bad-argument": (Severity.ERROR, "a builtin argument of the wrong kind"),
    "bad-initialiser": (Severity.ERROR, "a param initialiser that is unknown or has wrong arguments"),
    "cross-entropy-targets": (Severity.ERROR, "cross_entropy targets that are neither class ids nor a distribution over the logits' indices"),
    "topk-capped": (Severity.WARNING, "topk asks for more values than a row holds"),
    "mixed-projection": (Severity.ERROR, "one tensor defined with different projection operators"),
    "dotted-axis": (Severity.ERROR, "a dotted (normalised) axis used where it means nothing"),
    "paren-on-dense": (Severity.WARNING, "( ) used on a numeric tensor"),
    "kind-conflict": (Severity.ERROR, "a tensor defined as both Boolean and numeric"),
    "invalid-fact": (Severity.ERROR, "a fact that is not a ground Boolean tuple"),
    "invalid-statement": (Severity.ERROR, "a statement that is well-formed but cannot mean anything"),
    "virtual-index": (Severity.ERROR, "a virtual index used inconsistently"),
    "likely-typo-index": (Severity.WARNING, "two projected indices with close names, each used once"),
    "lone-index": (Severity.WARNING, "an index used once is summed within one term or factor"),
    "inner-projection": (Severity.WARNING, "an `avg=`/`max=`/`min=` that projects nothing: a call "
                                           "summed its indices first"),
    "multiplied-term": (Severity.WARNING, "a term of a parenthesised sum counted once per "
                                          "position of an index summed over its product"),
    "normalised-sum": (Severity.HINT, "a softmax is summed along the axis it normalises"),
    "padding-index": (Severity.WARNING, "an `axis x = valid|same` on no window's position"),
    "unused-tensor": (Severity.HINT, "a tensor that nothing reads or exports"),
    "loss-not-scalar": (Severity.ERROR, "a `train` loss that is not a scalar tensor"),
    "loss-without-params": (Severity.ERROR, "a `train` loss that no param influences"),
    "param-with-equation": (Severity.WARNING, "a param that an equation also defines"),
    "gradient-blocked": (Severity.WARNING, "a param that reaches the loss only without a gradient"),
    "loss-twice": (Severity.ERROR, "a second `train` declaration in one program"),
    "missing-source": (Severity.ERROR, "a source file that does not exist"),
    "unreadable-source": (Severity.ERROR, "a source file that cannot be read"),
    "unwritable-sink": (Severity.ERROR, "a sink that no run can write: a suffix no sink writes"),
    "sink-over-source": (Severity.WARNING, "a sink that writes a file the program reads as a source"),
    "sink-twice": (Severity.ERROR, "two sinks that write one file: the first's value would be lost"),
    "recursion": (Severity.INFORMATION, "tensors that depend on themselves"),
    "unsafe-negation": (Severity.ERROR, "a variable of a negated atom that no positive atom binds"),
    "unbound-head-variable": (Severity.ERROR, "a rule's head variable that no atom of its body binds"),
    "negation-cycle": (Severity.ERROR, "a relation that depends on itself through negation"),
    # generation (docs/generation.md): `fuse generate`, program.generate(...)
    "generate-no-tokens": (Severity.ERROR, "a program asked to generate that reads no token ids"),
    "generate-no-logits": (Severity.ERROR, "no tensor of the next token's logits over the vocabulary"),
    "generate-no-window": (Severity.ERROR, "a token input whose sequence length is not known"),
    # weights manifests (docs/weights.md): `fuse check --weights`, compile(weights=...)
    "weights-bad-manifest": (Severity.ERROR, "a weights manifest that is not one"),
    "weights-missing-file": (Severity.ERROR, "a file a weights manifest names that cannot be read"),
    "weights-unknown-key": (Severity.ERROR, "a key a weights file does not hold"),
    "weights-unknown-tensor": (Severity.ERROR, "a manifest tensor that is not a source or param"),
    "weights-shape-mismatch": (Severity.ERROR, "a weight whose shape differs from what is declared"),
    "weights-dtype-mismatch": (Severity.ERROR, "a weight whose dtype differs from what is declared"),
    "weights-checksum": (Severity.ERROR, "a weight file whose sha256 differs from the manifest's"),
    "unsafe-comparison": (Severity.ERROR, "a variable of a rule's comparison that no positive atom binds"),
    "unsafe-arithmetic": (Severity.ERROR, "a variable a rule's atoms read only in arithmetic (`Q(x + y)`), bound by nothing"),
    "aggregate-over-absent": (Severity.WARNING, "a `min=`, `max=` or `avg=` over a relation's cells, where a cell with no tuple is 0"),
    "not-a-number": (Severity.ERROR, "a comparison or a computed head over a column of symbols"),
    "unknown-symbol": (Severity.INFORMATION, "a compared symbol constant that its column does not hold"),
    "domain-limit": (Severity.ERROR, "a rule computes more values than a column holds, or past 64 bits"),
    "number-overflow": (Severity.WARNING, "a number literal past the largest float, read as infinity"),
    "unknown-constant": (Severity.WARNING, "a constant a body or query reads that its column does not hold"),
    "lowercase-constant": (Severity.HINT, "a query's variable spelled like a symbol of its column"),
    "header-row": (Severity.WARNING, "a relation file's first row that looks like a header"),
    # imports (docs/language.md, Imports)
    "import-not-found": (Severity.ERROR, "an imported file that does not exist or cannot be read"),
    "import-cycle": (Severity.ERROR, "files that import each other in a cycle"),
    "unknown-namespace": (Severity.ERROR, "`ns::Name` where no import is named `ns`"),
    "import-error": (Severity.ERROR, "an error inside an imported file"),
}


@frozen_dataclass
class Related:
    span: Span
    message: str
    # a place in another file (an imported one): its path, and the span's 0-based
    # (line, column, end line, end column) there; None: the span is in this text
    path: str | None = None
    position: tuple[int, int, int, int] | None = None


@frozen_dataclass
class TextEdit:
    span: Span
    new_text: str


@frozen_dataclass
class Fix:
    title: str
    edits: tuple[TextEdit, ...]


@frozen_dataclass
class Diagnostic:
    code: str
    severity: Severity
    message: str
    span: Span
    related: tuple[Related, ...] = ()
    fixes: tuple[Fix, ...] = ()
    data: tuple[tuple[str, object], ...] = field(default=())

    def to_json(self, lines: LineIndex, path: str | None = None) -> dict:
        """The JSON shape of `fuse check --format json` (1-based lines and columns)."""
        line, col = lines.position(self.span.start)
        end_line, end_col = lines.position(self.span.end)
        out: dict = {}
        if path is not None:
            out["path"] = path
        out.update(
            line=line + 1,
            column=col + 1,
            end_line=end_line + 1,
            end_column=end_col + 1,
            severity=self.severity.value,
            code=self.code,
            message=self.message,
        )
        if self.related:
            out["related"] = [_related_json(r, lines) for r in self.related]
        if self.fixes:
            out["fixes"] = [
                {"title": f.title,
                 "edits": [{"start": e.span.start, "end": e.span.end, "new_text": e.new_text}
                           for e in f.edits]}
                for f in self.fixes
            ]
        return out


def make(code: str, message: str, span: Span, *, related: tuple[Related, ...] = (),
         fixes: tuple[Fix, ...] = (), severity: Severity | None = None) -> Diagnostic:
    """A diagnostic with its code's default severity."""
    default, _ = CODES[code]
    return Diagnostic(code, severity or default, message, span, related, fixes)


def has_errors(diagnostics: "list[Diagnostic] | tuple[Diagnostic, ...]") -> bool:
    return any(d.severity is Severity.ERROR for d in diagnostics)


def _related_json(related: Related, lines: LineIndex) -> dict:
    """A related place as `fuse check --format json` writes it (1-based)."""
    if related.position is not None:
        line, col, end_line, end_col = related.position
    else:
        line, col = lines.position(related.span.start)
        end_line, end_col = lines.position(related.span.end)
    out = {"line": line + 1, "column": col + 1, "end_line": end_line + 1,
           "end_column": end_col + 1, "message": related.message}
    if related.path is not None:
        out["path"] = related.path
    return out
