"""`import "file.fuse" as ns`: other files' definitions joined to the program before
checking (docs/language.md, Imports).

`resolve_imports` reads every file the program imports, directly or through the
files it imports, once each (a file reached twice, by two aliases or a diamond,
is one set of tensors), and gives their statements renamed into the program
(check/import_names.py): the file first reached as `g` gives `g::Path`, a file
that `g` imports as `h` gives `g::h::T`.  Only definitions join: equations,
sources, facts, params, axis declarations and functions; an imported file's
sinks, exports, queries, `train` and imports are its own.

Each imported file's statements keep their own spans, moved past the program's
text (file k's offsets start at (k+1) * IMPORT_BASE), so that every diagnostic
and definition tells which file and statement it came from: `placed_at_imports`
moves the errors found in an imported file onto the import statement of the
program that reaches it, with the file's line as related information, and
`ProgramText` gives the text of any span, the program's or a file's.

Files are parsed once per version (`ImportCache`: by path and modification time
and size, or by the text an editor holds for an open file), and their renamed
statements are kept with them, so that an edit of the importing program costs
neither a read nor a parse of what it imports.
"""
from __future__ import annotations

import dataclasses
import os
import re
import threading
from collections import deque
from pathlib import Path
from typing import Any, Mapping

from ..front import ir
from ..front.diagnostics import Diagnostic, Fix, Related, Severity, TextEdit, make
from ..front.let_blocks import has_blocks, is_block_local, lower_blocks
from ..front.program_size import MAX_PROGRAM_BYTES, too_large
from ..front.span import LineIndex, Span, shifted
from ..front.syntax import decode, parse
from ..io.source_files import path_problem
from .import_names import Scope, defined_names, renamed_statement
from .suggestions import NameSuggester, did_you_mean_text

IMPORT_BASE = 1 << 40  # imported file k's spans start at (k + 1) * IMPORT_BASE
_MAIN = "<program>"  # the importing program's key when it has no path
_KEPT = (ir.Equation, ir.Source, ir.Fact, ir.ParamDecl, ir.AxisDecl, ir.FnDef)
_MAX_PER_IMPORT = 20  # errors of imported files shown at one import statement
_MAX_NAMINGS = 4  # ways of naming one file kept (importers that name it differently)


class Aliases(dict):
    """alias -> path of a file's imports, and the aliases of those not found."""

    def __init__(self) -> None:
        super().__init__()
        self.missing: set[str] = set()


@dataclasses.dataclass
class ParsedFile:
    """One file read and parsed (spans in its own text)."""

    path: str  # absolute and normalised
    text: str
    version: Any  # (mtime, size) on disk, or the editor's text
    statements: tuple[ir.Statement, ...]
    diagnostics: tuple[Diagnostic, ...]
    names: frozenset[str]  # what importers may read (not its `let`s)
    lines: LineIndex
    locals: frozenset[str] = frozenset()  # its top-level `let`s: its own, not importers'
    # (k, prefix, its imports' prefixes) -> its statements moved and renamed, and the
    # diagnostics of renaming them (kept while this version of the file is)
    lowered: dict = dataclasses.field(default_factory=dict)


class ImportCache:
    """Imported files, parsed once per version.  `open_texts` (absolute path ->
    text): files an editor holds open, read from there instead of the disk."""

    def __init__(self) -> None:
        self.files: dict[str, ParsedFile] = {}
        self.open_texts: dict[str, str] = {}
        self.parses = 0  # how many files were parsed (the tests read it)
        self._lock = threading.Lock()

    def file(self, path: str) -> ParsedFile | str:
        """The parsed file at `path`, or why it cannot be read."""
        text = self.open_texts.get(path)
        if text is not None:  # (an editor's document over the limit is not read either)
            if too_large(text) is not None:
                return _too_large(len(text.encode("utf-8", "surrogatepass")))
            version: Any = ("open", len(text), hash(text))
        else:
            problem = path_problem(path)  # (a NUL byte: os.stat raises ValueError)
            if problem is not None:
                return problem
            try:
                stat = os.stat(path)
            except OSError as err:
                return "it does not exist" if isinstance(err, FileNotFoundError) else \
                    (err.strerror or str(err))
            if not os.path.isfile(path):
                return "it is not a file"
            if stat.st_size > MAX_PROGRAM_BYTES:  # the limit of any program (docs/limits.md)
                return _too_large(stat.st_size)
            version = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            known = self.files.get(path)
            if known is not None and known.version == version:
                return known
        if text is None:
            try:
                with open(path, "rb") as handle:  # (no further than the limit: it may grow)
                    data = handle.read(MAX_PROGRAM_BYTES + 1)
            except OSError as err:
                return err.strerror or str(err)
            if len(data) > MAX_PROGRAM_BYTES:
                return _too_large(len(data))
            if len(data) != stat.st_size:  # (being written as it was read: not kept
                version = None             # under the size and time it will have)
            text, problem = decode(data)
            if problem is not None:
                return "it is not UTF-8 text"
        parsed = parse(text)
        statements, diagnostics = parsed.program.statements, tuple(parsed.diagnostics)
        hidden: frozenset[str] = frozenset()
        if has_blocks(statements):  # its blocks and `let`s written out, its own locals hidden
            lowered = lower_blocks(statements, text)
            statements, diagnostics = lowered.statements, diagnostics + lowered.diagnostics
            hidden = lowered.file_locals
        names = defined_names(tuple(s for s in statements if isinstance(s, _KEPT)))
        made = ParsedFile(path, text, version, statements, diagnostics,
                          frozenset(n for n in names if n not in hidden
                                    and not is_block_local(n)), LineIndex(text), hidden)
        with self._lock:
            if version is not None:
                self.files[path] = made
            self.parses += 1
        return made


