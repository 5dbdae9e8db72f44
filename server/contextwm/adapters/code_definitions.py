"""Where a source file's definitions begin and end, nested ones included, from tree-sitter.

A top-level definition is what the codebase map lists (code_symbols decides). Inside one,
a nested definition is anchored at the statement or member that holds it, a direct child
of a body (a block, a class body, a declaration list): `const f = () => {...};` spans the
whole declaration, so cutting at a child's boundary never cuts a statement in two.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from tree_sitter import Node, Query, QueryCursor, Tree

from contextwm.adapters.code_symbols import is_definition, top_level_nodes
from contextwm.adapters.grammars import grammar_for, language, parser_for, wheel_of
from contextwm.domain.workspace_files import CodeDefinition, FileDefinitions

log = logging.getLogger(__name__)

_JS_NESTED = (
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "method_definition",
    "arrow_function",
    "function_expression",
    "function",
    "generator_function",
    "class",
)
_TS_NESTED = (
    *_JS_NESTED,
    "abstract_class_declaration",
    "interface_declaration",
    "enum_declaration",
    "internal_module",
    "module",
)
_C_NESTED = ("function_definition", "struct_specifier", "union_specifier", "enum_specifier")
# Grammar -> node types of the definitions found inside others. Types a grammar version
# does not know are left out when its query is built.
_NESTED: dict[str, tuple[str, ...]] = {
    "python": ("function_definition", "class_definition"),
    "javascript": _JS_NESTED,
    "typescript": _TS_NESTED,
    "tsx": _TS_NESTED,
    "go": ("function_declaration", "method_declaration", "func_literal", "type_declaration"),
    "rust": (
        "function_item",
        "function_signature_item",
        "impl_item",
        "struct_item",
        "enum_item",
        "union_item",
        "trait_item",
        "mod_item",
        "macro_definition",
        "closure_expression",
    ),
    "java": (
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "annotation_type_declaration",
        "method_declaration",
        "constructor_declaration",
        "compact_constructor_declaration",
        "static_initializer",
        "lambda_expression",
    ),
    "c": _C_NESTED,
    "cpp": (*_C_NESTED, "class_specifier", "namespace_definition", "lambda_expression"),
}
# C and C++ type specifiers define only with a body: `struct point p;` merely uses one.
_NEEDS_BODY = {"struct_specifier", "union_specifier", "enum_specifier", "class_specifier"}
# Bodies: nodes whose children are statements or members.
_BODIES = frozenset(
    {
        "block",  # Python, Rust, Java
        "statement_block",  # JavaScript, TypeScript
        "class_body",
        "interface_body",
        "enum_body_declarations",
        "constructor_body",
        "statement_list",  # Go
        "declaration_list",  # Rust impl/trait/mod, C++ namespace and extern "C"
        "compound_statement",  # C, C++
        "field_declaration_list",
    }
)
# Go's `block` holds one statement_list, which holds the statements.
_GO_BODIES = _BODIES - {"block"}
# What directly above a definition belongs to it: comments, doc comments, Rust attributes
# and TypeScript decorators (Python's and Java's are inside the definition's own node).
_LEADING = {"comment", "line_comment", "block_comment", "attribute_item", "decorator"}
# Nodes that wrap the definition that names them.
_WRAPPERS = {
    "decorated_definition": "definition",
    "export_statement": "declaration",
    "template_declaration": "",
    "ambient_declaration": "",
    "expression_statement": "",
}
# Nodes whose first named child (a reference's last) holds the name they declare.
_NAMING_WRAPPERS = {
    "lexical_declaration",
    "variable_declaration",
    "type_declaration",
    "expression_list",
    "reference_declarator",
}
# Over this share of a file's lines inside syntax errors, the parse is not worth using.
_MAX_ERROR_SHARE = 0.5


def find_definitions(path: str, text: str) -> FileDefinitions:
    """The top-level definitions of a source file, each with the ones nested in it.

    Args:
        path: the file's name; its suffix chooses the grammar (see grammars.grammar_for).
        text: the file's text; lines end at "\\n" only, as tree-sitter counts rows.

    Returns:
        The definitions, or none with `problem` saying why: no parser for the suffix, the
        grammar's wheel is missing, over half the file's lines are syntax errors (a few
        errors are fine: tree-sitter recovers and the rest of the file still parses), or
        the parser failed. Never raises.
    """
    grammar = grammar_for(path)
    if grammar is None:
        suffix = PurePosixPath(path).suffix
        what = f"{suffix} files" if suffix else f"files without a suffix like {path!r}"
        return FileDefinitions("", (), f"no parser for {what}")
    parser = parser_for(grammar)
    query = _query(grammar)
    if parser is None or query is None:
        return FileDefinitions(
            grammar, (), f"the {grammar} parser is not installed (pip install {wheel_of(grammar)})"
        )
    name = PurePosixPath(path).name
    try:
        tree = parser.parse(text.encode("utf-8", errors="replace"))
        return _parsed(grammar, tree, query, text, name)
    except Exception:  # one odd file must not fail a read; the reason goes to the log
        log.warning("could not parse %s for definitions", path, exc_info=True)
        return FileDefinitions(grammar, (), f"the {grammar} parser failed on {name}")


def _parsed(grammar: str, tree: Tree, query: Query, text: str, name: str) -> FileDefinitions:
    """The definitions in a parse tree, unless syntax errors cover most of the file."""
    root = tree.root_node
    total = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if root.has_error and _error_lines(grammar, root) > _MAX_ERROR_SHARE * total:
        return FileDefinitions(
            grammar,
            (),
            f"the {grammar} parser could not make sense of {name}: over half of its lines"
            " are syntax errors",
        )
    tops = [n for n in top_level_nodes(grammar, root) if is_definition(grammar, n)]
    if not tops:
        return FileDefinitions(grammar, ())
    captured = QueryCursor(query).captures(root).get("definition", [])
    return FileDefinitions(grammar, _tree(grammar, tops, captured, total))


class TreeSitterDefinitions:
    """The DefinitionParser of the tree-sitter grammars shipped in wheels."""

    def definitions(self, path: str, text: str) -> FileDefinitions:
        return find_definitions(path, text)


@functools.cache
def _query(grammar: str) -> Query | None:
    """One pattern capturing every nested definition type the grammar knows; built once,
    and shared by the threads, since cursors only read it."""
    lang = language(grammar)
    if lang is None:
        return None
    kinds = [k for k in _NESTED[grammar] if lang.id_for_node_kind(k, True)]
    return Query(lang, " ".join(f"({k}) @definition" for k in kinds))


@functools.cache
def _error_query(grammar: str) -> Query | None:
    lang = language(grammar)
    return Query(lang, "(ERROR) @error") if lang is not None else None


def _error_lines(grammar: str, root: Node) -> int:
    """How many lines syntax errors cover (nested errors counted once)."""
    query = _error_query(grammar)
    errors = QueryCursor(query).captures(root).get("error", []) if query is not None else []
    spans = sorted((n.start_point.row, _last_row(n)) for n in errors)
    covered, reach = 0, -1
    for first, last in spans:
        first = max(first, reach + 1)
        if last >= first:
            covered += last - first + 1
            reach = last
    return covered


def _last_row(node: Node) -> int:
    """The 0-based row of a node's last character: a node ending at column 0 ended with the
    newline of the row before."""
    end = node.end_point
    return max(node.start_point.row, end.row - 1 if end.column == 0 else end.row)


def _first_row(node: Node) -> int:
    """The 0-based row where a node starts, moved up over the comments and attributes
    directly above it: each on lines of its own, with no blank line in between."""
    row = node.start_point.row
    above = node.prev_sibling
    while above is not None and above.type in _LEADING and not _is_inner(above):
        if _last_row(above) < row - 1:
            break  # a blank line apart: a comment on the section, not on this definition
        before = above.prev_sibling
        if before is not None and _last_row(before) >= above.start_point.row:
            break  # it ends a line of code (`x = 1  # note`), it does not head this one
        row = above.start_point.row
        above = before
    return row


def _is_inner(node: Node) -> bool:
    """Rust's `//!` and `/*!` document the enclosing item, not the next one."""
    return node.text is not None and node.text[:3] in (b"//!", b"/*!")


