"""Top-level symbols of source files, parsed with the tree-sitter grammars shipped in wheels."""

from __future__ import annotations

import functools
import importlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath

from tree_sitter import Language, Node, Parser

log = logging.getLogger(__name__)

# Suffix -> grammar. Only per-language wheels that ship their compiled grammar are used:
# tree-sitter-language-pack downloads grammars at run time, which fails offline.
_GRAMMAR_OF_SUFFIX: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
}
# Grammar -> (module, function returning the language pointer), imported on first use.
_LOADERS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
}
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
}
# Nodes that only wrap a definition (`export ...`, `@decorator ...`, `declare ...`).
_WRAPPERS = {"decorated_definition", "export_statement", "ambient_declaration"}
_FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "generator_function"}
_CLASS_VALUES = {"class", "class_expression"}
_DECLARATIONS = {"lexical_declaration", "variable_declaration"}


def grammar_for(path: str) -> str | None:
    """The grammar that parses a file, by suffix; None for a language without one."""
    return _GRAMMAR_OF_SUFFIX.get(PurePosixPath(path).suffix.lower())


@functools.cache
def _language(grammar: str) -> Language | None:
    """Loads a grammar once; a missing wheel is logged once and yields no symbols."""
    module_name, function = _LOADERS[grammar]
    try:
        module = importlib.import_module(module_name)
        return Language(getattr(module, function)())
    except (ImportError, AttributeError, ValueError) as exc:
        log.warning(
            "no %s symbols in codebase maps: %s (pip install %s)", grammar, exc, module_name
        )
        return None


def _parser(grammar: str) -> Parser | None:
    # A new parser per file: it costs under a microsecond, and a Parser is not safe to
    # share between the server's threads.
    language = _language(grammar)
    return Parser(language) if language is not None else None


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
    parser = _parser(grammar) if grammar is not None else None
    if grammar is None or parser is None:
        return ()
    try:
        root = parser.parse(source).root_node
        found = [s for child in root.named_children for s in _symbols(grammar, child)]
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