def _too_large(size: int) -> str:
    """Why a file over the program size limit is not imported."""
    return (f"it is {size / 1e6:.1f} MB; Fuse reads programs up to "
            f"{MAX_PROGRAM_BYTES // (1024 * 1024)} MB")


SHARED_CACHE = ImportCache()  # one per process unless a caller gives its own


@dataclasses.dataclass
class ImportedFile:
    """A file of the program's imports: the k-th, its names under `prefix`, reached
    from the program's import statement at `via` (a span in the program)."""

    k: int
    parsed: ParsedFile
    shown: str  # its path as the user reads it (from the program's folder)
    prefix: str
    via: Span
    aliases: dict[str, str]  # its imports: alias -> path

    @property
    def base(self) -> int:
        return (self.k + 1) * IMPORT_BASE


@dataclasses.dataclass
class Imports:
    """What a program imports: its import statements (`decls`, with the path each
    names or None), the files reached, and where each name's file is."""

    decls: tuple[tuple[ir.ImportDecl, str | None], ...]
    files: tuple[ImportedFile, ...]
    aliases: dict[str, str]  # the program's own: alias -> path
    # the absolute paths of the files an import names that could not be read (any
    # file's import): the program's diagnostics change when one appears
    missing: frozenset[str] = frozenset()

    def file_at(self, offset: int) -> ImportedFile | None:
        """The imported file a (moved) offset is in, None for the program's own."""
        k = offset // IMPORT_BASE - 1
        return self.files[k] if 0 <= k < len(self.files) else None

    def locate(self, span: Span) -> tuple[str, Span] | None:
        """An imported file's span as (its path, the span in its text); None when
        `span` is the program's."""
        file = self.file_at(span.start)
        if file is None:
            return None
        return file.parsed.path, Span(span.start - file.base, span.end - file.base)

    def where(self, span: Span) -> str | None:
        """`lib/graph.fuse:8` for a span in an imported file; None for the program's."""
        file = self.file_at(span.start)
        if file is None:
            return None
        return f"{file.shown}:{file.parsed.lines.position(span.start - file.base)[0] + 1}"

    def by_path(self, path: str) -> ImportedFile | None:
        return next((f for f in self.files if f.parsed.path == path), None)


class ProgramText(str):
    """The program's text, which also slices the texts of its imported files at
    their moved offsets (`text[stmt.span.start:stmt.span.end]` of an imported
    statement is its text in its file).  Its length and contents are the program's."""

    imports: Imports

    def __new__(cls, text: str, imports: Imports) -> "ProgramText":
        made = super().__new__(cls, text)
        made.imports = imports
        return made

    def __getitem__(self, key: Any) -> str:
        if type(key) is slice and key.start is not None and key.start >= IMPORT_BASE:
            file = self.imports.file_at(key.start)
            if file is not None:
                base = file.base
                stop = key.stop - base if key.stop is not None else None
                return file.parsed.text[key.start - base:stop]
            return ""
        return str.__getitem__(self, key)

    def __reduce__(self) -> Any:
        return (str, (str(self),))


def has_imports(statements: tuple[ir.Statement, ...]) -> bool:
    return any(type(stmt) is ir.ImportDecl for stmt in statements)


