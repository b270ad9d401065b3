"""The grammar's parse tables: lark's analysis of grammar.lark as plain data.

lark compiles the grammar: its terminals, rules and LALR(1) parse table.  What
the engine needs of that work is plain data (`build_tables`), kept in
grammar_tables.json beside the grammar, so that checking a file does not import
lark at all (with what it imports, a good part of a short run's start-up).
`python -c "import fuse_lang.front.tables as t; t.write_tables()"` writes that
file again after the grammar changed; until then the tables are built with lark
at start-up, and a test fails to say the file is stale.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")
TABLES_PATH = Path(__file__).with_name("grammar_tables.json")
TABLES_FORMAT = 4  # raise when the layout of build_tables' result changes
GRAMMAR = GRAMMAR_PATH.read_text(encoding="utf-8")


def build_tables(grammar: str, start: str) -> dict[str, Any]:
    """lark's analysis of `grammar` as plain data (JSON-able): the terminals in the
    order lark's lexer tries them, the LALR(1) table for `start`, and for each rule
    how its reduction shapes its children (see _recipe)."""
    from lark import Lark  # here: only building the tables needs lark
    from lark.parsers.lalr_analysis import Shift

    lark = Lark(grammar, parser="lalr", lexer="basic", start=[start, "lexer_only"])
    terminals = sorted(lark.lexer_conf.terminals, key=lambda t: (
        -t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
    table = lark.parser.parser.parser.parse_table
    placeholders = lark.options.maybe_placeholders
    # lark numbers states and orders rules differently from run to run: number
    # them in the order met from the start state, so the same grammar always
    # gives the same data (and grammar_tables.json can be compared)
    order = [table.start_states[start]]
    number = {order[0]: 0}
    for state in order:  # grows as states are met
        for _symbol, (action, arg) in sorted(table.states[state].items()):
            if action is Shift and arg not in number:
                number[arg] = len(order)
                order.append(arg)
    rules: list[Any] = []
    rule_number: dict[Any, int] = {}
    states = []
    for state in order:
        actions = []
        for symbol, (action, arg) in sorted(table.states[state].items()):
            if action is Shift:
                actions.append([symbol, True, number[arg]])
                continue
            if arg not in rule_number:
                rule_number[arg] = len(rules)
                rules.append([arg.origin.name, len(arg.expansion), _recipe(arg, placeholders)])
            actions.append([symbol, False, rule_number[arg]])
        states.append(actions)
    return {"format": TABLES_FORMAT, "grammar": grammar, "start": start,
            "terminals": [[t.name, t.pattern.to_regexp()] for t in terminals],
            "ignore": sorted(lark.lexer_conf.ignore),
            "start_state": 0, "end_state": number[table.end_states[start]],
            "rules": rules, "states": states}


def load_tables(grammar: str, start: str = "start") -> dict[str, Any]:
    """The tables for `grammar`: grammar_tables.json's when it was made from this
    grammar, else built with lark now."""
    try:
        tables = json.loads(TABLES_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        tables = None
    if isinstance(tables, dict) and tables.get("format") == TABLES_FORMAT \
            and tables.get("grammar") == grammar and tables.get("start") == start:
        return tables
    return build_tables(grammar, start)


def write_tables() -> Path:
    """Build the tables of grammar.lark and write grammar_tables.json (atomically)."""
    tables = build_tables(GRAMMAR_PATH.read_text(encoding="utf-8"), "start")
    temporary = TABLES_PATH.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(tables, separators=(",", ":")) + "\n", encoding="utf-8")
    temporary.replace(TABLES_PATH)
    return TABLES_PATH


def _recipe(rule: Any, placeholders: bool) -> list[Any] | None:
    """How a reduction by `rule` makes its value from its children, as lark's
    parse-tree builder would (lark.parse_tree_builder): children filtered and
    expanded, then the rule's method, or for a `?rule` with one child left, that
    child.  [method name, items (None when they are the children as they are),
    expand1, is a `_rule`], where each item is [child number, spliced] or None
    (a `[item]` left out); None for a unit `?rule` (A -> B)."""
    expansion = rule.expansion
    options = rule.options
    expand1 = bool(options.expand1 and not rule.alias)
    if expand1 and len(expansion) == 1 and not expansion[0].is_term:
        return None
    name = rule.alias or options.template_source or rule.origin.name
    # How many Nones go before each child (and after the last): `[item]` left out.
    empty = options.empty_indices if placeholders else ()
    if empty:
        nones = [len(ones) for ones in "".join(str(int(b)) for b in empty).split("0")]
    else:
        nones = [0] * (len(expansion) + 1)
    items: list[list[Any] | None] = []
    pending = 0
    for i, sym in enumerate(expansion):
        pending += nones[i]
        if options.keep_all_tokens or not (sym.is_term and sym.filter_out):
            items += [None] * pending
            pending = 0
            # a `_rule`'s value is the list of its children, spliced into its parent's
            items.append([i, not sym.is_term and sym.name.startswith("_")])
    items += [None] * (pending + nones[len(expansion)])
    as_is = items == [[i, False] for i in range(len(expansion))] and not expand1
    return [str(name), None if as_is else items, expand1, rule.origin.name.startswith("_")]


@functools.cache
def grammar_tables() -> dict[str, Any]:
    """The tables of grammar.lark (see load_tables), read once; not to be changed."""
    return load_tables(GRAMMAR)

