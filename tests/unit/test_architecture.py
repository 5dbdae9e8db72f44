"""The import direction of STYLE rule 1, checked on the source with `ast` (nothing is imported).

core and ports never import grpc, the transport, the client or the adapters; within the
service only the transport imports grpc (cli.py, which hosts the client commands, excepted);
the client never imports the service package.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "server" / "contextwm"
CLIENT = ROOT / "client" / "contextwm_client"
GENERATED = CLIENT / "v1"  # the generated stubs (scripts/gen_protos)


def modules(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.py") if GENERATED not in p.parents)


def imported(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in a file, nested ones included.

    A `from x import y` yields both x and x.y, since y may be a submodule. Relative imports
    are resolved against the file's package (its path below server/ or client/).
    """
    tree = ast.parse(path.read_text(), str(path))
    source_root = next((r for r in (ROOT / "server", ROOT / "client") if r in path.parents), None)
    package = path.parent.relative_to(source_root).parts if source_root else ()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}" if base else alias.name


def matches(name: str, forbidden: str) -> bool:
    return name == forbidden or name.startswith(forbidden + ".")


def violations(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in files
        for line, name in imported(path)
        if any(matches(name, f) for f in forbidden)
    ]


def test_the_packages_exist() -> None:
    # Guards against the checks below passing vacuously after a move.
    assert len(modules(SERVER / "core")) >= 10
    assert len(modules(SERVER / "ports")) >= 4
    assert len(modules(SERVER / "transport")) >= 2
    assert len(modules(CLIENT)) >= 4


@pytest.mark.parametrize("layer", ["core", "ports"])
def test_core_and_ports_import_no_transport_client_or_adapters(layer: str) -> None:
    forbidden = ("grpc", "contextwm.transport", "contextwm_client", "contextwm.adapters")
    assert violations(modules(SERVER / layer), forbidden) == []


def test_only_transport_imports_grpc() -> None:
    others = [
        p
        for p in modules(SERVER)
        if "transport" not in p.relative_to(SERVER).parts and p.name != "cli.py"
    ]
    assert violations(others, ("grpc", "grpc_health", "grpc_reflection")) == []
    # ...and the transport really is where it happens.
    assert violations(modules(SERVER / "transport"), ("grpc",))


def test_client_never_imports_the_server() -> None:
    files = modules(CLIENT)
    assert violations(files, ("contextwm",)) == []


def test_generated_stubs_use_relative_imports() -> None:
    # protoc writes `from contextwm.v1 import ...`, which would resolve to the *service*
    # package; gen_protos rewrites it. Checked on the generated files too.
    generated = sorted(GENERATED.glob("*.py*"))
    assert generated
    assert violations(generated, ("contextwm",)) == []


def test_the_checker_sees_violations(tmp_path: Path) -> None:
    # The checker itself: nested, aliased and from-imports all count, and relative imports
    # are resolved to absolute names.
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os\n"
        "def f():\n    import grpc.aio as g\n"
        "from contextwm import transport\n"
        "from contextwm.adapters.store_sqlite import SqliteStore\n"
    )
    names = [name for _, name in imported(probe)]
    assert "grpc.aio" in names
    assert "contextwm.transport" in names
    assert "contextwm.adapters.store_sqlite" in names
    assert not any(matches(n, "grpc") for n in ["grpcio_tools", "os"])
    # A relative import inside the client's generated package resolves to the client.
    for stub in (GENERATED / "contextwm_pb2_grpc.py", GENERATED / "contextwm_pb2_grpc.pyi"):
        assert any(n.startswith("contextwm_client.v1.") for _, n in imported(stub))