@dataclasses.dataclass
class Resolved:
    statements: tuple[ir.Statement, ...]  # the program's, then the imported files'
    diagnostics: list[Diagnostic]
    imports: Imports
    # `ns::X` that names nothing, by its span: what to say instead of the checker's
    # own `undefined-tensor` there (or as well, where the checker says nothing);
    # None: nothing (`ns` is an import that is not found)
    flagged: dict[Span, Diagnostic | None]


def resolve_imports(statements: tuple[ir.Statement, ...], path: str | None, base_dir: Path,
                    text: str, cache: ImportCache | None = None,
                    deltas: dict[int, int] | None = None) -> Resolved:
    """The program's statements with its imports resolved (see the module).  `deltas`:
    how far each statement reused where it was has moved (front/relocation.py): one
    renamed is moved first."""
    return _Resolver(path, base_dir, text, cache or SHARED_CACHE).run(statements, deltas or {})


class _Resolver:
    def __init__(self, path: str | None, base_dir: Path, text: str, cache: ImportCache) -> None:
        self.main = os.path.normpath(os.path.abspath(path)) if path else _MAIN
        self.base_dir = str(base_dir)
        self.text = text
        self.cache = cache
        self.diags: list[Diagnostic] = []
        self.flagged: dict[Span, Diagnostic | None] = {}
        self.files: dict[str, ImportedFile] = {}
        self.edges: dict[str, list[tuple[ir.ImportDecl, str, int]]] = {}  # file -> imports
        self.main_aliases: dict[str, str] = {}
        self.missing: set[str] = set()  # the files looked for and not read

    def run(self, statements: tuple[ir.Statement, ...], deltas: dict[int, int]) -> Resolved:
        main_decls = [s for s in statements if type(s) is ir.ImportDecl]
        aliases = self.main_aliases = self._aliases(self.main, main_decls, self.base_dir, 0)
        self._reach(main_decls, aliases)
        self._cycles()
        imports = Imports(tuple((d, aliases.get(d.alias)) for d in main_decls),
                          tuple(sorted(self.files.values(), key=lambda f: f.k)), aliases,
                          frozenset(self.missing))
        out: list[ir.Statement] = []
        main_scope = Scope("", self._qualifier(aliases))
        has_names = "::" in self.text
        for stmt in statements:
            if type(stmt) is ir.ImportDecl:
                continue
            if not has_names:
                out.append(stmt)
                continue
            delta = deltas.get(id(stmt), 0)
            if "::" in self.text[stmt.span.start + delta:stmt.span.end + delta]:
                stmt = renamed_statement(stmt, main_scope, delta)
            out.append(stmt)
        # the files' statements after the program's: in the order of their spans, as
        # the checker has a program's statements
        for file in imports.files:
            out += self._lowered(file)
        return Resolved(tuple(out), self.diags, imports, self.flagged)

    # ---- the files reached

    def _aliases(self, owner: str, decls: list[ir.ImportDecl], folder: str, base: int
                 ) -> dict[str, str]:
        """alias -> path of a file's imports (an unreadable one reported and left out,
        its alias kept in `missing`: its names are not said unknown as well)."""
        aliases = Aliases()
        edges = self.edges.setdefault(owner, [])
        for decl in decls:
            span = _moved(decl.path.span, base)
            if decl.alias in aliases:
                self.diags.append(make("invalid-statement", f"`{decl.alias}` names two "
                                       f"imports: give each its own namespace",
                                       _moved(decl.alias_span, base)))
                continue
            # (absolute, as the program's own path: a file importing the program is a cycle
            # back to it whether the program was named relative or not)
            target = os.path.normpath(os.path.abspath(os.path.join(folder, decl.path.value)))
            found = self.cache.file(target)
            if isinstance(found, str):
                self.diags.append(make("import-not-found", f"cannot import `{decl.path.value}`: "
                                       f"{found} (looked for {target})", span))
                aliases.missing.add(decl.alias)
                self.missing.add(target)
                continue
            aliases[decl.alias] = target
            edges.append((decl, target, base))
        return aliases

    def _reach(self, main_decls: list[ir.ImportDecl], aliases: dict[str, str]) -> None:
        """Every file the program reaches, breadth first: each is named by its
        shortest way from the program (the one the user most likely wrote)."""
        queue: deque[tuple[str, str, Span]] = deque()
        for decl in main_decls:
            target = aliases.get(decl.alias)
            if target is not None:
                queue.append((target, decl.alias + "::", decl.span))
        while queue:
            target, prefix, via = queue.popleft()
            if target in self.files or target == self.main:
                continue
            parsed = self.cache.file(target)
            assert not isinstance(parsed, str)  # (read when its alias was made)
            file = ImportedFile(len(self.files), parsed, self._shown(target), prefix, via, {})
            self.files[target] = file
            decls = [s for s in parsed.statements if type(s) is ir.ImportDecl]
            file.aliases = self._aliases(target, decls, os.path.dirname(target), file.base)
            for decl in decls:
                if decl.alias in file.aliases:
                    queue.append((file.aliases[decl.alias], prefix + decl.alias + "::", via))

    def _shown(self, path: str) -> str:
        try:
            return os.path.relpath(path, self.base_dir)
        except ValueError:
            return path

    def _cycles(self) -> None:
        """`import-cycle` at each import that closes a cycle, with the chain."""
        stack: list[str] = []
        done: set[str] = set()

        def visit(node: str) -> None:
            stack.append(node)
            for decl, target, base in self.edges.get(node, ()):
                if target in stack:
                    chain = stack[stack.index(target):] + [target]
                    words = " imports ".join(self._name_of(p) for p in chain)
                    self.diags.append(make("import-cycle", f"imports go round in a cycle: "
                                           f"{words}", _moved(decl.span, base)))
                elif target not in done:
                    visit(target)
            stack.pop()
            done.add(node)

        visit(self.main)

    def _name_of(self, path: str) -> str:
        return "the program" if path == _MAIN else os.path.basename(path)

    # ---- names

    def _lowered(self, file: ImportedFile) -> list[ir.Statement]:
        """The file's definitions, moved and renamed into the program (kept per version)."""
        prefixes = tuple(sorted((alias, self.files[p].prefix if p in self.files else "")
                                for alias, p in file.aliases.items()))
        key = (file.k, file.prefix, prefixes, self.base_dir)
        parsed = file.parsed
        known = parsed.lowered.get(key)
        if known is None:
            before, flagged_before = len(self.diags), set(self.flagged)
            axes = frozenset(s.name for s in parsed.statements if type(s) is ir.AxisDecl)
            scope = Scope(file.prefix, self._qualifier(file.aliases), axes,
                          "@" + file.prefix[:-2], parsed.names, os.path.dirname(parsed.path),
                          self.base_dir)
            made = [renamed_statement(stmt, scope, file.base)
                    for stmt in parsed.statements if isinstance(stmt, _KEPT)]
            known = (made, self.diags[before:],
                     {span: d for span, d in self.flagged.items() if span not in flagged_before},
                     shifted(list(parsed.diagnostics), file.base))
            if len(parsed.lowered) >= _MAX_NAMINGS:  # (the oldest way of naming it goes)
                parsed.lowered.pop(next(iter(parsed.lowered)))
            parsed.lowered[key] = known
        else:
            self.diags += known[1]
            self.flagged.update(known[2])
        self.diags += known[3]
        return known[0]

    def _qualifier(self, aliases: dict[str, str]) -> Any:
        """How names `ns::X` are read where `aliases` are the imports."""
        def qualify(name: str, span: Span) -> str:
            return self._qualified(name, span, aliases)
        return qualify

    def _qualified(self, name: str, span: Span, aliases: Mapping[str, str],
                   before: str = "", owner: ImportedFile | None = None) -> str:
        """The program's name of `ns::Name` written where `aliases` are the imports
        (`before`: the namespaces written before `ns`, those of a nested name
        `o::ns::Name`, read in the file `owner`)."""
        head, _, rest = name.partition("::")
        target = aliases.get(head)
        if target is not None and target == self.main:  # (an import cycle back to the
            # program, said once as `import-cycle`: its names are the program's own)
            if "::" in rest:
                return self._qualified(rest, span, self.main_aliases, before + head + "::")
            return rest
        file = self.files.get(target) if target is not None else None
        if file is None:
            if target is None and head in getattr(aliases, "missing", ()):
                self.flagged[span] = None  # (import-not-found says it: nothing here)
            elif target is None:
                self._unknown_namespace(head, span, aliases, before, owner)
            return name
        if "::" in rest:
            return self._qualified(rest, span, file.aliases, before + head + "::", file)
        if rest in file.parsed.locals:
            self.flagged[span] = make(
                "local-out-of-scope", f"`{rest}` is local to `{file.shown}` (a top-level "
                f"`let` there): files that import it cannot read it", span)
            return name
        if rest not in file.parsed.names:
            self._undefined(before + head, rest, span, file)
            return name
        return file.prefix + rest

    def _unknown_namespace(self, head: str, span: Span, aliases: Mapping[str, str],
                           before: str, owner: ImportedFile | None) -> None:
        close = NameSuggester(tuple(aliases)).close(head)
        known = ", ".join(sorted(aliases)) or "none"
        at = span.start + len(before)  # (the fix edits `ns` itself, not what is before)
        fixes = tuple(Fix(f"Change to `{c}`", (TextEdit(Span(at, at + len(head)), c),))
                      for c in close)
        where = "here" if owner is None else \
            f"in `{owner.shown}` (imported as `{before[:-2]}`)"
        self.flagged[span] = make("unknown-namespace", f"`{head}` is not a namespace {where}: "
                                  f"no `import \"...\" as {head}`{did_you_mean_text(close)} "
                                  f"(namespaces: {known})", span, fixes=fixes)

    def _undefined(self, head: str, rest: str, span: Span, file: ImportedFile) -> None:
        """`head`: the namespaces as written (`o::ns` for a nested name)."""
        close = NameSuggester(tuple(file.parsed.names)).close(rest)
        fixes = tuple(Fix(f"Change to `{head}::{c}`", (TextEdit(span, f"{head}::{c}"),))
                      for c in close)
        self.flagged[span] = make("undefined-tensor", f"`{rest}` is not defined in "
                                  f"`{file.shown}`, imported as `{head}`"
                                  f"{did_you_mean_text(head + '::' + c for c in close)}",
                                  span, fixes=fixes)


