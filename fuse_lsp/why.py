"""`fuse.why`: why an answer of the document's last run holds, does not, or has its
value (fuse_lang.run.why), as plain data and text, computed off the event loop.

Arguments: `[uri, target]` or `[uri, {target, limit?, top?}]`, the target written
as `fuse why` takes it (`Ancestor(Alice, Eve)`, `Attn[5, 2]`).  The last run of the
document answers when it is of the current version; else the document is run first
(`fuse.run`'s way: bounded, cancellable) and that run answers.  The answer:
`{ok, target, text, why}` (`why`: the answer's JSON, docs/why.md), or `{ok: false,
error}` with the reason in words."""
from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types

from fuse_lang.ide.why_text import TargetError, parse_target, why_text
from fuse_lang.run.program import FuseError
from fuse_lang.run.why.data import to_json

from .last_run import stale
from .running import RunRequest, parse_request, run_document
from .state import FuseServer

WHY = "fuse.why"
USAGE = "fuse.why takes [uri, target] or [uri, {target, limit?, top?}]"


def parse_why(args: tuple[Any, ...]) -> tuple[str, str, int, int]:
    """The document, the target's text, the node limit and the terms shown."""
    if len(args) < 2 or not isinstance(args[0], str):
        raise ValueError(USAGE)
    extra = args[1] if isinstance(args[1], dict) else {"target": args[1]}
    target = extra.get("target")
    limit, top = extra.get("limit", 50), extra.get("top", 5)
    if not isinstance(target, str) or not all(isinstance(n, int) and n > 0 for n in (limit, top)):
        raise ValueError(USAGE)
    return args[0], target, limit, top


async def why_document(ls: FuseServer, uri: str, target: str, limit: int, top: int
                       ) -> dict[str, Any]:
    try:
        name, values = parse_target(target)
    except TargetError as error:
        return _failed(ls, str(error))
    last = ls.last_runs.get(uri)
    if last is None or stale(ls, uri, last) or getattr(last, "explainer", None) is None:
        request: RunRequest = parse_request(ls, (uri, {}))
        ran = await run_document(ls, request)
        if not ran or not ran.get("ok"):
            return {"ok": False, "error": (ran or {}).get("error", "the run did not finish")}
        last = ls.last_runs.get(uri)
        if last is None or last.explainer is None:
            return _failed(ls, "the run kept nothing to explain")
    try:
        answer = await asyncio.to_thread(last.explainer.why, name, values, limit, top)
    except FuseError as error:
        return _failed(ls, f"why {target}: {error}")
    except Exception as error:  # noqa: BLE001 - an engine bug is still one message
        ls.log_error(WHY, error)
        return _failed(ls, f"why {target}: internal error: {type(error).__name__}: {error}")
    return {"ok": True, "target": target, "text": why_text(answer), "why": to_json(answer)}


def _failed(ls: FuseServer, message: str) -> dict[str, Any]:
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                   message=message))
    return {"ok": False, "error": message}
