"""Imports in the editor: where an imported file's names are, what a file gives
under its namespace, and which file a name is at home in (docs/language.md,
Imports).  Plain data over an Analysis; the language server reads the files'
texts from `Analysis.imports` and asks other documents' analyses for the rest.

The spans of an imported file's statements are past the program's text
(check/imports.py): `located` tells each span's file and its place there.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..check import Analysis
from ..check.imports import ImportedFile
from ..front import ir
from ..front.span import Span


@dataclass(frozen=True, slots=True)
class Place:
    """A span in the program (`path` None) or in an imported file (its path and text)."""

    path: str | None
    span: Span
    text: str | None = None  # the imported file's text (for its lines and columns)


def located(analysis: Analysis, spans: tuple[Span, ...]) -> list[Place]:
    """Each span told with its file."""
    imports = analysis.imports
    out = []
    for span in spans:
        file = imports.file_at(span.start) if imports is not None else None
        if file is None:
            out.append(Place(None, span))
        else:
            out.append(Place(file.parsed.path, Span(span.start - file.base, span.end - file.base),
                             file.parsed.text))
    return out


def import_at(analysis: Analysis, offset: int) -> ImportedFile | None:
    """The file an import statement's path under `offset` names."""
    imports = analysis.imports
    if imports is None:
        return None
    for decl, path in imports.decls:
        if path is not None and (decl.path.span.start <= offset <= decl.path.span.end or
                                 decl.alias_span.start <= offset <= decl.alias_span.end):
            return imports.by_path(path)
    return None


def import_markdown(analysis: Analysis, offset: int) -> tuple[str, Span] | None:
    """The hover of an import's path or alias: the file and what `alias::` gives."""
    imports = analysis.imports
    if imports is None:
        return None
    for decl, path in imports.decls:
        for span in (decl.path.span, decl.alias_span):
            if not span.start <= offset <= span.end:
                continue
            head = f"```fuse\nimport \"{decl.path.value}\" as {decl.alias}\n```\n"
            if path is None or imports.by_path(path) is None:
                return head + "The file is not found (`import-not-found`).", span
            names = namespace_names(analysis, decl.alias)
            shown = ", ".join(f"`{written}`" for written, _ in names[:12])
            more = f" and {len(names) - 12} more" if len(names) > 12 else ""
            return (head + f"**namespace** `{decl.alias}::` names the definitions of "
                    f"`{decl.path.value}`: {shown or 'none'}{more}."), span
    return None


def namespace_names(analysis: Analysis, chain: str) -> list[tuple[str, str]]:
    """What `chain::` (`g::`, `g::h::`) gives here: (the name as written after it,
    the program's name of it), for its tensors and functions; its own namespaces
    as `inner::` (program name "")."""
    imports = analysis.imports
    if imports is None:
        return []
    aliases, file = imports.aliases, None
    for alias in chain.split("::"):
        path = aliases.get(alias)
        file = imports.by_path(path) if path is not None else None
        if file is None:
            return []
        aliases = file.aliases
    if file is None:
        return []
    out = [(name, file.prefix + name) for name in sorted(file.parsed.names)]
    out += [(inner + "::", "") for inner in sorted(file.aliases)]
    return out


def home_of(analysis: Analysis, name: str) -> tuple[str | None, str]:
    """The file tensor or function `name` is defined in (None: the program itself)
    and its name there.  A tensor of an imported file that the program adds
    equations or facts to is at home in that file."""
    imports = analysis.imports
    if imports is None:
        return None, name
    spans = analysis.tensors[name].definitions if name in analysis.tensors else ()
    for span in spans:
        file = imports.file_at(span.start)
        if file is not None:
            return file.parsed.path, name[len(file.prefix):]
    for file in imports.files:
        if name.startswith(file.prefix) and name[len(file.prefix):] in file.parsed.names:
            return file.parsed.path, name[len(file.prefix):]
    return None, name


def name_here(analysis: Analysis, home: str | None, local: str) -> str | None:
    """The program's name of `local` of file `home` (None: the program's own), or
    None when this program does not import that file."""
    if home is None or (analysis.path is not None and
                        os.path.normpath(os.path.abspath(analysis.path)) == home):
        return local
    imports = analysis.imports
    file = imports.by_path(home) if imports is not None else None
    return file.prefix + local if file is not None else None


def imports_file(analysis: Analysis, path: str) -> bool:
    """Whether the program imports `path`, directly or through its imports."""
    return analysis.imports is not None and analysis.imports.by_path(path) is not None


def depends_on(analysis: Analysis, path: str) -> bool:
    """Whether the program's diagnostics change with the file at `path` (absolute,
    normalised): it imports the file, directly or not, or an import of it (or of a
    file it imports) looked for that file and did not find it, which appearing
    would change.  A folder's path: any such file under it (the folder deleted,
    renamed or made)."""
    imports = analysis.imports
    if imports is None:
        return False
    under = path.rstrip(os.sep) + os.sep
    return any(file == path or file.startswith(under)
               for file in (*(f.parsed.path for f in imports.files), *imports.missing))


def import_decls(analysis: Analysis) -> tuple[ir.ImportDecl, ...]:
    return tuple(d for d, _ in analysis.imports.decls) if analysis.imports is not None else ()