def _moved(span: Span, base: int) -> Span:
    return Span(span.start + base, span.end + base) if base else span


def placed_at_imports(diags: list[Diagnostic], resolved: Resolved) -> list[Diagnostic]:
    """`diags` told where the user reads them: a diagnostic in an imported file is
    an error at the program's import statement that reaches it (its warnings and
    hints are the file's own, shown when it is open), with the file's place as
    related information; related places in imported files get their file."""
    pending = dict(resolved.flagged)
    said = []
    for diag in diags:
        if diag.span in pending and pending[diag.span] is None and \
                diag.code in _NOT_FOUND + ("unused-tensor",):
            continue  # (a name of an import that is not found: import-not-found says it)
        if diag.span in pending and diag.code in _NOT_FOUND:
            instead = pending.pop(diag.span)  # (the file's names, not the program's, suggested)
            if instead is None:
                continue
            diag = instead
        said.append(diag)
    said += [diag for diag in pending.values() if diag is not None]
    out: list[Diagnostic] = []
    per_import: dict[Span, int] = {}
    for diag in said:
        file = resolved.imports.file_at(diag.span.start)
        if file is None:
            out.append(_with_files(diag, resolved.imports))
        elif diag.severity is Severity.ERROR:
            count = per_import[file.via] = per_import.get(file.via, 0) + 1
            if count <= _MAX_PER_IMPORT:
                out.append(_at_import(diag, file, resolved.imports))
    return out