def _anchor(node: Node, grammar: str, kinds: frozenset[str]) -> Node | None:
    """The statement or member holding a nested definition: its outermost ancestor that is
    a direct child of a body, below the definition enclosing it; None when no body lies in
    between (a default argument's lambda belongs to its function's signature)."""
    bodies = _GO_BODIES if grammar == "go" else _BODIES
    found: Node | None = None
    current = node
    parent = current.parent
    while parent is not None:
        if parent.type in bodies:
            found = current
        elif parent.type in kinds or parent.parent is None:
            break
        current, parent = parent, parent.parent
    return found


@dataclass(slots=True)
class _Draft:
    """A definition being assembled; frozen into a CodeDefinition at the end."""

    node: Node
    kind: str
    name: str
    first: int  # 1-based lines
    last: int
    children: list[_Draft] = field(default_factory=list)


def _tree(
    grammar: str, tops: list[Node], captured: Iterable[Node], total: int
) -> tuple[CodeDefinition, ...]:
    """The top-level definitions with their nested ones, nested by byte ranges."""
    kinds = frozenset(_NESTED[grammar])
    top_keys = {(n.start_byte, n.end_byte) for n in tops}
    anchors: dict[tuple[int, int], tuple[Node, Node]] = {}
    for node in sorted(captured, key=lambda n: n.start_byte):
        if node.type in _NEEDS_BODY and node.child_by_field_name("body") is None:
            continue
        anchor = _anchor(node, grammar, kinds)
        if anchor is not None:
            key = (anchor.start_byte, anchor.end_byte)
            if key not in top_keys:
                anchors.setdefault(key, (anchor, node))
    items = [(n, _unwrapped(n), True) for n in tops]
    items += [(n, definition, False) for n, definition in anchors.values()]
    items.sort(key=lambda item: (item[0].start_byte, -item[0].end_byte))
    roots: list[_Draft] = []
    stack: list[_Draft] = []
    for node, definition, top in items:
        while stack and stack[-1].node.end_byte <= node.start_byte:
            stack.pop()
        if not stack and not top:
            continue  # in a top-level statement that is no definition (`describe(() => ...)`)
        name = _name(definition) or _name(node)  # `const f = () => ...`: the arrow has none
        first, last = _first_row(node) + 1, min(_last_row(node) + 1, total)
        draft = _Draft(node, definition.type, name, first, last)
        (stack[-1].children if stack else roots).append(draft)
        stack.append(draft)
    return _frozen(roots, 1, total)


