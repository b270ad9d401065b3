"""The commands: `fuse.run` (fuse_lsp.running: only on request, off the event
loop, cancellable), `fuse.train` (fuse_lsp.training: the same, learning the
params), `fuse.explain` (the plan as Markdown) and `fuse.why` (fuse_lsp.why: an
answer of the last run explained)."""
from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from fuse_lang.front.diagnostics import Severity
from fuse_lang.plan import plan_program
from fuse_lang.plan.render import render_plan_markdown
from fuse_lang.run.backends import available_targets

from ..running import document_name, parse_request, run_document
from ..state import Command, DocumentTooLarge, DocumentUnavailable, FuseServer
from ..training import TRAIN, parse_train_request, train_document
from ..why import WHY, parse_why, why_document

RUN = "fuse.run"
EXPLAIN = "fuse.explain"


async def run(ls: FuseServer, *args: Any) -> dict[str, Any] | None:
    try:
        request = parse_request(ls, args)
    except ValueError as error:
        raise JsonRpcInvalidParams(str(error)) from None
    return await run_document(ls, request)


async def train(ls: FuseServer, *args: Any) -> dict[str, Any]:
    try:
        targets = await asyncio.to_thread(available_targets)  # may import a framework once
        request = parse_train_request(ls, args, targets)
    except ValueError as error:
        raise JsonRpcInvalidParams(str(error)) from None
    return await train_document(ls, request)


async def why(ls: FuseServer, *args: Any) -> dict[str, Any]:
    try:
        uri, target, limit, top = parse_why(args)
    except ValueError as error:
        raise JsonRpcInvalidParams(str(error)) from None
    return await why_document(ls, uri, target, limit, top)


def explain(ls: FuseServer, *args: Any) -> dict[str, str]:
    if not args or not isinstance(args[0], str):
        raise JsonRpcInvalidParams("fuse.explain takes [uri]")
    return {"kind": types.MarkupKind.Markdown.value, "value": explain_markdown(ls, args[0])}


def explain_markdown(ls: FuseServer, uri: str) -> str:
    """The document's plan, with a warning first when the program has errors."""
    try:
        analysis, _ = ls.analysis(uri)
    except DocumentTooLarge as oversized:
        return f"> **Not analysed:** {oversized.diagnostic.message}"
    except DocumentUnavailable as error:
        raise JsonRpcInvalidParams(f"fuse.explain: {error}") from None
    text = render_plan_markdown(plan_program(analysis), title=document_name(uri))
    errors = sum(1 for d in analysis.diagnostics if d.severity is Severity.ERROR)
    if errors:
        text = (f"> **{errors} error{'' if errors == 1 else 's'}** in this program: "
                f"the plan may be incomplete.\n\n") + text
    return text


COMMANDS = (Command(RUN, run), Command(TRAIN, train), Command(EXPLAIN, explain),
            Command(WHY, why))
