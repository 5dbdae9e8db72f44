"""The asyncio client is generated from the sync one: no drift, and the same methods."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import inspect
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from contextwm_client import AsyncClient, Client

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gen_async_client"
COMMITTED = ROOT / "client" / "contextwm_client" / "_aio.py"
# Methods that return at once in both clients (watch returns a stream to iterate).
NOT_COROUTINES = {"watch"}


def load_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("gen_async_client", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    # Registered while it runs: its dataclass looks its own module up.
    sys.modules[loader.name] = module
    try:
        loader.exec_module(module)
    finally:
        del sys.modules[loader.name]
    return module


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(cls).items()
        if callable(member) and not name.startswith("_")
    }


def test_committed_async_client_is_what_the_script_writes(tmp_path: Path) -> None:
    out = tmp_path / "_aio.py"
    python = ROOT / ".venv" / "bin" / "python"
    result = subprocess.run(
        [str(python if python.exists() else sys.executable), str(SCRIPT), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == COMMITTED.read_bytes(), (
        "_aio.py is stale or edited by hand: run scripts/gen_async_client"
    )


def test_every_public_method_has_an_async_twin_with_the_same_parameters() -> None:
    sync, aio = public_methods(Client), public_methods(AsyncClient)
    assert len(sync) >= 25  # guards against a vacuous pass
    assert sorted(aio) == sorted(sync)
    for name, signature in sync.items():
        twin = aio[name]
        # Names, kinds, defaults and annotations (strings: the modules postpone them).
        expected = [
            (p.name, p.kind, p.default, p.annotation) for p in signature.parameters.values()
        ]
        actual = [(p.name, p.kind, p.default, p.annotation) for p in twin.parameters.values()]
        assert actual == expected, name
        # The return differs only as a coroutine's, an async iterator's or generator's (which
        # has no return type), or the async stream's.
        returned = re.sub(
            r"^AsyncGenerator\[(.+), None\]$", r"Generator[\1, None, None]", twin.return_annotation
        )
        assert returned.replace("AsyncIterator", "Iterator").replace(
            "AsyncEventStream", "EventStream"
        ) == str(signature.return_annotation), name


@pytest.mark.parametrize("name", sorted(public_methods(Client)))
def test_async_methods_are_coroutines_or_async_generators(name: str) -> None:
    sync, aio = getattr(Client, name), getattr(AsyncClient, name)
    if name in NOT_COROUTINES:
        assert not inspect.iscoroutinefunction(aio)
    elif inspect.isgeneratorfunction(sync):
        assert inspect.isasyncgenfunction(aio)
    else:
        assert inspect.iscoroutinefunction(aio)


def test_async_context_manager_and_close() -> None:
    assert inspect.iscoroutinefunction(AsyncClient.__aenter__)
    assert inspect.iscoroutinefunction(AsyncClient.__aexit__)
    assert not hasattr(AsyncClient, "__enter__")


def test_a_rule_that_stops_matching_fails_the_generation() -> None:
    script = load_script()
    source = script.SOURCE.read_text()
    assert script.unasync(source).startswith(script.HEADER)
    # The sync client without a context manager: the __enter__ rule no longer applies.
    edited = source.replace("__enter__", "enter_")
    with pytest.raises(SystemExit, match="__enter__"):
        script.unasync(edited)
