"""Top-level symbols of source files, parsed with the tree-sitter grammars shipped in wheels."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator

from tree_sitter import Node

from contextwm.adapters.grammars import grammar_for, parser_for

log = logging.getLogger(__name__)

_JS_KINDS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
}
_TS_KINDS = {
    **_JS_KINDS,
    "abstract_class_declaration": "class",
    "function_signature": "function",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "internal_module": "namespace",
    "module": "module",
}
# Grammar -> node type of a named top-level definition -> the keyword shown before its name.
_KINDS: dict[str, dict[str, str]] = {
    "python": {"class_definition": "class", "function_definition": "def"},
    "javascript": _JS_KINDS,
    "typescript": _TS_KINDS,
    "tsx": _TS_KINDS,
    "go": {"function_declaration": "func"},
    "rust": {
        "function_item": "fn",
        "struct_item": "struct",
        "enum_item": "enum",
        "union_item": "union",
        "trait_item": "trait",
        "type_item": "type",
        "mod_item": "mod",
        "macro_definition": "macro",
    },
    "java": {
        "class_declaration": "class",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "record_declaration": "record",
        "annotation_type_declaration": "@interface",
    },
    "c": {},
    "cpp": {},
}
# C and C++ types count only with a body: `struct point;` declares, it does not define.
_C_TYPES = {
    "struct_specifier": "struct",
    "union_specifier": "union",
    "enum_specifier": "enum",
    "class_specifier": "class",
}
# Nodes that only wrap a definition (`export ...`, `@decorator ...`, `declare ...`,
# `template <...> ...`).
_WRAPPERS = {
    "decorated_definition",
    "export_statement",
    "ambient_declaration",
    "template_declaration",
}
# C and C++ nodes whose contents are still top level: include guards and other
# conditional compilation, `extern "C" { ... }`.
_TRANSPARENT = {
    "preproc_ifdef",
    "preproc_if",
    "preproc_else",
    "preproc_elif",
    "preproc_elifdef",
    "linkage_specification",
    "declaration_list",
}
_FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "generator_function"}
_CLASS_VALUES = {"class", "class_expression"}
_DECLARATIONS = {"lexical_declaration", "variable_declaration"}


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", errors="replace")


def _go_receiver(node: Node) -> str:
    """`(r *Tree[K])` -> `Tree`, so a method shows as `func Tree.Insert`."""
    receiver = node.child_by_field_name("receiver")
    params = [c for c in receiver.named_children] if receiver is not None else []
    if not params:
        return ""
    return _text(params[0].child_by_field_name("type")).lstrip("*").split("[", 1)[0].strip()


def declarator_name(node: Node) -> str:
    """The name a C or C++ declarator declares: `*make(void)` -> `make`, `Shape::area` as is."""
    inner = node.child_by_field_name("declarator")
    while inner is not None:
        node = inner
        inner = node.child_by_field_name("declarator")
        if inner is None and node.type == "reference_declarator" and node.named_children:
            inner = node.named_children[-1]  # `&name`: the grammar gives it no field
    return _text(node)


def _symbols(grammar: str, node: Node, depth: int = 0) -> Iterator[str]:
    kinds = _KINDS[grammar]
    kind = node.type
    if kind in kinds:
        name = _text(node.child_by_field_name("name"))
        if name:
            yield f"{kinds[kind]} {name}"
    elif kind in _WRAPPERS or (kind == "expression_statement" and grammar in ("typescript", "tsx")):
        # One level of wrapping is enough for every grammar here; deeper is not top level.
        if depth == 0:
            for child in node.named_children:
                yield from _symbols(grammar, child, depth + 1)
    elif kind in _DECLARATIONS:
        # `const handler = () => ...` is how JS/TS code often defines its functions.
        for declarator in node.named_children:
            value = declarator.child_by_field_name("value")
            name = _text(declarator.child_by_field_name("name"))
            if value is not None and name and value.type in _FUNCTION_VALUES:
                yield f"function {name}"
            elif value is not None and name and value.type in _CLASS_VALUES:
                yield f"class {name}"
    elif grammar == "go" and kind == "method_declaration":
        receiver = _go_receiver(node)
        name = _text(node.child_by_field_name("name"))
        yield f"func {receiver}.{name}" if receiver else f"func {name}"
    elif grammar == "go" and kind == "type_declaration":
        for spec in node.named_children:
            if spec.type in ("type_spec", "type_alias"):
                yield f"type {_text(spec.child_by_field_name('name'))}"
    elif grammar == "rust" and kind == "impl_item":
        trait = _text(node.child_by_field_name("trait"))
        target = _text(node.child_by_field_name("type"))
        yield f"impl {trait} for {target}" if trait else f"impl {target}"
    elif grammar in ("c", "cpp"):
        yield from _c_symbols(node)


def _c_symbols(node: Node) -> Iterator[str]:
    kind = node.type
    if kind == "function_definition":
        name = declarator_name(node)
        if name:
            yield f"function {name}"
    elif kind in _C_TYPES and node.child_by_field_name("body") is not None:
        name = _text(node.child_by_field_name("name"))
        yield f"{_C_TYPES[kind]} {name}" if name else _C_TYPES[kind]
    elif kind == "type_definition":
        declarators = node.children_by_field_name("declarator")
        if declarators:
            yield f"typedef {declarator_name(declarators[0]) or _text(declarators[0])}"
    elif kind == "namespace_definition":
        name = _text(node.child_by_field_name("name"))
        yield f"namespace {name}" if name else "namespace"  # anonymous still defines


def top_level_nodes(grammar: str, root: Node) -> Iterator[Node]:
    """The nodes at a file's top level: the root's children, and for C and C++ the contents
    of include guards, `#if` blocks and `extern "C"` blocks too."""
    for child in root.named_children:
        if grammar in ("c", "cpp") and child.type in _TRANSPARENT:
            yield from top_level_nodes(grammar, child)
        else:
            yield child


def is_definition(grammar: str, node: Node) -> bool:
    """Whether a top-level node defines something the codebase map lists."""
    return next(_symbols(grammar, node), None) is not None


def top_level_symbols(path: str, source: bytes, limit: int = 20) -> tuple[str, ...]:
    """The top-level definitions of a source file, like `class Parser` or `def main`.

    Args:
        path: the file's name; its suffix chooses the grammar.
        source: the file's bytes.
        limit: at most this many symbols; more are summarised as a last `+N more`.

    Returns:
        The symbols in file order; () for an unknown language, a missing grammar or any
        parser failure (tree-sitter recovers from syntax errors, so a broken file still
        gives the definitions it can see).
    """
    grammar = grammar_for(path)
    parser = parser_for(grammar) if grammar is not None else None
    if grammar is None or parser is None:
        return ()
    try:
        root = parser.parse(source).root_node
        found = [s for node in top_level_nodes(grammar, root) for s in _symbols(grammar, node)]
    except Exception:  # a map must never fail on one file; the reason goes to the log
        log.warning("could not parse %s for symbols", path, exc_info=True)
        return ()
    if len(found) > limit:
        return (*found[:limit], f"+{len(found) - limit} more")
    return tuple(found)


class SymbolCache:
    """top_level_symbols() per file, reused while its version is unchanged; bounded LRU."""

    def __init__(self, max_entries: int) -> None:
        self._max = max_entries
        # path -> (version, symbols): one entry per path, so an edit replaces, not piles up.
        self._entries: OrderedDict[str, tuple[tuple[int, int], tuple[str, ...]]] = OrderedDict()
        self._lock = threading.Lock()  # guards _entries; parsing happens outside it

    def get(
        self, path: str, version: tuple[int, int], read: Callable[[], bytes]
    ) -> tuple[str, ...]:
        """The symbols of path at version (mtime_ns, size), parsing read() on a miss.

        Raises:
            Whatever read() raises; nothing is cached then.
        """
        with self._lock:
            cached = self._entries.get(path)
            if cached is not None and cached[0] == version:
                self._entries.move_to_end(path)
                return cached[1]
        symbols = top_level_symbols(path, read())
        with self._lock:
            self._entries[path] = (version, symbols)
            self._entries.move_to_end(path)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        return symbols