_NOT_FOUND = ("undefined-tensor", "unknown-function", "unknown-builtin")


def _with_files(diag: Diagnostic, imports: Imports) -> Diagnostic:
    if not any(r.span.start >= IMPORT_BASE for r in diag.related):
        return diag
    return dataclasses.replace(diag, related=tuple(_related(r, imports) for r in diag.related))


def _at_import(diag: Diagnostic, file: ImportedFile, imports: Imports) -> Diagnostic:
    """An error in an imported file, at the program's import statement that reaches it."""
    line = file.parsed.lines.position(diag.span.start - file.base)[0] + 1
    code = diag.code if diag.code in ("import-cycle", "import-not-found") else "import-error"
    said = _as_the_file_writes(diag.message, file)
    message = f"in `{file.shown}` line {line}: {said}"
    if code == "import-error":
        message += f" [{diag.code}]"
    related = (_related(Related(diag.span, said), imports),) + tuple(
        _related(dataclasses.replace(r, message=_as_the_file_writes(r.message, file)), imports)
        for r in diag.related)
    return Diagnostic(code, Severity.ERROR, message, file.via, related)


def _as_the_file_writes(message: str, file: ImportedFile) -> str:
    """`message` with the file's names and indices as it writes them (`T`, `j`, not
    `ns::T`, `j@ns`)."""
    return re.sub(re.escape("@" + file.prefix[:-2]) + r"(?![A-Za-z0-9_:])", "",
                  message.replace("`" + file.prefix, "`"))


def _related(related: Related, imports: Imports) -> Related:
    """A related place in an imported file, with its file and line and column."""
    file = imports.file_at(related.span.start)
    if file is None:
        return related
    span = Span(related.span.start - file.base, related.span.end - file.base)
    lines = file.parsed.lines
    return Related(span, related.message, file.parsed.path,
                   lines.position(span.start) + lines.position(span.end))
