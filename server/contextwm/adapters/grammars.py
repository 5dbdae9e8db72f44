"""Which tree-sitter grammar parses a file, and each grammar loaded once from its wheel."""

from __future__ import annotations

import functools
import importlib
import logging
from pathlib import PurePosixPath

from tree_sitter import Language, Parser

log = logging.getLogger(__name__)

# Suffix -> grammar. Only per-language wheels that ship their compiled grammar are used:
# tree-sitter-language-pack downloads grammars at run time, which fails offline.
# `.h` goes to the C++ grammar: headers are shared by C and C++ code, and the C++ grammar
# parses C declarations as well, while the C grammar stops at the first class or template.
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
    ".java": "java",
    ".c": "c",
    ".h": "cpp",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
}
# Grammar -> (module, function returning the language pointer), imported on first use.
_LOADERS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
}


def grammar_for(path: str) -> str | None:
    """The grammar that parses a file, by suffix (any case); None for a language without one."""
    return _GRAMMAR_OF_SUFFIX.get(PurePosixPath(path).suffix.lower())


def wheel_of(grammar: str) -> str:
    """The pip package that ships a grammar, e.g. `tree-sitter-java`."""
    return _LOADERS[grammar][0].replace("_", "-")


@functools.cache
def language(grammar: str) -> Language | None:
    """A grammar, loaded once; a missing wheel is logged once and yields None.

    Raises:
        KeyError: a grammar grammar_for() never returns.
    """
    module_name, function = _LOADERS[grammar]
    try:
        module = importlib.import_module(module_name)
        return Language(getattr(module, function)())
    except (ImportError, AttributeError, ValueError) as exc:
        log.warning(
            "no %s parser, so no symbols in codebase maps and no definition chunks: %s"
            " (pip install %s)",
            grammar,
            exc,
            wheel_of(grammar),
        )
        return None


def parser_for(grammar: str) -> Parser | None:
    """A new parser of a grammar; None when its wheel is missing.

    A new parser per file: it costs under a microsecond, and a Parser is not safe to share
    between the server's threads.
    """
    lang = language(grammar)
    return Parser(lang) if lang is not None else None
