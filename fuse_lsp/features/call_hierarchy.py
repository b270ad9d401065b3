"""The call hierarchy of a program's dataflow: for a tensor, the tensors its
equations read (outgoing) and the tensors whose equations read it (incoming),
each with the places of those reads (fuse_lang.ide.dataflow)."""
from __future__ import annotations

from typing import Any

from lsprotocol import types

from fuse_lang.ide.dataflow import Node, incoming, node_at, outgoing

from ..convert import Converter
from ..state import Feature, FuseServer, safe
from .symbols import SYMBOL_KIND

_KINDS = {str(kind): symbol for kind, symbol in SYMBOL_KIND.items()}


def _item(node: Node, uri: str, convert: Converter) -> types.CallHierarchyItem:
    return types.CallHierarchyItem(
        name=node.shown, kind=_KINDS.get(node.kind, types.SymbolKind.Variable),
        detail=node.detail, uri=uri, range=convert.range(node.span),
        selection_range=convert.range(node.name_span), data={"name": node.name})


def _name(item: types.CallHierarchyItem) -> str:
    """The tensor an item stands for: as the analysis names it (a local's `h@let.1`),
    from the item's data when the client gives it back, else its name as shown."""
    data: Any = item.data
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else item.name


@safe(list)
def prepare(ls: FuseServer, params: types.CallHierarchyPrepareParams
            ) -> list[types.CallHierarchyItem]:
    uri = params.text_document.uri
    analysis, convert = ls.analysis(uri)
    found = node_at(analysis, convert.offset(params.position))
    return [] if found is None else [_item(found, uri, convert)]


def _calls(ls: FuseServer, item: types.CallHierarchyItem, find: Any
           ) -> list[tuple[types.CallHierarchyItem, list[types.Range]]]:
    """The tensors `find` (dataflow's incoming or outgoing) gives for `item`, each
    as an item with the ranges of its reads."""
    analysis, convert = ls.analysis(item.uri)
    return [(_item(edge.node, item.uri, convert), [convert.range(s) for s in edge.spans])
            for edge in find(analysis, _name(item))]


@safe(list)
def incoming_calls(ls: FuseServer, params: types.CallHierarchyIncomingCallsParams
                   ) -> list[types.CallHierarchyIncomingCall]:
    return [types.CallHierarchyIncomingCall(from_=other, from_ranges=ranges)
            for other, ranges in _calls(ls, params.item, incoming)]


@safe(list)
def outgoing_calls(ls: FuseServer, params: types.CallHierarchyOutgoingCallsParams
                   ) -> list[types.CallHierarchyOutgoingCall]:
    return [types.CallHierarchyOutgoingCall(to=other, from_ranges=ranges)
            for other, ranges in _calls(ls, params.item, outgoing)]


FEATURES = (
    Feature(types.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY, prepare),
    Feature(types.CALL_HIERARCHY_INCOMING_CALLS, incoming_calls),
    Feature(types.CALL_HIERARCHY_OUTGOING_CALLS, outgoing_calls),
)