def _frozen(drafts: list[_Draft], first: int, last: int) -> tuple[CodeDefinition, ...]:
    """Sibling drafts as definitions inside first..last: clamped, in order, and two that
    share a line (`int a; int f() {...}` on one line) merged into one."""
    merged: list[_Draft] = []
    for d in sorted(drafts, key=lambda d: d.first):
        d.first, d.last = max(d.first, first), min(d.last, last)
        if d.first > d.last:
            continue
        if merged and d.first <= merged[-1].last:
            merged[-1].last = max(merged[-1].last, d.last)
            merged[-1].children.extend(d.children)
        else:
            merged.append(d)
    return tuple(
        CodeDefinition(d.kind, d.name, d.first, d.last, _frozen(d.children, d.first, d.last))
        for d in merged
    )


def _unwrapped(node: Node) -> Node:
    """The definition inside `export`, `@decorator`, `template <...>` and similar."""
    for _ in range(3):
        if node.type not in _WRAPPERS:
            break
        field_name = _WRAPPERS[node.type]
        inner = node.child_by_field_name(field_name) if field_name else None
        if inner is None:
            named = [c for c in node.named_children if c.type not in _LEADING]
            inner = named[-1] if named else None
        if inner is None:
            break
        node = inner
    return node


def _name(node: Node) -> str:
    """A best-effort label: the name a definition or declaration gives, "" when none."""
    node = _unwrapped(node)
    for _ in range(6):
        named = node.child_by_field_name("name")
        if named is not None and named.named_child_count == 0:
            return _text(named)
        inner = next(
            (
                c
                for f in ("declarator", "pattern", "left")
                if (c := node.child_by_field_name(f)) is not None
            ),
            None,
        )
        if inner is None and node.type in _NAMING_WRAPPERS and node.named_children:
            inner = node.named_children[0 if node.type != "reference_declarator" else -1]
        if inner is None:
            if node.type.endswith(("identifier", "_name")):
                return _text(node)  # the end of a C declarator: `area`, `Shape::area`, `~Shape`
            kind = node.child_by_field_name("type")  # Rust `impl S`
            return _text(kind) if kind is not None and kind.named_child_count == 0 else ""
        node = inner
    return ""


def _text(node: Node) -> str:
    return node.text.decode("utf-8", errors="replace") if node.text is not None else ""
