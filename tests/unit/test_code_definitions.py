"""Tests for contextwm.adapters.code_definitions: definition boundaries from the real grammars."""

from __future__ import annotations

import pytest
from code_samples import SAMPLES
from contextwm.adapters import code_definitions
from contextwm.adapters.code_definitions import TreeSitterDefinitions, find_definitions
from contextwm.adapters.code_symbols import top_level_symbols
from contextwm.adapters.grammars import grammar_for
from contextwm.domain.workspace_files import CodeDefinition
from contextwm.ports.code_definitions import DefinitionParser

# (kind, name, first line, last line, children), as find_definitions gives them.
Tree = tuple[str, str, int, int, tuple["Tree", ...]]


def tree(definitions: tuple[CodeDefinition, ...]) -> tuple[Tree, ...]:
    return tuple((d.kind, d.name, d.first_line, d.last_line, tree(d.children)) for d in definitions)


# Each top-level definition starts at the comments, decorators and attributes right above
# it; a nested one spans the statement holding it (`const grow = (r) => r * k;`).
EXPECTED: dict[str, tuple[Tree, ...]] = {
    "circle.py": (
        (
            "class_definition",
            "Circle",
            5,  # `# A shape with an area.`, then `@dataclass`
            20,
            (
                ("function_definition", "area", 12, 13, ()),
                (
                    "function_definition",
                    "scaled",
                    15,  # `# Scaled copies.`
                    20,
                    (("function_definition", "grow", 17, 18, ()),),
                ),
            ),
        ),
        ("function_definition", "total", 23, 24, ()),
        ("function_definition", "report", 27, 32, (("function_definition", "line", 28, 29, ()),)),
    ),
    "circle.js": (
        (
            "class_declaration",
            "Circle",
            4,  # the JSDoc comment above `export class`
            18,
            (
                ("method_definition", "constructor", 6, 8, ()),
                ("method_definition", "area", 10, 12, ()),
                ("method_definition", "scaled", 14, 17, (("arrow_function", "grow", 15, 15, ()),)),
            ),
        ),
        (
            "function_declaration",
            "report",
            20,
            25,
            (("function_declaration", "line", 21, 23, ()),),
        ),
        ("lexical_declaration", "total", 27, 28, ()),
    ),
    "shapes.ts": (
        ("interface_declaration", "Shape", 3, 5, ()),
        ("enum_declaration", "Kind", 7, 10, ()),
        (
            "class_declaration",
            "Circle",
            12,  # the comment, then the decorator
            25,
            (
                ("method_definition", "constructor", 15, 15, ()),
                ("method_definition", "area", 17, 19, ()),
                ("method_definition", "scaled", 21, 24, (("arrow_function", "grow", 22, 22, ()),)),
            ),
        ),
        (
            "internal_module",
            "Report",
            27,
            31,
            (("function_declaration", "lines", 28, 30, (("arrow_function", "", 29, 29, ()),)),),
        ),
    ),
    "Counter.tsx": (
        ("type_alias_declaration", "Props", 3, 3, ()),
        (
            "function_declaration",
            "Counter",
            5,
            19,
            (
                ("arrow_function", "increment", 7, 9, ()),
                ("function_declaration", "reset", 10, 12, ()),
            ),
        ),
        ("lexical_declaration", "Label", 21, 21, ()),
    ),
    "tree.go": (
        ("type_declaration", "Tree", 5, 8, ()),
        ("method_declaration", "Insert", 10, 19, (("func_literal", "less", 12, 14, ()),)),
        ("method_declaration", "Len", 21, 21, ()),
        ("function_declaration", "New", 23, 29, ()),
    ),
    "stack.rs": (
        ("struct_item", "Stack", 4, 8, ()),  # the doc comment and #[derive], not `//!`
        (
            "impl_item",
            "Stack",
            10,
            20,
            (
                ("function_item", "push", 11, 14, ()),
                ("function_item", "sum_if", 16, 19, (("closure_expression", "keep", 17, 17, ()),)),
            ),
        ),
        ("impl_item", "Stack", 22, 26, (("function_item", "fmt", 23, 25, ()),)),
        ("mod_item", "tests", 28, 36, (("function_item", "pushes", 30, 35, ()),)),
    ),
    "Shapes.java": (
        (
            "class_declaration",
            "Circle",
            5,  # the Javadoc; the annotation is inside the class's own node
            29,
            (
                ("constructor_declaration", "Circle", 10, 12, ()),
                ("method_declaration", "area", 14, 17, ()),
                ("method_declaration", "total", 19, 24, (("lambda_expression", "f", 20, 22, ()),)),
                (
                    "class_declaration",
                    "Unit",
                    26,
                    28,
                    (("constructor_declaration", "Unit", 27, 27, ()),),
                ),
            ),
        ),
        ("interface_declaration", "Shape", 31, 33, (("method_declaration", "area", 32, 32, ()),)),
    ),
    "stack.c": (
        ("struct_specifier", "stack", 3, 7, ()),
        ("type_definition", "stack_t", 9, 9, ()),
        ("function_definition", "push", 11, 15, ()),
        ("function_definition", "sum", 17, 23, ()),
    ),
    "shapes.cpp": (
        (
            "namespace_definition",
            "shapes",
            3,
            28,  # `}  // namespace shapes`
            (
                (
                    "class_specifier",
                    "Circle",
                    5,
                    19,
                    (
                        ("function_definition", "Circle", 8, 8, ()),
                        ("function_definition", "area", 10, 10, ()),
                        (
                            "function_definition",
                            "scaled_area",
                            12,
                            15,
                            (("lambda_expression", "grow", 13, 13, ()),),
                        ),
                    ),
                ),
                ("function_definition", "total", 21, 26, ()),  # from `template <typename T>`
            ),
        ),
        ("function_definition", "main", 30, 33, ()),
    ),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_definitions_of_each_language(name: str) -> None:
    found = find_definitions(name, SAMPLES[name])
    assert found.problem == ""
    assert found.language == grammar_for(name)
    assert tree(found.definitions) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_top_level_definitions_are_the_mapped_symbols(name: str) -> None:
    # One notion of "top level" for the codebase map and for chunks.
    found = find_definitions(name, SAMPLES[name]).definitions
    symbols = top_level_symbols(name, SAMPLES[name].encode(), limit=100)
    assert len(found) == len(symbols)
    for d, symbol in zip(found, symbols, strict=True):
        assert d.name in symbol


def test_symbols_of_java_c_and_cpp() -> None:
    assert top_level_symbols("Shapes.java", SAMPLES["Shapes.java"].encode()) == (
        "class Circle",
        "interface Shape",
    )
    assert top_level_symbols("stack.c", SAMPLES["stack.c"].encode()) == (
        "struct stack",
        "typedef stack_t",
        "function push",
        "function sum",
    )
    assert top_level_symbols("shapes.cpp", SAMPLES["shapes.cpp"].encode()) == (
        "namespace shapes",
        "function main",
    )


def test_headers_parse_as_cpp_through_include_guards() -> None:
    header = (
        "#ifndef SHAPES_H\n"
        "#define SHAPES_H\n"
        "\n"
        "// A point.\n"
        "struct point { int x, y; };\n"
        "\n"
        "class Circle {\n"
        " public:\n"
        "  double area() const;\n"
        "};\n"
        "\n"
        'extern "C" {\n'
        "int version(void) { return 1; }\n"
        "}\n"
        "#endif\n"
    )
    assert grammar_for("shapes.h") == grammar_for("shapes.hpp") == "cpp"
    assert tree(find_definitions("shapes.h", header).definitions) == (
        ("struct_specifier", "point", 4, 5, ()),
        ("class_specifier", "Circle", 7, 10, ()),
        ("function_definition", "version", 13, 13, ()),
    )
    assert top_level_symbols("shapes.h", header.encode()) == (
        "struct point",
        "class Circle",
        "function version",
    )


def test_comments_count_only_directly_above_and_on_their_own_lines() -> None:
    source = (
        "# a section heading\n"  # 1
        "\n"  # 2
        "def a():\n"  # 3
        "    pass\n"  # 4
        "x = 1  # a note on x\n"  # 5
        "def b():\n"  # 6
        "    pass\n"  # 7
        "# about c\n"  # 8
        "# more about c\n"  # 9
        "def c():\n"  # 10
        "    pass\n"  # 11
    )
    found = tree(find_definitions("m.py", source).definitions)
    assert [(name, first, last) for _, name, first, last, _ in found] == [
        ("a", 3, 4),
        ("b", 6, 7),
        ("c", 8, 11),
    ]


def test_nested_definitions_are_anchored_at_the_statement_holding_them() -> None:
    source = (
        "def outer(items):\n"  # 1
        "    if items:\n"  # 2
        "        def inner():\n"  # 3
        "            return 1\n"  # 4
        "    def key(item, fallback=lambda: 0):\n"  # 5: a lambda in a signature is not one
        "        return item\n"  # 6
        "    return sorted(items, key=key)\n"  # 7
    )
    (outer,) = find_definitions("m.py", source).definitions
    assert tree(outer.children) == (
        ("function_definition", "inner", 2, 4, ()),  # the `if` holding it
        ("function_definition", "key", 5, 6, ()),
    )


def test_definitions_sharing_a_line_are_one() -> None:
    source = "int a(void) { return 1; } int b(void) { return 2; }\nint c(void) { return 3; }\n"
    assert [
        (d.name, d.first_line, d.last_line) for d in find_definitions("x.c", source).definitions
    ] == [
        ("a", 1, 1),
        ("c", 2, 2),
    ]


def test_files_without_a_parser_say_why() -> None:
    assert find_definitions("notes.md", "# def main\n").problem == "no parser for .md files"
    assert find_definitions("Makefile", "all:\n").problem == (
        "no parser for files without a suffix like 'Makefile'"
    )
    assert find_definitions("notes.md", "# def main\n").definitions == ()


def test_a_file_that_is_mostly_syntax_errors_is_not_used() -> None:
    garbage = "".join(f"}} ) {i} ]] ((( def\n" for i in range(20))
    found = find_definitions("broken.py", garbage)
    assert found.definitions == ()
    assert found.problem == (
        "the python parser could not make sense of broken.py: over half of its lines are"
        " syntax errors"
    )
    # A few errors are recovered from: the rest of the file still has its definitions.
    found = find_definitions("m.py", "def ok():\n    pass\n\nclass (((\n\ndef fine():\n    pass\n")
    assert found.problem == ""
    assert [d.name for d in found.definitions][-1] == "fine"


def test_a_missing_grammar_or_a_failing_parser_is_a_problem_not_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(code_definitions, "parser_for", lambda grammar: None)
    assert find_definitions("A.java", SAMPLES["Shapes.java"]).problem == (
        "the java parser is not installed (pip install tree-sitter-java)"
    )
    monkeypatch.undo()

    def broken(*args: object) -> object:
        raise RuntimeError("a bug")

    monkeypatch.setattr(code_definitions, "_tree", broken)
    found = find_definitions("src/m.py", SAMPLES["circle.py"])
    assert (found.definitions, found.problem) == ((), "the python parser failed on m.py")


def test_code_without_definitions_has_none_and_no_problem() -> None:
    found = find_definitions("script.py", "import os\nprint(os.getcwd())\n")
    assert found == type(found)("python", (), "")


def test_the_adapter_meets_the_port() -> None:
    parser: DefinitionParser = TreeSitterDefinitions()
    assert parser.definitions("circle.py", SAMPLES["circle.py"]) == find_definitions(
        "circle.py", SAMPLES["circle.py"]
    )
