"""The import direction between the service's layers, checked on the source with `ast`
(nothing is imported).

The domain imports nothing else of ours and the ports only the domain; the feature packages
and ports never import grpc, the transport, the client, the adapters or the metrics (only
the observability package imports prometheus_client), and each feature imports only the
features it is allowed to, never another package's private names; only the two tracing
modules import OpenTelemetry, and nothing imports them at its top (a server without tracing
loads none of it); the transport never touches SQLite, FAISS or the adapters, and keeps each
feature's RPCs and converters in one package of its own, below the shared wiring; within
the service only the transport imports grpc (the cli package, which hosts the client
commands, excepted); the datadir package, which checks data directories offline, imports no
feature package; the access package's tokens and key service import only the domain and the
ports; the MCP server imports only the client of the service; the client never imports the
service package. The store is used by its role ports, the whole of it only where it is held,
implemented or checked; every method of the SQLite store belongs to one role (read off the
classes: the one check that imports).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

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


# The feature packages and the domain they share: the service's logic, free of transport.
CORE = (
    "domain",
    "window",
    "llm_context",
    "retrieval",
    "budgets",
    "agent_loop",
    "conversations",
    "indexing",
    "reembedding",
    "retention",
    "erasure",
    "workspace_files",
    "tool_availability",
    "transfer",
)


def test_the_packages_exist() -> None:
    # Guards against the checks below passing vacuously after a move.
    for package in CORE:
        assert len(modules(SERVER / package)) >= 2, package
    assert len(modules(SERVER / "ports")) >= 4
    assert len(modules(SERVER / "transport")) >= 2
    assert len(modules(SERVER / "observability")) >= 3
    assert len(modules(CLIENT)) >= 4


@pytest.mark.parametrize("layer", [*CORE, "ports"])
def test_core_and_ports_import_no_transport_client_or_adapters(layer: str) -> None:
    forbidden = (
        "grpc",
        "contextwm.transport",
        "contextwm_client",
        "contextwm.adapters",
        "contextwm.observability",
        "prometheus_client",
        "opentelemetry",
    )
    assert violations(modules(SERVER / layer), forbidden) == []


def test_only_the_observability_package_imports_prometheus_client() -> None:
    # The metrics are an adapter: the core keeps plain counters, which the observability
    # package reads at scrape time; the transport hands it each call through a callback.
    others = [p for p in modules(SERVER) if p.relative_to(SERVER).parts[0] != "observability"]
    assert violations(others, ("prometheus_client",)) == []
    assert violations(modules(SERVER / "observability"), ("prometheus_client",))


# Where OpenTelemetry may be imported: the SDK's set-up and the interceptor that makes the
# spans, each loaded only when tracing is on (anywhere else, a server without tracing would
# load it too).
TRACING = {SERVER / "observability" / "tracing.py", SERVER / "transport" / "tracing.py"}


def runtime_imports(path: Path) -> Iterator[tuple[int, str]]:
    """The modules a file imports when it runs: those under `if TYPE_CHECKING:` (names for
    annotations only) left out."""
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for statement in node.body
        for inner in ast.walk(statement)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module


def test_only_the_tracing_modules_import_opentelemetry() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in modules(SERVER)
        if path not in TRACING
        for line, name in runtime_imports(path)
        if matches(name, "opentelemetry")
    ]
    assert found == []
    for path in TRACING:
        assert violations([path], ("opentelemetry",)), path


def test_the_tracing_modules_are_imported_only_where_tracing_is_switched_on() -> None:
    # Nested imports (in code that runs when tracing is on, or under TYPE_CHECKING) are how
    # they are reached; one at a module's top would load OpenTelemetry into every server.
    names = ("contextwm.observability.tracing", "contextwm.transport.tracing")
    for path in modules(SERVER):
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names if a.name.startswith(names)]
            elif isinstance(node, ast.ImportFrom):
                found = [node.module or ""] if (node.module or "").startswith(names) else []
            else:
                continue
            assert found == [], f"{path.relative_to(ROOT)}:{node.lineno} imports {found}"


def ours(name: str) -> str | None:
    """The top-level part of the service a module name belongs to, if it is ours."""
    parts = name.split(".")
    return parts[1] if parts[0] == "contextwm" and len(parts) > 1 else None


def reached(package: str) -> dict[str, set[str]]:
    """Per file of a package, the other parts of the service it imports."""
    return {
        str(path.relative_to(ROOT)): {
            p for _, name in imported(path) if (p := ours(name)) not in (None, package)
        }
        for path in modules(SERVER / package)
    }


def test_the_domain_imports_nothing_else_of_ours() -> None:
    assert {f: r for f, r in reached("domain").items() if r} == {}


def test_ports_import_only_the_domain() -> None:
    assert {f: r - {"domain"} for f, r in reached("ports").items() if r - {"domain"}} == {}


def test_the_data_directory_package_only_reads_files() -> None:
    # datadir/ guards and checks a data directory through the adapters, with no server
    # running: `contextwm check` must work without the engine, the model or a network. So
    # it imports neither the feature packages (the domain's vocabulary excepted) nor the
    # transport, grpc or the client.
    assert len(modules(SERVER / "datadir")) >= 4
    forbidden = (
        "grpc",
        "contextwm_client",
        "contextwm.transport",
        "contextwm.app",
        *(f"contextwm.{package}" for package in CORE if package != "domain"),
    )
    assert violations(modules(SERVER / "datadir"), forbidden) == []


def test_the_access_package_is_core_logic_but_for_its_offline_command() -> None:
    # Tokens and the key service reach the keys only through the key store port, so that the
    # transport and the command line can both use them; access/cli.py is an entry point that
    # opens a store itself (offline, as `contextwm check` does), and stays free of grpc.
    found = {
        f: r - {"domain", "ports"}
        for f, r in reached("access").items()
        if not f.endswith("access/cli.py") and r - {"domain", "ports"}
    }
    assert len(modules(SERVER / "access")) >= 4
    assert found == {}
    forbidden = ("grpc", "contextwm.transport", "contextwm.app")
    assert violations(modules(SERVER / "access"), forbidden) == []


def test_the_transport_never_touches_storage_or_indexes() -> None:
    forbidden = ("contextwm.adapters", "sqlite3", "faiss")
    assert violations(modules(SERVER / "transport"), forbidden) == []


# The transport's shared modules, beside one package per feature (its rpcs.py and convert.py).
TRANSPORT = SERVER / "transport"
TRANSPORT_SHARED = {
    "__init__",
    "access",
    "interceptors",
    "readiness",
    "server",
    "servicer",
    "store_probe",
    "timestamps",
    "tracing",
}


def test_the_transport_is_grouped_by_feature() -> None:
    # A new module at the top of the transport is a decision: a feature's RPCs and converters
    # belong in its package, where a newcomer finds them together.
    assert {p.stem for p in TRANSPORT.glob("*.py")} == TRANSPORT_SHARED
    features = sorted(p for p in TRANSPORT.iterdir() if (p / "__init__.py").is_file())
    assert len(features) >= 10
    for feature in features:
        names = {p.name for p in feature.glob("*.py")} - {"__init__.py"}
        assert names and names <= {"rpcs.py", "convert.py"}, feature.name
    files = [p for feature in features for p in modules(feature)]
    # The wiring composes the features' mixins, never the reverse.
    wiring = ("servicer", "server", "interceptors", "readiness", "store_probe", "tracing")
    assert violations(files, tuple(f"contextwm.transport.{m}" for m in wiring)) == []
    # Converters only translate messages: the calls and their contexts stay in rpcs.py.
    converters = [p for p in files if p.name == "convert.py"]
    assert violations(converters, ("grpc", "contextwm.transport.access")) == []


# Which parts each feature package may import, besides the domain, ports and lru: one way,
# from the calls down to the pure logic. What is not listed is refused, so a new dependency
# between features is a decision, not an accident.
ALLOWED = {
    "window": set(),
    "llm_context": set(),
    "conversations": {"window", "llm_context"},
    "indexing": {"conversations"},
    "agent_loop": {"conversations", "llm_context", "window"},
    "retrieval": {"conversations", "window"},
    "budgets": {"retrieval", "conversations", "window"},
    "reembedding": {"conversations"},
    "retention": {"conversations"},
    "erasure": {"conversations", "llm_context"},
    "workspace_files": {"conversations"},
    "tool_availability": {"conversations", "workspace_files"},
    "transfer": {"conversations"},
}


def test_feature_dependencies_have_no_cycle() -> None:
    def reaches(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in ALLOWED.get(todo.pop(), set()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    assert [p for p in ALLOWED if p in reaches(p)] == []


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_feature_packages_import_only_what_they_are_allowed(package: str) -> None:
    allowed = ALLOWED[package] | {"domain", "ports", "lru"}
    assert {f: r - allowed for f, r in reached(package).items() if r - allowed} == {}


# The enhanced context's layouts: each is a strategy over retrieval/pipeline.py, which alone
# owns the headings, the line format, exact-fit trimming and the token account.
PIPELINE = SERVER / "retrieval" / "pipeline.py"
LAYOUTS = (
    SERVER / "retrieval" / "relevant_assembly.py",
    SERVER / "retrieval" / "split_assembly.py",
    SERVER / "budgets" / "assembly.py",
)
LAYOUT_METHODS = {"pack", "sections", "drop_weakest", "omitted"}


def test_every_layout_is_a_strategy_over_the_one_pipeline() -> None:
    for path in LAYOUTS:
        tree = ast.parse(path.read_text(), str(path))
        names = {name for _, name in imported(path)}
        assert "contextwm.retrieval.pipeline.assemble" in names, path.name
        layouts = [
            node
            for node in tree.body
            if isinstance(node, ast.ClassDef)
            and {f.name for f in node.body if isinstance(f, ast.FunctionDef)} >= LAYOUT_METHODS
        ]
        assert len(layouts) == 1, f"{path.name} should define one layout class"
        # No layout counts tokens or writes a heading itself: costs come from LineCosts, the
        # text and its count from the pipeline.
        calls = [
            n.func.attr
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        ]
        assert "count" not in calls, path.name
        headings = [
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("#")
        ]
        assert headings == [], path.name


def test_the_context_headings_are_defined_once() -> None:
    defined = [
        f"{path.relative_to(SERVER)}:{node.lineno}"
        for path in modules(SERVER)
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and node.value.value.startswith("# ")
    ]
    assert defined and all(d.startswith("retrieval/pipeline.py:") for d in defined), defined


def test_no_package_reaches_into_another_ones_private_names() -> None:
    found = []
    for path in modules(SERVER):
        package = path.relative_to(SERVER).parts[0]
        for line, name in imported(path):
            other = ours(name)
            private = any(part.startswith("_") for part in name.split(".")[2:])
            if other not in (None, package) and private and not name.endswith("__init__"):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert found == []


def test_only_transport_imports_grpc() -> None:
    # The inspector is a web front whose one way to the data is a gRPC client of the
    # service's own ContextService, so that every read is admitted as a client's would be.
    fronts = ("transport", "cli", "inspector")
    others = [p for p in modules(SERVER) if p.relative_to(SERVER).parts[0] not in fronts]
    assert violations(others, ("grpc", "grpc_health", "grpc_reflection")) == []
    # ...and the transport really is where it happens.
    assert violations(modules(SERVER / "transport"), ("grpc",))


def test_the_inspector_reads_through_the_service_only() -> None:
    # Its pages read through gRPC calls to the server's own ContextService (see above); of the
    # service's parts it uses the keys (who signed in), the listing of conversations, the
    # address rules and the settings, never the engine, retrieval, a model or a store. The
    # active context's rules (llm_context) replay a conversation's usage as it was counted.
    found = {f: r for f, r in reached("inspector").items() if r}
    allowed = {"access", "conversations", "domain", "exposure", "ports", "settings"}
    allowed |= {"tls_files", "transport", "llm_context"}
    assert {p for r in found.values() for p in r} <= allowed
    assert (
        violations(
            modules(SERVER / "inspector"),
            ("contextwm.conversations.engine", "contextwm.adapters", "sqlite3", "faiss", "torch"),
        )
        == []
    )


def test_the_mcp_server_is_a_client_of_the_service_only() -> None:
    # `contextwm mcp` runs beside a coding agent and talks to contextwm over gRPC through the
    # client: none of the service's parts, its model, its index or its storage, and no grpc
    # of its own. The CLI reaches it through one module, which imports it when it runs.
    assert len(modules(SERVER / "mcp_server")) >= 4
    found = {f: r for f, r in reached("mcp_server").items() if r}
    assert found == {}
    forbidden = ("grpc", "torch", "faiss", "numpy", "sentence_transformers", "sqlite3")
    assert violations(modules(SERVER / "mcp_server"), forbidden) == []
    assert violations(modules(SERVER / "mcp_server"), ("contextwm_client",))
    others = [p for p in modules(SERVER) if p.relative_to(SERVER).parts[0] != "mcp_server"]
    importers = {str(p.relative_to(ROOT)) for p in others if violations([p], ("mcp",))}
    importers |= {
        str(p.relative_to(ROOT)) for p in others if violations([p], ("contextwm.mcp_server",))
    }
    assert importers == {"server/contextwm/cli/mcp_command.py"}


# The store is a set of small role ports (ports/*_store.py, ports/store_lifecycle.py): each
# feature names the roles it calls, so that another backend or a fake implements only those.
# The whole of it, ports/store.py, is named only by those listed here.
WHOLE_STORE = "contextwm.ports.store"
WHOLE_STORE_USERS = {
    # The composition root opens the store the settings name; the engine holds it, and its
    # parts and the features take their slices of it.
    "server/contextwm/app.py",
    "server/contextwm/conversations/engine.py",
    # The adapters, where mypy proves that each is the whole of it.
    "server/contextwm/adapters/sqlite/store.py",
    "server/contextwm/adapters/postgres/store.py",
    # This test, which reads the roles off it, and the store tests, which test all of it.
    "tests/unit/test_architecture.py",
    "tests/stores.py",
}


def test_only_the_composition_root_the_engine_and_the_adapters_name_the_whole_store() -> None:
    files = [*modules(SERVER), *modules(ROOT / "scripts"), *modules(ROOT / "tests")]
    users = {str(p.relative_to(ROOT)) for p in files if violations([p], (WHOLE_STORE,))}
    assert users == WHOLE_STORE_USERS


def public_methods(cls: type) -> set[str]:
    """The public methods a class defines itself."""
    return {n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")}


@pytest.mark.parametrize("adapter", ["sqlite", "postgres"])
def test_every_method_of_each_store_belongs_to_one_role(adapter: str) -> None:
    from contextwm.adapters.postgres.store import PostgresStore
    from contextwm.adapters.sqlite import SqliteStore
    from contextwm.ports.store import Store

    whole = SqliteStore if adapter == "sqlite" else PostgresStore

    roles = [base for base in Store.__bases__ if base is not Protocol]
    assert len(roles) >= 10
    owners: dict[str, list[str]] = {}
    for role in roles:
        for name in public_methods(role):
            owners.setdefault(name, []).append(role.__name__)
    assert {name: found for name, found in owners.items() if len(found) > 1} == {}
    # A new public method of the store needs a role; a role's method, an implementation.
    public = {n for n in dir(whole) if not n.startswith("_")}
    assert public - owners.keys() == set()
    # Each table group (Database included) declares one role and implements all of it, so
    # the roles mirror the adapter's classes one to one.
    tables = [c for c in whole.__mro__[1:] if c.__module__.startswith("contextwm.adapters")]
    declared = {c: [r for r in c.__bases__ if r in roles] for c in tables}
    assert {c.__name__: len(r) for c, r in declared.items() if len(r) != 1} == {}
    assert sorted(r[0].__name__ for r in declared.values()) == sorted(r.__name__ for r in roles)
    for table, (role,) in declared.items():
        assert public_methods(table) == public_methods(role), table.__name__


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
        "from contextwm.adapters.sqlite import SqliteStore\n"
    )
    names = [name for _, name in imported(probe)]
    assert "grpc.aio" in names
    assert "contextwm.transport" in names
    assert "contextwm.adapters.sqlite" in names
    assert not any(matches(n, "grpc") for n in ["grpcio_tools", "os"])
    # A relative import inside the client's generated package resolves to the client.
    for stub in (GENERATED / "contextwm_pb2_grpc.py", GENERATED / "contextwm_pb2_grpc.pyi"):
        assert any(n.startswith("contextwm_client.v1.") for _, n in imported(stub))
